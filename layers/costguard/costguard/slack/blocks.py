"""Block Kit builders. Pure functions returning plain dicts; Slack's size limits enforced here.

Limits (Slack's): 50 blocks a message, 3,000 characters in a section's text, 10 fields of 2,000
characters, 150 characters in a header, 75 in a button's label.
"""

from __future__ import annotations

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

    def slack_blocks(self) -> list[dict[str, Any]]:
        """The blocks as the mutable dicts slack-sdk's signatures ask for."""
        return [dict(block) for block in self.blocks]


def escape(text: str) -> str:
    """Slack's mrkdwn needs &, < and > escaped in user-supplied text (tag values, names)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": _clip(text, MAX_HEADER), "emoji": True}}


def section(text: str, *, fields: Sequence[str] = (), accessory: Block | None = None) -> Block:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, MAX_SECTION)}}
    if fields:
        block["fields"] = [{"type": "mrkdwn", "text": _clip(f, MAX_FIELD)} for f in fields[:MAX_FIELDS]]
    if accessory is not None:
        block["accessory"] = dict(accessory)
    return block


def fields_section(fields: Sequence[str]) -> Block:
    return {"type": "section", "fields": [{"type": "mrkdwn", "text": _clip(f, MAX_FIELD)} for f in fields[:MAX_FIELDS]]}


def context(*texts: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(t, MAX_SECTION)} for t in texts]}


def divider() -> Block:
    return {"type": "divider"}


def button(text: str, action_id: str, value: str, *, style: str = "") -> Block:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": _clip(text, MAX_BUTTON), "emoji": True},
        "action_id": action_id,
        "value": value,
    }
    if style in ("primary", "danger"):
        element["style"] = style
    return element


def actions(block_id: str, elements: Iterable[Block]) -> Block:
    return {"type": "actions", "block_id": block_id, "elements": list(elements)}


def bullet_list(lines: Sequence[str], *, limit: int = MAX_SECTION) -> str:
    """Lines as a bulleted mrkdwn list that fits one section, saying how many were left out."""
    reserve = 32  # room for the "…and N more" line
    out: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        item = _clip(f"• {line}", limit - reserve)
        if used + len(item) + 1 > limit - reserve:
            out.append(f"…and {len(lines) - index} more")
            break
        out.append(item)
        used += len(item) + 1
    return "\n".join(out)
