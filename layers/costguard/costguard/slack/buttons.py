"""The buttons on costguard's messages: what each one is called and the value it carries. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from costguard.slack.blocks import Block, button, escape


class Button(StrEnum):
    KEEP_WHILE_BUSY = "costguard.keep_while_busy"
    KEEP_2H = "costguard.keep_2h"
    KEEP_TOMORROW = "costguard.keep_tomorrow"
    KEEP_MONDAY = "costguard.keep_monday"
    STOP_NOW = "costguard.stop_now"
    START = "costguard.start"
    DONT_START = "costguard.dont_start"  # not started again for its learned recurring work
    STOP_NO_START = "costguard.stop_no_start"  # stopped now, and not started again for its runs (one click)
    # stopped when idle, never just before its known runs, and started before them (costguard:keep-for-runs)
    KEEP_FOR_RUNS = "costguard.keep_for_runs"
    KEEP_EXEMPT = "costguard.keep_exempt"  # "No, keep it exempt": the offer of a keep for its runs declined
    # an idle machine its keep-alive hook holds: kept for its runs in its place (keep-for-runs=ignore-hook)
    FOR_RUNS_NOT_HOOK = "costguard.for_runs_not_hook"
    KEEP_HOOK = "costguard.keep_hook"  # "No, its hook decides": that offer declined
    # a machine costguard cannot look inside: its owner's word that nothing runs on it unseen (unseen-work=none)
    NOTHING_UNSEEN = "costguard.nothing_unseen"
    KEEP_HOLDING = "costguard.keep_holding"  # "No, keep holding it": that offer declined (unseen-work=maybe)
    RECREATE = "costguard.recreate"  # a SageMaker endpoint costguard deleted, created again from its configuration
    WHY = "costguard.why"  # the decision's trail, told in the message's thread (anyone may ask)


KEEPS = (Button.KEEP_2H, Button.KEEP_TOMORROW, Button.KEEP_MONDAY)
MENU = "costguard.menu"  # one machine's buttons as a menu (a line among many)
MENU_OPTIONS = 8  # a machine has at most eight things to choose from (a select holds 100)
OVERFLOW_OPTIONS = 5  # Slack's most in an overflow menu
MAX_BUTTONS = 4  # in a message's row of buttons: the fewest that serve; the rest in its overflow menu
OPTION_VALUE = 150  # an option's value, at most


def button_value(instance_id: str, region: str, account: str = "", start_at: str = "", decided: str = "") -> str:
    """What a button carries: the machine, its region, and its account (where one Slack app serves many);
    a stop button on a warning that promised a learned start, when costguard starts the machine again; a
    *Why?*, when the decision was made (its ledger entry's time, ISO 8601)."""
    target = {
        "i": instance_id,
        "r": region,
        **({"a": account} if account else {}),
        **({"s": start_at} if start_at else {}),
        **({"w": decided} if decided else {}),
    }
    return json.dumps(target, separators=(",", ":"))


def keep_buttons(value: str, whose: str = "your time", *, for_runs: bool = False) -> list[Block]:
    """The keeps, in the order people reach for them. `whose`: the clock "tomorrow 09:00" and "Monday" are read
    on, said on the button ("your time": the owner's Slack time zone; else the team's, "Paris time").
    `for_runs`: a machine with known runs is offered "Keep it for its runs" in place of "Monday", the keep
    people reached for so that a weekend's runs would find it up (the buttons stay as few)."""
    longer = (
        button(FOR_RUNS, Button.KEEP_FOR_RUNS, value)
        if for_runs
        else button(f"Keep until Monday 09:00 ({whose})", Button.KEEP_MONDAY, value)
    )
    return [
        button("Keep 2 h", Button.KEEP_2H, value, style="primary"),
        button(f"Keep until 09:00 tomorrow ({whose})", Button.KEEP_TOMORROW, value),
        longer,
        button("Keep while it works", Button.KEEP_WHILE_BUSY, value),
    ]


FOR_RUNS = "Keep it for its runs"


def warning_buttons(
    instance_id: str,
    region: str,
    will_stop: bool,
    account: str = "",
    *,
    start_at: str = "",
    whose: str = "your time",
    for_runs: bool = False,
    kept_for_runs: bool = False,
) -> list[Block]:
    """`start_at`: the learned start the warning promised (ISO 8601): "Stop now" keeps it, and "Skip the planned
    start" is offered, unless the machine is `kept_for_runs` (its owner's word: started before its runs).
    `for_runs`: its runs are known, and "Keep it for its runs" is offered. A machine costguard will not stop
    (`will_stop` false) has nothing to keep it from: no keep, and no stop either."""
    if not will_stop:
        return []
    value = button_value(instance_id, region, account)
    elements = keep_buttons(value, whose, for_runs=for_runs and not kept_for_runs)
    stop = dict(
        button("Stop now", Button.STOP_NOW, button_value(instance_id, region, account, start_at), style="danger")
    )
    stop["confirm"] = {
        "title": {"type": "plain_text", "text": "Stop this machine?"},
        "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now. Its disks are kept."},
        "confirm": {"type": "plain_text", "text": "Stop it"},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }
    elements.append(stop)
    if start_at and not kept_for_runs:  # the promise Stop now keeps, declined in the same click
        alone = dict(button(STOP_WITHOUT_START, Button.STOP_NO_START, value))
        alone["confirm"] = {
            **stop["confirm"],
            "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now, not started for its runs."},
        }
        elements.append(alone)
    if start_at and not kept_for_runs:
        elements.append(button(SKIP_START, Button.DONT_START, value))
    return elements


