"""The buttons on costguard's messages: what each one is called and the value it carries. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
    RECREATE = "costguard.recreate"  # a SageMaker endpoint costguard deleted, created again from its configuration


KEEPS = (Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY)
MENU = "costguard.menu"  # one machine's buttons as an overflow menu (a line among many)
OVERFLOW_OPTIONS = 5  # Slack's most options in an overflow menu
OPTION_VALUE = 150  # an option's value, at most


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


def stop_anyway_buttons(
    instance_id: str,
    region: str,
    account: str = "",
    *,
    risk: str = "its slot is freed, and nothing is saved on the bill",
) -> list[Block]:
    """On a machine costguard leaves running (it idles on prepaid capacity, or might not start again): a
    person may stop it all the same (a stop from Slack). `risk`: what the stop costs, said before it."""
    stop = dict(button("Stop anyway", Button.STOP_NOW, button_value(instance_id, region, account), style="danger"))
    stop["confirm"] = {
        "title": {"type": "plain_text", "text": "Stop it anyway?"},
        "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now: {risk}."},
        "confirm": {"type": "plain_text", "text": "Stop it"},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }
    return [stop]


def start_buttons(instance_id: str, region: str, account: str = "", *, learned_start: bool = False) -> list[Block]:
    value = button_value(instance_id, region, account)
    again = [button("Start it again", Button.START, value, style="primary")]
    return [*again, button("Don't start it", Button.DONT_START, value)] if learned_start else again


def sagemaker_value(kind: str, name: str, region: str, account: str = "", config: str = "") -> str:
    """What a button on a SageMaker message carries: the resource's kind and name (not an instance id, so an
    EC2 click reads exactly as before), its region and account, and an endpoint's configuration."""
    target = {
        "k": kind,
        "n": name,
        "r": region,
        **({"a": account} if account else {}),
        **({"c": config} if config else {}),
    }
    return json.dumps(target, separators=(",", ":"))


def sagemaker_keep_buttons(kind: str, name: str, region: str, account: str = "") -> list[Block]:
    value = sagemaker_value(kind, name, region, account)
    return [
        button("Keep 2 h", Button.KEEP_2H, value),
        button("Keep until tomorrow 09:00", Button.KEEP_TOMORROW, value, style="primary"),
        button("Keep until Monday", Button.KEEP_MONDAY, value),
    ]


def sagemaker_act_buttons(kind: str, name: str, region: str, account: str = "", config: str = "") -> list[Block]:
    """What undoes a stop or a deletion: a notebook instance started again, an endpoint recreated from its
    kept configuration. A Studio app needs none: Studio starts a new one when it is opened."""
    if kind == "notebook":
        return [button("Start it again", Button.START, sagemaker_value(kind, name, region, account), style="primary")]
    if kind == "endpoint" and config:
        value = sagemaker_value(kind, name, region, account, config)
        return [button("Recreate", Button.RECREATE, value, style="primary")]
    return []


def as_menu(buttons: Sequence[Block]) -> Block:
    """Buttons as one overflow menu: each option carries its button's action and its machine."""
    options = []
    for element in buttons[:OVERFLOW_OPTIONS]:
        target = json.loads(str(element.get("value") or "{}"))
        value = json.dumps({"b": element["action_id"], **target}, separators=(",", ":"))
        if len(value) <= OPTION_VALUE:
            options.append({"text": dict(element["text"]), "value": value})
    return {"type": "overflow", "action_id": MENU, "options": options}
