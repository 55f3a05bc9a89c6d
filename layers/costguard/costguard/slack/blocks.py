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
from typing import Any

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


def here() -> Mrkdwn:
    return Mrkdwn("<!here>")


def link(url: str, label: str) -> Mrkdwn:
    """A link costguard made (a console URL); a URL that is not plain https shows as text."""
    if not _URL.match(url):
        return safe(f"{label} ({url})")
    return Mrkdwn(f"<{url}|{safe(_cut(label, MAX_VALUE))}>")


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