STOP_WITHOUT_START = "Stop and don't start it"  # Stop now, and "Skip the planned start"


SKIP_START = "Skip the planned start"  # "Don't start it": learned starts off for the machine
WHY = "Why?"


def why_button(instance_id: str, region: str, account: str = "", *, decided: str) -> Block:
    """*Why?*: the decision made at `decided` (ISO 8601), its trail told in the message's thread."""
    return button(WHY, Button.WHY, button_value(instance_id, region, account, decided=decided))


def stop_anyway_buttons(
    instance_id: str,
    region: str,
    account: str = "",
    *,
    risk: str = "its slot is freed, and nothing is saved on the bill",
    start_at: str = "",
) -> list[Block]:
    """On a machine costguard leaves running (it idles on prepaid capacity, or might not start again): a
    person may stop it all the same (a stop from Slack). `risk`: what the stop costs, said before it.
    `start_at`: the start costguard promised for its run (ISO 8601): Stop anyway keeps it, as Stop now does, and
    "Stop and don't start it" declines it in the same click."""
    value = button_value(instance_id, region, account, start_at)
    stop = dict(button("Stop anyway", Button.STOP_NOW, value, style="danger"))
    stop["confirm"] = {
        "title": {"type": "plain_text", "text": "Stop it anyway?"},
        "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now: {risk}."},
        "confirm": {"type": "plain_text", "text": "Stop it"},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }
    if not start_at:
        return [stop]
    alone = dict(button(STOP_WITHOUT_START, Button.STOP_NO_START, button_value(instance_id, region, account)))
    alone["confirm"] = {
        **stop["confirm"],
        "text": {"type": "mrkdwn", "text": f"`{instance_id}` will be stopped now, not started for its runs: {risk}."},
    }
    return [stop, alone]


def start_buttons(
    instance_id: str, region: str, account: str = "", *, learned_start: bool = False, for_runs: bool = False
) -> list[Block]:
    """On a stopped machine: "Start it again"; where costguard promised to start it for its work, "Skip the
    planned start"; `for_runs`: the start is for its runs, and "Keep it for its runs" is offered."""
    value = button_value(instance_id, region, account)
    out = [button("Start it again", Button.START, value, style="primary")]
    if learned_start:
        out.append(button(SKIP_START, Button.DONT_START, value))
    if for_runs:
        out.append(button(FOR_RUNS, Button.KEEP_FOR_RUNS, value))
    return out


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


