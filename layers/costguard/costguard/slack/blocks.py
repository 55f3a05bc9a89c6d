"""Block Kit builders. Pure functions returning plain dicts; Slack's size limits enforced here.

This is where text becomes Slack mrkdwn, and the one place user text is escaped. A plain `str` that
reaches a builder (or a Message's `text`) is taken as text, never as markup: its `&`, `<` and `>` are
escaped, so a tag value of `<!channel>` shows as written and pings nobody. Only a `Mrkdwn`, which
costguard's own templates make with `mrkdwn()`, `mention()`, `here()` and `link()`, passes as markup.
Forgetting to mark costguard's own markup shows it escaped: a visible slip, never an injection.

Limits (Slack's): 50 blocks a message, 3,000 characters in a section's text, 10 fields of 2,000
characters, 150 characters in a header, 75 in a button's label; a user value is cut at 300. Slack refuses
a text with no character at all ("must be more than 0 characters"): an empty one shows as EMPTY.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from costguard.core.formatting import local_text, zone_of

Block = Mapping[str, Any]

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_FIELD = 2000
MAX_FIELDS = 10
MAX_HEADER = 150
MAX_BUTTON = 75
MAX_VALUE = 300  # one user value (a tag is at most 256)
MAX_TEXT = 3000  # a message's top-level text: the notification, kept short
MAX_BLOCK_ID = 255
EMPTY = "–"  # what an empty text shows (a value AWS or a user left blank): Slack refuses an empty text


class Mrkdwn(str):
    """Markup costguard wrote: passes into a message as it is. Make one with the functions below."""

    __slots__ = ()

    def __add__(self, other: str) -> Mrkdwn:
        return Mrkdwn(str.__add__(self, safe(other)))

    def __radd__(self, other: str) -> Mrkdwn:
        return Mrkdwn(str.__add__(safe(other), self))


NOTHING = Mrkdwn("")  # no markup: a default for an optional part of a sentence


def escape(text: str) -> str:
    """Slack's mrkdwn needs &, < and > escaped in user-supplied text (tag values, names)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe(text: str) -> Mrkdwn:
    """The choke point: costguard's own markup as it is, anything else escaped."""
    return text if isinstance(text, Mrkdwn) else Mrkdwn(escape(str(text)))


def mrkdwn(template: str, /, *args: object, **values: object) -> Mrkdwn:
    """`template` (costguard's, never a user's) with every value escaped and cut, unless a Mrkdwn."""
    return Mrkdwn(template.format(*(_value(a) for a in args), **{k: _value(v) for k, v in values.items()}))


def join(separator: str, parts: Iterable[str]) -> Mrkdwn:
    """Parts joined, each escaped unless a Mrkdwn."""
    return Mrkdwn(safe(separator).join(safe(p) for p in parts))


_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_URL = re.compile(r"^https://[A-Za-z0-9.-]+(/[^\s<>|]*)?\Z")  # \Z: "$" would let a trailing newline in


def mention(user_id: str) -> Mrkdwn:
    """A mention of a Slack user by id (from a verified click or a lookup); anything else as text."""
    return Mrkdwn(f"<@{user_id}>") if _USER_ID.match(user_id) else safe(user_id)


ROOT = "root"  # the owner of a machine the account's root user launched: nobody's Slack identity


def person(owner: str, user_id: str | None = None) -> Mrkdwn:
    """Who an owner is in a message: their Slack mention when Slack knows them; else their name (an email's
    part before the @, never the address); "" for nobody, and for the account's root user."""
    if user_id and _USER_ID.match(user_id):
        return mention(user_id)
    name = owner.strip().split("@", 1)[0]
    return Mrkdwn("") if name in ("", ROOT) else safe(_cut(name, 64))


def here() -> Mrkdwn:
    return Mrkdwn("<!here>")


def link(url: str, label: str) -> Mrkdwn:
    """A link costguard made (a console URL); a URL that is not plain https shows as text."""
    if not _URL.match(url):
        return safe(f"{label} ({url})")
    return Mrkdwn(f"<{url}|{safe(_cut(label, MAX_VALUE))}>")


# How costguard shows a time: "today at 12:50", "tomorrow at 09:00", "Nov 23, 2026 at 09:00", each reader in their
# own zone and their own 12/24-hour clock (Slack's date formatting, docs.slack.dev "Formatting text for app
# surfaces"). CLOCK: the time alone, for a time near the message's own ("a GPU was in use at 12:50").
DAY_AND_TIME = "{date_short_pretty} at {time}"
CLOCK = "{time}"
DAY = "{date_short_pretty}"  # a day alone ("yesterday", "Nov 13, 2026"): an endpoint's last invocation, a plan's end


