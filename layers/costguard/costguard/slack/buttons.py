"""The buttons on costguard's messages: what each one is called and the value it carries. Pure."""

from __future__ import annotations

import json
from enum import StrEnum

from costguard.slack.blocks import Block, button


class Button(StrEnum):
    KEEP_WHILE_BUSY = "costguard.keep_while_busy"
    KEEP_2H = "costguard.keep_2h"
    KEEP_TOMORROW = "costguard.keep_tomorrow"
    KEEP_MONDAY = "costguard.keep_monday"
    STOP_NOW = "costguard.stop_now"
    START = "costguard.start"
    DONT_START = "costguard.dont_start"  # not started again for its learned recurring work


KEEPS = (Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY)


def button_value(instance_id: str, region: str, account: str = "", start_at: str = "") -> str:
    """What a button carries: the machine, its region, and its account (where one Slack app serves many);
    a stop button on a warning that promised a learned start, when costguard starts the machine again."""
    target = {
        "i": instance_id,
        "r": region,
        **({"a": account} if account else {}),
        **({"s": start_at} if start_at else {}),
    }
    return json.dumps(target, separators=(",", ":"))


def warning_buttons(
    instance_id: str, region: str, will_stop: bool, account: str = "", *, start_at: str = ""
) -> list[Block]:
    """`start_at`: the learned start the warning promised (ISO 8601): "Stop now" keeps it, "Don't start it"
    is offered."""
    value = button_value(instance_id, region, account)
    elements = [
        button("Keep while it works", Button.KEEP_WHILE_BUSY, value, style="primary"),
        button("Keep 2 h", Button.KEEP_2H, value),
        button("Keep until tomorrow 09:00", Button.KEEP_TOMORROW, value),
        button("Keep until Monday", Button.KEEP_MONDAY, value),
    ]
    if will_stop:
        stop = dict(
            button("Stop now", Button.STOP_NOW, button_value(instance_id, region, account, start_at), style="danger")
        )
        stop["confirm"] = {
            "title": {"type": "plain_text", "text": "Stop this machine?"},
            "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now. Its EBS volumes are kept."},
            "confirm": {"type": "plain_text", "text": "Stop it"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
        elements.append(stop)
    if start_at:
        elements.append(button("Don't start it", Button.DONT_START, value))
    return elements


def start_buttons(instance_id: str, region: str, account: str = "", *, learned_start: bool = False) -> list[Block]:
    value = button_value(instance_id, region, account)
    again = [button("Start it again", Button.START, value, style="primary")]
    return [*again, button("Don't start it", Button.DONT_START, value)] if learned_start else again
