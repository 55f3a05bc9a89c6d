"""One message per recipient: several machines' notices gathered, a part per machine. Pure.

To an owner, each machine keeps its own blocks (its figures, its reason, its buttons), under one title,
with the how-to said once at the end. To the alerts channel, where the machines of every owner Slack
cannot reach go, each machine is one line with its actions in a menu, so a first sweep over a large
account is a few messages, not hundreds. Either way, Block Kit's 50 blocks are kept by splitting the
parts, in order, across as few messages as needed. Each part starts with its notice's block id (its
marker): the message found in Slack's history proves that part's delivery, and a click updates that
part only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from costguard.core import tags
from costguard.idle.words.messages import HOW_TO_KEEP, TITLE
from costguard.slack.blocks import (
    MAX_BLOCKS,
    Block,
    Message,
    Mrkdwn,
    context,
    divider,
    header,
    safe,
    section,
)
from costguard.slack.buttons import as_menu

# The kinds of the sweep's reports to the alerts channel (state/outbox.py names them; this module stays pure).
WOULD_WARN, NOT_STOPPED = "would-warn", "not-stopped"
REPORTS = (WOULD_WARN, NOT_STOPPED)

LINE_PARTS = 4  # a machine's line in the alerts channel: its subject and its first figures


@dataclass(frozen=True)
class Part:
    """One machine's notice: its own message, the block id that marks it, and its kind ("warn", "stop",
    "cancel")."""

    message: Message
    marker: str
    kind: str


def gather(parts: Sequence[Part], *, channel: bool = False, why: str = "") -> list[tuple[Message, list[int]]]:
    """The messages that carry these parts, in order, with the positions of the parts each carries. One
    part is its own message; several are gathered (`channel`: as lines, for the alerts channel, `why`
    saying why they are there)."""
    if len(parts) == 1:
        return [(parts[0].message.marked(parts[0].marker), [0])]
    bodies = [_line(p) if channel else _blocks(p) for p in parts]
    footer = _footer(parts, channel=channel, why=why)
    room = MAX_BLOCKS - 1 - len(footer)  # the title, the footer
    runs: list[list[int]] = [[]]
    used = 0
    for k, body in enumerate(bodies):
        size = len(body) + (0 if channel else 1)  # a divider between machines
        if runs[-1] and used + size > room:
            runs.append([])
            used = 0
        runs[-1].append(k)
        used += size
    out = []
    for n, run in enumerate(runs, 1):
        numbered = f" ({n}/{len(runs)})" if len(runs) > 1 else ""
        blocks: list[Block] = [header(_title(parts, run, channel) + numbered)]
        for k in run:
            if blocks[-1].get("type") != "header" and not channel:
                blocks.append(divider())
            blocks += bodies[k]
        out.append((Message(_text(parts, run, channel) + numbered, (*blocks, *footer)), run))
    return out


def _blocks(part: Part) -> list[Block]:
    """A machine's part of an owner's message: its blocks without its own title or how-to, marked."""
    kept = [b for b in part.message.blocks if b.get("block_id") not in (TITLE, HOW_TO_KEEP)]
    return list(Message(part.message.text, tuple(kept)).marked(part.marker).blocks)


def _line(part: Part) -> list[Block]:
    """A machine's line in the alerts channel: what its message says first, its figures, and its buttons
    (one as they are, several in a menu)."""
    texts = []
    for said in part.message.blocks:
        if said.get("block_id") in (TITLE, HOW_TO_KEEP) or said.get("type") != "section":
            continue
        if "text" in said:
            texts.append(said["text"]["text"])
        texts += [f["text"].replace("*\n", "* ") for f in said.get("fields", [])]
    # Taken from blocks costguard built (escaped there): markup as it is; the section cuts it safely.
    line = Mrkdwn(" · ".join(t.replace("\n", " ") for t in texts[:LINE_PARTS]))
    block: dict[str, Any] = {**section(line), "block_id": part.marker}
    buttons = [
        e
        for b in part.message.blocks
        if b.get("type") == "actions"
        for e in b.get("elements", [])
        if not e.get("confirm")  # no Stop now from a menu: a stop takes its own button, with its own question
    ]
    if len(buttons) == 1:
        block["accessory"] = dict(buttons[0])
    elif buttons:
        block["accessory"] = as_menu(buttons)
    return [block]


def _footer(parts: Sequence[Part], *, channel: bool, why: str) -> list[Block]:
    footer: list[Block] = []
    if any(p.kind == "warn" for p in parts):
        footer.append(
            section(
                "*To keep one*, press its buttons, or tag it before its stop time: "
                f"`{tags.KEEP_UNTIL}=<time>` keeps it until then (ISO 8601, UTC), `{tags.EXEMPT}=<reason>` for good."
            )
        )
    if channel and why:
        footer.append(context(why))
    return footer


def _title(parts: Sequence[Part], run: Sequence[int], channel: bool) -> str:
    kinds = {parts[k].kind for k in run}
    count = len(run)
    machines = f"{count} idle GPU machine{'s' if count != 1 else ''}"
    if kinds <= set(REPORTS):  # the sweep's report to the alerts channel: nobody else was told
        if kinds == {WOULD_WARN}:
            return f"[dry-run] {machines} costguard would warn about"
        if kinds == {NOT_STOPPED}:
            return f"{machines} still idle after the grace period, not stopped"
        return f"{machines}: what costguard would do"
    if kinds == {"stop"}:
        title = f"Stopped {machines}"
    elif kinds == {"cancel"}:
        title = f"Not stopping {count} machine{'s' if count != 1 else ''}: at work after all"
    else:
        title = machines[0].upper() + machines[1:]
    return f"{title} whose owners Slack cannot reach" if channel else title


def _text(parts: Sequence[Part], run: Sequence[int], channel: bool) -> Mrkdwn:
    """The notification: the title, and the first machines' own words (escaped in their messages)."""
    first = Mrkdwn("; ".join(parts[k].message.text for k in run[:3]))
    more = f"; and {len(run) - 3} more" if len(run) > 3 else ""
    return safe(_title(parts, run, channel) + ": ") + first + more
