"""A message that is the current state of the machines it tells about. Pure: parts in, Block Kit out.

GitHub's Slack app keeps one message per pull request and edits it as the pull request changes; PagerDuty's
status line and buttons follow the incident. costguard's warnings do the same. Each machine (or SageMaker
resource) is a part: what it is, fixed when the message is posted (`sentence` alone, `line` among others),
and what is true now (its phase, its status line, the buttons that still mean something). A click or a
later event changes one part; the message is drawn again from its parts, header included, and every
other part stays as it was.

Alone, a part is a header (its phase and its cost a day), its sentence and status, its buttons and one
context line (at most four buttons in a row, the rest in its overflow menu). Among several, each part is one
line with its status under it and its buttons in a menu (its Stop now too), under one header that counts them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from costguard.slack.blocks import (
    NOTHING,
    Block,
    Message,
    Mrkdwn,
    actions,
    context,
    header,
    safe,
    section,
    when,
)
from costguard.slack.buttons import laid_out, line_accessory


class Phase(StrEnum):
    IDLE = "idle"  # idle: costguard acts at its time unless someone keeps it (or only says so)
    KEPT = "kept"
    STOPPED = "stopped"  # stopped, hibernated or deleted (the part's `word` says which)
    RUNNING = "running"  # started again, recreated, or at work after all
    GONE = "gone"  # terminated, deleted by someone, or no longer costguard's to govern


@dataclass(frozen=True)
class Part:
    """One machine's part of a live message. `word`: what its header calls the phase ("Kept", "Stopped",
    "Started again"); empty while it is idle. `daily`: what it costs a day running (a stop saves as much)."""

    key: str  # an instance id, or a SageMaker resource's kind/name
    marker: str  # the block id of its first block: its notice's, found in Slack's history
    noun: str  # "GPU machine", "SageMaker notebook instance"
    daily: float | None
    sentence: str  # Mrkdwn, alone: who and what, and how long it did nothing
    line: str  # Mrkdwn, among others: the same in one line, cost first
    status: str  # Mrkdwn: what is true now
    phase: Phase = Phase.IDLE
    word: str = ""
    buttons: tuple[Block, ...] = ()
    detail: str = ""  # Mrkdwn: the one context line a part has alone (thresholds, tags, caveats)
    # Once kept, at work, started again or gone, the sentence and the line without the idleness they told of
    # (Mrkdwn; "" keeps them as they were): a message says only what is true now.
    settled_sentence: str = ""
    settled_line: str = ""
    # Mrkdwn, the status's last sentence: what costguard promises to do next (a start before its runs), known apart
    # so that the choice that withdraws it ("Skip the planned start") takes its words away too (unpromised).
    promise: str = ""

    def now(self, status: str, phase: Phase, word: str, buttons: Sequence[Block] = (), promise: str = "") -> Part:
        """The part as it is after something happened to it: its status, phase, header word, buttons, and what
        costguard promises next (none unless said: a promise made before the change no longer holds)."""
        return replace(self, status=status, phase=phase, word=word, buttons=tuple(buttons), promise=promise)

    def unpromised(self) -> Part:
        """The part without its promise: the status's last sentence gone with it."""
        if not self.promise:
            return self
        status = str(self.status)
        kept = status[: -len(self.promise)].rstrip() if status.endswith(self.promise) else status
        return replace(self, status=Mrkdwn(kept), promise="")


Change = Callable[[Part], "Part | None"]