def when(moment: datetime, zone: str | tzinfo | None = "UTC", *, style: str = DAY_AND_TIME) -> Mrkdwn:
    """The one way a time reaches a message: Slack shows `moment` in each reader's own zone. Where it cannot
    (a notification, an old client) it shows the fallback, `moment` in `zone`, naming the zone: a day alone with
    its year ("Sat 21 Nov 2026 UTC"), as Slack shows one."""
    said = local_text(moment, zone, clock=style == CLOCK)
    if style == DAY:
        local = moment.astimezone(zone_of(zone))
        said = f"{local:%a %d %b %Y} {local.tzname() or zone_of(zone).key}"
    return Mrkdwn(f"<!date^{int(moment.timestamp())}^{style}|{escape(said).replace('|', '/')}>")


def on_day(day: date, zone: str | tzinfo | None = "UTC") -> Mrkdwn:
    """A day with no time of day (a bill's day, a plan's last day, in `zone`), shown as each reader's: the
    day's noon stands for it, the same day wherever a reader is up to 12 hours away."""
    return when(datetime.combine(day, time(12), zone_of(zone)), zone, style=DAY)


_WEEKDAY = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CLOCK_TIMES = re.compile(
    r"(?P<code>`[^`]*`)"  # code (a tag's value as written) is left as it is
    rf"|\b(?:(?P<weekday>{_WEEKDAY}) (?:(?P<day>\d{{2}}) (?P<month>{'|'.join(_MONTHS)}) )?)?"
    r"(?P<h1>\d{2}):(?P<m1>\d{2})(?:(?P<joint> and |-)(?P<h2>\d{2}):(?P<m2>\d{2}))?"
    r" (?P<zone>UTC|[A-Z][A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)(?![\w/])"
    rf"|\b(?:{_WEEKDAY}) (?P<alone>\d{{2}}) (?P<its_month>{'|'.join(_MONTHS)})\b(?! \d)"
)


def times_in(text: str, now: datetime, *, reader: str | tzinfo | None = None) -> Mrkdwn:
    """Text costguard's rules wrote (a reason, what the machine said, a learned pattern), escaped, each of its
    times shown in the reader's own: a clock time ("12:50 UTC", "12:00 and 12:50 UTC", "08:00-10:00 UTC",
    "09:00 Europe/Paris"), the nearest such time to `now` on the clock of the zone it names; with its day ("Wed
    12:50 UTC", "Wed 04 Nov 12:50 UTC"), the nearest such day's; a day alone ("Wed 04 Nov", a UTC day, as the
    rules write one), the nearest such day. Code (`daily 08:00-10:00 UTC`, a value as it is written) is left as
    it is. `reader`: the zone of every fallback, where the sentence has other times in it (one zone a sentence);
    by default the zone each time names."""
    escaped = escape(text)

    def nearest(found: re.Match[str], hour: str, minute: str, zone: tzinfo) -> Mrkdwn:
        base = now.astimezone(zone).replace(hour=int(hour), minute=int(minute), second=0, microsecond=0)
        if found["month"]:
            near = (
                base.replace(year=base.year + y, month=_MONTHS.index(found["month"]) + 1, day=1) for y in (-1, 0, 1)
            )
            days = [b + timedelta(days=int(found["day"]) - 1) for b in near]
        elif found["weekday"]:
            days = [
                base + timedelta(days=d)
                for d in range(-7, 8)
                if (base + timedelta(days=d)).strftime("%a") == found["weekday"]
            ]
        else:
            days = [base + timedelta(days=d) for d in (-1, 0, 1)]
        moment = min(days, key=lambda t: abs(t - now))
        return when(moment, zone if reader is None else reader, style=DAY_AND_TIME if found["weekday"] else CLOCK)

    def shown(found: re.Match[str]) -> str:
        if found["code"]:
            return found[0]
        if found["alone"]:
            return _day_alone(found, now) or found[0]
        zone = zone_of(found["zone"], default="")
        hours = [(found["h1"], found["m1"]), *([(found["h2"], found["m2"])] if found["h2"] else [])]
        if (zone.key != found["zone"] and found["zone"] != "UTC") or any(int(h) > 23 or int(m) > 59 for h, m in hours):
            return found[0]  # not a zone, or not a clock: left as written
        return Mrkdwn(str(found["joint"] or "").join(nearest(found, h, m, zone) for h, m in hours))

    return Mrkdwn(_CLOCK_TIMES.sub(shown, escaped))