def sagemaker_keep_buttons(
    kind: str, name: str, region: str, account: str = "", whose: str = "your time"
) -> list[Block]:
    """A SageMaker warning's keeps (no "while it works": no check runs there), and beside them the act they keep it
    from, now: "Stop now" for a notebook instance, "Delete now" for an endpoint or a Studio app."""
    value = sagemaker_value(kind, name, region, account)
    keeps = keep_buttons(value, whose)[:3]
    verb, done = ("Stop", "stopped") if kind == "notebook" else ("Delete", "deleted")
    undone = {
        "notebook": "Its ML storage volume is kept: Start it again brings it back.",
        "endpoint": "Its configuration and model are kept: Recreate brings it back.",
    }.get(kind, "The space's storage is kept: opening it from Studio starts a new app.")
    now = dict(button(f"{verb} now", Button.STOP_NOW, value, style="danger"))
    now["confirm"] = {
        "title": {"type": "plain_text", "text": f"{verb} it now?"},
        "text": {"type": "mrkdwn", "text": f"`{escape(name)}` will be {done} now. {undone}"},
        "confirm": {"type": "plain_text", "text": f"{verb} it"},
        "deny": {"type": "plain_text", "text": "Cancel"},
    }
    return [*keeps, now]


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
    """Buttons as one menu (a select, placeholder first: "Keep it…", or "Keep or stop…" where Stop now is among
    them): each option carries its button's action and its machine. A line among many has one accessory, so its
    Stop now is an option too: a menu with a stop among its choices asks before any choice is made (Slack asks per
    menu, not per option), so that one slip never stops a machine at work."""
    options = _options(buttons)[:MENU_OPTIONS]
    chosen = {json.loads(o["value"])["b"] for o in options}
    keeping = {*KEEPS, Button.KEEP_WHILE_BUSY, Button.KEEP_FOR_RUNS}
    stops = chosen & {Button.STOP_NOW, Button.STOP_NO_START}
    acts = [o for o in options if json.loads(o["value"])["b"] != Button.WHY]
    said = "Choose…"
    if len(acts) == 1 and len(options) > 1:  # one act and its Why?: the menu is named by its act ("Start it again…")
        said = f"{acts[0]['text']['text']}…"
    elif chosen <= {*keeping, Button.WHY}:
        said = "Keep it…"
    elif stops and chosen & keeping:
        said = "Keep or stop…"
    placeholder = {"type": "plain_text", "text": said}
    menu = {"type": "static_select", "action_id": MENU, "placeholder": placeholder, "options": options}
    if stops:
        menu["confirm"] = {
            "title": {"type": "plain_text", "text": "Do it now?"},
            "text": {"type": "mrkdwn", "text": "A stop takes the machine down now, its work with it; a keep keeps it."},
            "confirm": {"type": "plain_text", "text": "Yes"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
    return menu


def line_accessory(buttons: Sequence[Block]) -> Block | None:
    """A line's buttons as the one element Block Kit lets a section carry: a lone button as it is (a *Why?* alone
    too); several as one menu (as_menu), its acts first and *Why?* last, so that a line whose only act is
    *Start it again* still answers why. None for a line with nothing to press."""
    if len(buttons) == 1:
        return dict(buttons[0])
    return as_menu(buttons) if buttons else None


def _options(buttons: Sequence[Block]) -> list[dict[str, Any]]:
    """Each button as a menu's option: its label, and a value that carries its action and its target (an option
    too long for Slack's 150 characters is left out: a button's value is bounded well below it)."""
    options = []
    for element in buttons:
        target = json.loads(str(element.get("value") or "{}"))
        value = json.dumps({"b": element["action_id"], **target}, separators=(",", ":"))
        if len(value) <= OPTION_VALUE:
            options.append({"text": dict(element["text"]), "value": value})
    return options


def laid_out(buttons: Sequence[Block]) -> list[Block]:
    """A message's buttons as Slack shows them: at most MAX_BUTTONS in a row, the rest in an overflow menu (its
    "…", Slack's place for the less used). A button that asks its question first (a stop) stays a button: an
    overflow's options cannot each ask one. The row keeps the buttons' order, the overflow last."""
    if len(buttons) <= MAX_BUTTONS:
        return list(buttons)
    shown = MAX_BUTTONS if len(buttons) - MAX_BUTTONS >= 2 else MAX_BUTTONS - 1  # an overflow of two or more
    asking = [b for b in buttons if b.get("confirm")]
    room = max(shown - len(asking), 0)
    plain = [b for b in buttons if not b.get("confirm")]
    row = {id(b) for b in (*asking, *plain[:room])}
    rest = [b for b in buttons if id(b) not in row]
    options = _options(rest)[:OVERFLOW_OPTIONS]
    more = [{"type": "overflow", "action_id": MENU, "options": options}] if options else []
    return [*(b for b in buttons if id(b) in row), *more]
