"""Buttons only where they act, and the fewest that serve (issue 46, item 4), checked on what costguard sent Slack
(a stand-in's `said`, or the demo's demo-output/said.json): for tests, the demo's and the integration suites'.

A message's row of buttons holds at most MAX_BUTTONS, the rest in its overflow menu. A machine's part (the whole
message alone; a line among several, its choices in one menu) offers a keep only where costguard will stop or
delete the machine, and wherever it offers a keep it offers Stop now too. "Keep it for its runs" is not a keep
from a stop (a machine kept for its runs is still stopped when idle, and started before each run): it is not
counted a keep here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from costguard.slack.buttons import MAX_BUTTONS, Button

KEEPS = {Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY, Button.KEEP_WHILE_BUSY}
# What a part says where costguard will not stop or delete its machine (its own words, as the messages write them).
WILL_NOT = ("will not stop it", "will not delete it", "leaves it running", "does not stop it", "will not stop it now")


def offered(element: Mapping[str, Any]) -> list[str]:
    """The actions an element offers: a button's, or each option of a menu (its value names the button)."""
    if element.get("type") == "button":
        return [str(element.get("action_id", ""))]
    chosen = []
    for option in element.get("options") or []:
        try:
            chosen.append(str(json.loads(option.get("value") or "{}").get("b", "")))
        except ValueError:
            continue
    return chosen


def problems(said: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """What breaks the rule in each message and edit sent ((how, payload) pairs, as the stand-in keeps them)."""
    found = []
    for n, (how, payload) in enumerate(said):
        blocks = [b for b in payload.get("blocks") or [] if isinstance(b, Mapping)]
        where = f"#{n} {how} {str(payload.get('text', ''))[:70]!r}"
        found += [f"{where}: {p}" for p in _problems(blocks)]
    return found


def _problems(blocks: list[Mapping[str, Any]]) -> list[str]:
    out = []
    rows = [b for b in blocks if b.get("type") == "actions"]
    for row in rows:
        buttons = [e for e in row.get("elements") or [] if e.get("type") == "button"]
        if len(buttons) > MAX_BUTTONS:
            out.append(f"{len(buttons)} buttons in one row ({MAX_BUTTONS} at most, the rest in an overflow menu)")
    # A part: a line with its menu (or its one button) as its accessory; else the whole message with its rows.
    lines = [b for b in blocks if isinstance(b.get("accessory"), Mapping)]
    parts = [(_text([line]), offered(line["accessory"])) for line in lines]
    in_rows = [a for row in rows for e in row.get("elements") or [] for a in offered(e)]
    if in_rows:
        parts.append((_text([b for b in blocks if not isinstance(b.get("accessory"), Mapping)]), in_rows))
    for text, actions in parts:
        keeps = sorted(a for a in actions if a in KEEPS)
        if not keeps:
            continue
        if Button.STOP_NOW not in actions:
            out.append(f"offers {', '.join(keeps)} but no Stop now: {text[:160]!r}")
        said = [w for w in WILL_NOT if w in text]
        if said:
            out.append(f"offers {', '.join(keeps)} where it says costguard {said[0]!r}: {text[:160]!r}")
    return out


def _text(blocks: list[Mapping[str, Any]]) -> str:
    """The text of blocks (sections, their fields, contexts), as one string."""
    texts = []
    for block in blocks:
        if isinstance(block.get("text"), Mapping):
            texts.append(str(block["text"].get("text", "")))
        texts += [str(f.get("text", "")) for f in block.get("fields") or [] if isinstance(f, Mapping)]
        texts += [str(e.get("text", "")) for e in block.get("elements") or [] if e.get("type") == "mrkdwn"]
    return " ".join(texts)