def _day_alone(found: re.Match[str], now: datetime) -> Mrkdwn | None:
    month = _MONTHS.index(found["its_month"]) + 1
    days = []
    for year in (now.year - 1, now.year, now.year + 1):
        try:
            days.append(date(year, month, int(found["alone"])))
        except ValueError:  # 29 Feb of a year without one
            continue
    if not days:
        return None
    return on_day(min(days, key=lambda d: abs(d - now.date())))


def _value(value: object) -> Mrkdwn:
    if isinstance(value, Mrkdwn):
        return value
    return safe(_cut(str(value), MAX_VALUE))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Message:
    """A Slack message: `text` is the notification and screen-reader fallback, `blocks` the layout."""

    text: str
    blocks: tuple[Block, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if len(self.blocks) > MAX_BLOCKS:
            left_out = len(self.blocks) - MAX_BLOCKS + 1
            kept = (*self.blocks[: MAX_BLOCKS - 1], context(f"…{left_out} more blocks left out"))
            object.__setattr__(self, "blocks", kept)
        object.__setattr__(self, "text", _clip(safe(self.text), MAX_TEXT))

    def slack_blocks(self) -> list[dict[str, Any]]:
        """The blocks as the mutable dicts slack-sdk's signatures ask for."""
        return [dict(block) for block in self.blocks]

    def marked(self, block_id: str) -> Message:
        """The message, its first block carrying `block_id`: found in the channel's history, it proves that
        a post whose answer was lost did go out."""
        if not self.blocks or not block_id:
            return self
        return Message(self.text, ({**self.blocks[0], "block_id": block_id[:MAX_BLOCK_ID]}, *self.blocks[1:]))

    def response(self, **options: Any) -> dict[str, Any]:
        """The body of an answer through a response_url (`replace_original`, `response_type`)."""
        body: dict[str, Any] = {"text": self.text, **options}
        if self.blocks:
            body["blocks"] = self.slack_blocks()
        return body


_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


def _clip(text: str, limit: int) -> Mrkdwn:
    """Escaped text cut to a limit, without leaving half an entity (`&am`) at the cut."""
    if len(text) <= limit:
        return Mrkdwn(text)
    return Mrkdwn(_PARTIAL_ENTITY.sub("", text[: limit - 1]) + "…")


def header(text: str) -> Block:
    """Plain text (Slack parses no mention or link in it), so nothing is escaped; only cut."""
    return {
        "type": "header",
        "text": {"type": "plain_text", "text": _cut(str(text) or EMPTY, MAX_HEADER), "emoji": True},
    }


def section(text: str, *, fields: Sequence[str] = (), accessory: Block | None = None) -> Block:
    block: dict[str, Any] = {"type": "section", "text": _md(text, MAX_SECTION)}
    if fields:
        block["fields"] = [_md(f, MAX_FIELD) for f in fields[:MAX_FIELDS]]
    if accessory is not None:
        block["accessory"] = dict(accessory)
    return block


def fields_section(fields: Sequence[str]) -> Block:
    return {"type": "section", "fields": [_md(f, MAX_FIELD) for f in fields[:MAX_FIELDS]]}


def context(*texts: str) -> Block:
    return {"type": "context", "elements": [_md(t, MAX_SECTION) for t in texts]}


def _md(text: str, limit: int) -> dict[str, str]:
    return {"type": "mrkdwn", "text": _clip(safe(text), limit) or EMPTY}


def divider() -> Block:
    return {"type": "divider"}


def button(text: str, action_id: str, value: str, *, style: str = "") -> Block:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": _cut(str(text) or EMPTY, MAX_BUTTON), "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style in ("primary", "danger"):
        element["style"] = style
    return element


def actions(block_id: str, elements: Iterable[Block]) -> Block:
    return {"type": "actions", "block_id": block_id, "elements": list(elements)}


def bullet_list(lines: Sequence[str], *, limit: int = MAX_SECTION) -> Mrkdwn:
    """Lines (each escaped unless a Mrkdwn) as a bulleted list that fits one section, saying how many
    were left out."""
    reserve = 32  # room for the "…and N more" line
    out: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        item = _clip("• " + safe(line), limit - reserve)
        if used + len(item) + 1 > limit - reserve:
            out.append(f"…and {len(lines) - index} more")
            break
        out.append(item)
        used += len(item) + 1
    return Mrkdwn("\n".join(out))
