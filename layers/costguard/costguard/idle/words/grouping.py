"""One message per recipient: several machines' notices gathered, a part per machine. Pure.

A warning, a stop or a withdrawn warning is a live part (slack/live.py): alone it is a message of its own;
among others, one line each under one header that counts them and their cost, the owner addressed once
above them (or, in the alerts channel, where machines whose owners Slack cannot reach go, each line naming
its owner and the footer saying why they are there). The sweep's reports to the alerts channel (dry-run,
notify-only) are a line each too. Either way, Block Kit's 50 blocks are kept by splitting the parts, in
order, across as few messages as needed. Each part's first block carries its notice's block id (its
marker): the message found in Slack's history proves that part's delivery, and a click or a later event
changes that part only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from costguard.idle.words.messages import JUDGED, TAGS
from costguard.slack.blocks import MAX_BLOCKS, Block, Message, Mrkdwn, context, header, safe, section
from costguard.slack.buttons import KEEPS, Button, as_menu
from costguard.slack.live import Live, Phase
from costguard.slack.live import Part as LivePart

# The kinds of the sweep's reports to the alerts channel (state/outbox.py names them; this module stays pure).
WOULD_WARN, NOT_STOPPED = "would-warn", "not-stopped"
REPORTS = (WOULD_WARN, NOT_STOPPED)
JUDGED_AND_TAGS = f"{JUDGED} {TAGS}"
LEADS = {  # what the owner is told above their machines' lines (a warning's, while one of them is still idle)
    "warn": "costguard stops each one still idle at the time shown unless you keep it.",
    "stop": "costguard stopped these after their warning.",
    "cancel": "these are at work after all: not stopped.",
}
# A warning none of whose machines can be kept (costguard stops none: notify-only mode, or no GPU use to judge by)
NO_STOP_LEAD = "costguard stops none of these: each line says why."
KEEPING = {*KEEPS, Button.KEEP_WHILE_BUSY, Button.KEEP_FOR_RUNS}
LEAD_WHILE = {"warn": Phase.IDLE}  # a stop's and a cancel's leads tell what happened: true after it


@dataclass(frozen=True)
class Part:
    """One machine's notice: its live part (a warning, a stop, a withdrawn warning), or a report's own message;
    the block id that marks it, its kind, and its owner as the message addresses them (Mrkdwn)."""

    message: Message
    marker: str
    kind: str
    live: LivePart | None = None
    who: str = ""


@dataclass(frozen=True)
class Gathered:
    """One message to send, the positions of the parts it carries, and what it is live (None: a report)."""

    message: Message
    carried: list[int]
    live: Live | None = None


def gather(parts: Sequence[Part], *, channel: bool = False, why: str = "") -> list[Gathered]:
    """The messages that carry these parts, in order. One part is its own message; several are gathered
    (`channel`: for the alerts channel, `why` saying why they are there)."""
    if all(p.live is not None for p in parts):
        return _live(parts, channel=channel, why=why)
    if len(parts) == 1:
        return [Gathered(parts[0].message.marked(parts[0].marker), [0])]
    footer = [context(why)] if channel and why else []
    runs = _runs(len(parts), MAX_BLOCKS - 1 - len(footer))
    out = []
    for n, run in enumerate(runs, 1):
        numbered = f" ({n}/{len(runs)})" if len(runs) > 1 else ""
        blocks: list[Block] = [header(_title(parts, run) + numbered), *(_line(parts[k]) for k in run), *footer]
        out.append(Gathered(Message(_text(parts, run) + numbered, tuple(blocks)), run))
    return out


def _live(parts: Sequence[Part], *, channel: bool, why: str) -> list[Gathered]:
    marked = [replace(p.live, marker=p.marker) for p in parts if p.live is not None]
    if len(parts) == 1:
        single = Live((marked[0],))
        return [Gathered(single.message(), [0], single)]
    kind, who = parts[0].kind, Mrkdwn(parts[0].who)  # made by slack.blocks.person
    # The lead and the footer promise a stop and tell how to keep from it only where a line offers a keep.
    keeps = kind == "warn" and any(b.get("action_id") in KEEPING for p in marked for b in p.buttons)
    said = NO_STOP_LEAD if kind == "warn" and not keeps else LEADS.get(kind, "")
    lead = "" if channel or not who else who + Mrkdwn(f", {said}")
    footer = safe(why) if channel else Mrkdwn(JUDGED_AND_TAGS if keeps else JUDGED if kind == "warn" else "")
    room = MAX_BLOCKS - 1 - bool(lead) - bool(footer)
    runs = _runs(len(parts), room)
    out = []
    for n, run in enumerate(runs, 1):
        numbered = f" ({n}/{len(runs)})" if len(runs) > 1 else ""
        while_ = str(LEAD_WHILE.get(kind, ""))
        message = Live(tuple(marked[k] for k in run), lead=lead, footer=footer, suffix=numbered, lead_while=while_)
        out.append(Gathered(message.message(), run, message))
    return out


def _runs(count: int, room: int) -> list[list[int]]:
    """Positions split, in order, into runs of at most `room` (a block each)."""
    return [list(range(start, min(count, start + room))) for start in range(0, count, room)] or [[]]


def _line(part: Part) -> Block:
    """A report among others: what its message says first, and its buttons (one as it is, several in a menu)."""
    texts = []
    for said in part.message.blocks:
        if said.get("type") != "section":
            continue
        if "text" in said:
            texts.append(said["text"]["text"])
        texts += [f["text"].replace("*\n", "* ") for f in said.get("fields", [])]
    # Taken from blocks costguard built (escaped there): markup as it is; the section cuts it safely.
    block: dict[str, Any] = {
        **section(Mrkdwn(" · ".join(t.replace("\n", " ") for t in texts))),
        "block_id": part.marker,
    }
    buttons = [e for b in part.message.blocks if b.get("type") == "actions" for e in b.get("elements", [])]
    if len(buttons) == 1:
        block["accessory"] = dict(buttons[0])
    elif buttons:
        block["accessory"] = as_menu([b for b in buttons if not b.get("confirm")])
    return block


def _title(parts: Sequence[Part], run: Sequence[int]) -> str:
    kinds = {parts[k].kind for k in run}
    count = len(run)
    machines = f"{count} idle GPU machine{'s' if count != 1 else ''}"
    if kinds == {WOULD_WARN}:
        return f"[dry-run] {machines} costguard would warn about"
    if kinds == {NOT_STOPPED}:
        return f"{machines} still idle after the grace period, not stopped"
    return f"{machines}: what costguard would do"


def _text(parts: Sequence[Part], run: Sequence[int]) -> Mrkdwn:
    """The notification: the title, and the first machines' own words (escaped in their messages)."""
    first = Mrkdwn("; ".join(parts[k].message.text for k in run[:3]))
    more = f"; and {len(run) - 3} more" if len(run) > 3 else ""
    return safe(_title(parts, run) + ": ") + first + more