@dataclass(frozen=True)
class Live:
    """A live message: its parts, and (among several) the line that leads them and the one that ends them."""

    parts: tuple[Part, ...]
    lead: str = ""  # Mrkdwn: the owner addressed once, above the lines
    footer: str = ""  # Mrkdwn: one context line under the lines
    extra: tuple[Block, ...] = field(default=())  # blocks after everything (a fallback's "sent here because")
    suffix: str = ""  # after the header: " (1/2)" for a message split under Block Kit's limit
    lead_while: str = ""  # a Phase: the lead is shown while some part is in it ("": always)

    def part(self, key: str) -> Part | None:
        return next((p for p in self.parts if p.key == key), None)

    def changed(self, key: str, change: Change) -> Live | None:
        """The message with one part changed; itself when the part says it already (a retry); None when the part
        is not in it, or the change does not apply to it."""
        found = self.part(key)
        if found is None:
            return None
        new = change(found)
        if new is None:
            return None
        if new == found:
            return self
        return replace(self, parts=tuple(new if p.key == key else p for p in self.parts))

    def message(self) -> Message:
        if len(self.parts) == 1:
            blocks = _alone(self.parts[0])
        else:
            blocks = [header(title(self.parts) + self.suffix)]
            if self.lead and (not self.lead_while or any(p.phase == self.lead_while for p in self.parts)):
                blocks.append(section(Mrkdwn(self.lead)))
            blocks += [_line(p) for p in self.parts]
            if self.footer:
                blocks.append(context(Mrkdwn(self.footer)))
        return Message(_text(self.parts), (*blocks, *self.extra))

    def to_json(self) -> str:
        return json.dumps(
            {
                "parts": [asdict(p) for p in self.parts],
                "lead": self.lead,
                "footer": self.footer,
                "extra": list(self.extra),
                "suffix": self.suffix,
                "lead_while": self.lead_while,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Live:
        data = json.loads(text)
        parts = tuple(_part(p) for p in data.get("parts") or [])
        extra = tuple(data.get("extra") or ())
        said = {k: str(data.get(k) or "") for k in ("lead", "footer", "suffix", "lead_while")}
        return cls(parts, extra=extra, **said)


def part_json(part: Part) -> str:
    return json.dumps(asdict(part), separators=(",", ":"))


def part_from_json(text: str) -> Part:
    return _part(json.loads(text))


def _part(data: Mapping[str, Any]) -> Part:
    values = dict(data)
    values["phase"] = Phase(values.get("phase") or Phase.IDLE)
    values["buttons"] = tuple(values.get("buttons") or ())
    return Part(**values)


def cost_a_day(daily: float | None) -> str:
    """ "$136/day" (cents only under $10: "$4.80/day"), or "cost unknown"."""
    if daily is None:
        return "cost unknown"
    return f"${daily:,.0f}/day" if abs(daily) >= 10 else f"${daily:,.2f}/day"


def title(parts: Sequence[Part]) -> str:
    """The header: what is true of the parts now, the number that matters first."""
    if len(parts) == 1:
        part = parts[0]
        if part.phase is Phase.GONE:
            return f"{part.word or 'Gone'}: {part.noun}"
        if not part.word:
            return f"Idle {part.noun} · {cost_a_day(part.daily)}"
        saves = "saves " if part.phase is Phase.STOPPED else ""
        return f"{part.word}: {part.noun} · {saves}{cost_a_day(part.daily)}"
    noun = parts[0].noun
    idle = [p for p in parts if not p.word]
    order = list(Phase)
    said_in_order = sorted((p for p in parts if p.word), key=lambda p: order.index(p.phase))
    others = Counter(p.word.lower() for p in said_in_order)  # kept, then stopped, then running, then gone
    total = _sum(idle)
    if not idle and len(others) == 1:
        [(word, count)] = others.items()
        stopped = [p for p in parts if p.phase is Phase.STOPPED]
        money = f" · saves {cost_a_day(_sum(stopped))}" if len(stopped) == len(parts) else ""
        return f"{count} {_plural(noun, count)} {word}{money}"
    said = ", ".join(f"{count} {word}" for word, count in others.items())
    if not idle:
        return f"{len(parts)} {_plural(noun, len(parts))}: {said}"
    head = f"{len(idle)} idle {_plural(noun, len(idle))} · {cost_a_day(total)}"
    return f"{head} · {said}" if said else head


def _sum(parts: Sequence[Part]) -> float | None:
    known = [p.daily for p in parts if p.daily is not None]
    return sum(known) if known else None


def _plural(noun: str, count: int) -> str:
    return noun if count == 1 else f"{noun}s"


def _alone(part: Part) -> list[Block]:
    blocks: list[Block] = [
        {**header(title([part])), **_marked(part)},
        section(Mrkdwn(_sentence(part)) + Mrkdwn("\n") + Mrkdwn(part.status)),
    ]
    if part.buttons:
        blocks.append(actions(f"costguard:{part.key}"[:255], laid_out(part.buttons)))
    if part.detail:
        blocks.append(context(Mrkdwn(part.detail)))
    return blocks


def _marked(part: Part) -> dict[str, str]:
    """The part's marker as its first block's id; none where it has none (Slack refuses an empty block id)."""
    return {"block_id": part.marker[:255]} if part.marker else {}


def _line(part: Part) -> Block:
    """A part among others: its line, its status under it, its buttons as one button or a menu."""
    line = part.settled_line if part.phase in SETTLED and part.settled_line else part.line
    block: dict[str, Any] = {**section(Mrkdwn(line) + Mrkdwn("\n") + Mrkdwn(part.status)), **_marked(part)}
    if (accessory := line_accessory(part.buttons)) is not None:  # one button, or a menu with Why? last
        block["accessory"] = accessory
    return block


def _text(parts: Sequence[Part]) -> Mrkdwn:
    """The notification: the header, and alone, who and what (in its own words, escaped there)."""
    head = safe(title(parts))
    said = _sentence(parts[0]) if len(parts) == 1 else ""
    return head + Mrkdwn(". ") + Mrkdwn(said) if said else head


SETTLED = (Phase.KEPT, Phase.RUNNING, Phase.GONE)  # no longer idle: its idleness is no longer news (a stop keeps it)


def _sentence(part: Part) -> str:
    """What a part says alone: who and what, and how long it did nothing while that is what matters."""
    return part.settled_sentence if part.phase in SETTLED and part.settled_sentence else part.sentence


# What a part says once something happened to it: one voice for the sweep's events and the clicks alike. `by`:
# who did it (a mention, a name), "" for costguard; `zone`: the zone a time's fallback text is written in.


def settled(change: Change, part: Part) -> Part:
    """The part after a change that always makes one (the statuses below)."""
    return change(part) or part


def kept(until: datetime | None, by: Mrkdwn, zone: str, *, how: str = "") -> Change:
    """Kept until a time (None: while it works), by someone; `how`, when no button did it ("tag
    `costguard:keep-until`")."""
    who = Mrkdwn(" by ") + by if by else Mrkdwn("")
    note = Mrkdwn(f" ({how})") if how else Mrkdwn("")  # costguard's own words
    if until is None:
        status = (
            Mrkdwn("Kept while it works") + who + note + Mrkdwn(": costguard looks again after a whole idle window.")
        )
    else:
        status = Mrkdwn("Kept until ") + when(until, zone) + who + note + Mrkdwn(".")
    return lambda part: part.now(status, Phase.KEPT, "Kept")


def exempt(why: str) -> Change:
    status = Mrkdwn("Exempt: costguard never stops it (") + safe(why) + Mrkdwn(").")
    return lambda part: part.now(status, Phase.KEPT, "Exempt")


def stopped(
    at: datetime,
    by: Mrkdwn | None,
    zone: str,
    *,
    word: str = "Stopped",
    note: Mrkdwn = NOTHING,
    buttons: Sequence[Block] = (),
    promise: Mrkdwn = NOTHING,
) -> Change:
    """Stopped (or hibernated, deleted) at a time, by someone ("": by costguard; None: not known, as when AWS
    tells of it); `note`, Mrkdwn: what follows (its disks kept); `buttons`: what undoes it; `promise`: the start
    costguard plans (Part.promise)."""
    who = NOTHING if by is None else Mrkdwn(" by ") + (by or Mrkdwn("costguard"))
    status = Mrkdwn(f"{word} ") + when(at, zone) + who + Mrkdwn(".")
    status += Mrkdwn(" ") + note if note else Mrkdwn("")
    status += Mrkdwn(" ") + promise if promise else Mrkdwn("")
    return lambda part: part.now(status, Phase.STOPPED, word, buttons, promise)


def running(at: datetime, by: Mrkdwn, zone: str, *, word: str = "Started again", note: Mrkdwn = NOTHING) -> Change:
    """Started again (or recreated) at a time; by someone, or "" when AWS told costguard of it."""
    status = Mrkdwn(f"{word} ") + when(at, zone) + (Mrkdwn(" by ") + by if by else NOTHING) + Mrkdwn(".")
    status += Mrkdwn(" ") + note if note else Mrkdwn("")
    return lambda part: part.now(status, Phase.RUNNING, word)


def at_work(why: Mrkdwn) -> Change:
    """Not stopped after all: the machine is at work (`why`, Mrkdwn: what showed it)."""
    status = (
        Mrkdwn("Not stopped: at work after all (")
        + Mrkdwn(why)
        + Mrkdwn("). costguard warns again only after a whole idle window.")
    )
    return lambda part: part.now(status, Phase.RUNNING, "At work")


def withdrawn(why: str) -> Change:
    """A warning costguard will not carry out now (its data has a gap, the machine is kept, at work, stopped...):
    said in the warning itself, so that no message promises a stop that will not happen. Only an idle part: what
    a click or an event said stays."""
    status = Mrkdwn("costguard will not stop it now: ") + safe(why) + Mrkdwn(". It warns again before any stop.")
    return lambda part: part.now(status, Phase.RUNNING, "Not stopped") if part.phase is Phase.IDLE else None


def gone(at: datetime | None, why: str, zone: str) -> Change:
    """No longer there to act on (terminated, deleted), or no longer costguard's: no button means anything."""
    since = Mrkdwn(" ") + when(at, zone) if at is not None else Mrkdwn("")
    status = Mrkdwn("Gone") + since + Mrkdwn(": ") + safe(why) + Mrkdwn(".")
    return lambda part: part.now(status, Phase.GONE, "Gone")


def without(action_id: str, note: Mrkdwn = NOTHING) -> Change:
    """One button gone from a part (its choice made), and a word more in its status (`note`, Mrkdwn)."""

    def change(part: Part) -> Part | None:
        buttons = tuple(b for b in part.buttons if b.get("action_id") != action_id)
        status = Mrkdwn(part.status) + (Mrkdwn(" ") + note if note else Mrkdwn(""))
        return replace(part, buttons=buttons, status=status)

    return change
