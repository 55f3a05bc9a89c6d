"""A warning in notify-only mode says what is true in that mode: what costguard would do in enforce mode, that it
stops nothing here, and offers no button the mode makes meaningless (no keep: there is no stop to keep it from; no
Stop now: the worker refuses it) but its *Why?*, which answers in the thread."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from costguard.core.settings import Mode
from costguard.slack.buttons import Button
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.test_buttons import env, runtime_for
from tests.integration.test_live_messages import buttons, idle_machine, press, sweep

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")
__all__ = ["env"]


def test_a_notify_only_warning_says_costguard_stops_nothing_and_offers_only_why(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack, Mode.NOTIFY_ONLY)
    iid = idle_machine(now)

    sweep(runtime, now, lambda_context, monkeypatch)

    [warning] = slack.messages
    assert warning.channel == "U0ALICE", "the owner is told, as in enforce mode"
    said = as_read(warning.blocks)
    assert "unless you keep it" not in said
    assert "In enforce mode costguard would stop it " in said
    assert "in notify-only mode it stops nothing" in said
    assert "costguard:keep-until" not in said, "no tag to keep it by: nothing to keep it from"
    assert buttons(warning) == [Button.WHY]

    press(slack, warning, Button.WHY, runtime, env, now + timedelta(minutes=5), lambda_context, monkeypatch)

    [answer] = [m for m in slack.messages if m.thread_ts == warning.ts]
    assert answer.text.startswith(f"Why costguard warned about `{iid}`:")
    assert "1. *idle verdict* → " in answer.text


def test_a_grouped_notify_only_warning_promises_no_stop_above_its_lines_and_each_line_offers_why(
    aws: None, slack: SlackStandIn, env: str, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = runtime_for(slack, Mode.NOTIFY_ONLY)
    ids = [idle_machine(now) for _ in range(3)]

    sweep(runtime, now, lambda_context, monkeypatch)

    [warning] = slack.messages
    said = as_read(warning.blocks)
    assert "unless you keep" not in said
    assert warning.blocks[1]["text"]["text"] == "<@U0ALICE>, costguard stops none of these: each line says why."
    assert said.count("in notify-only mode it stops nothing") == 3, "each line says why"
    assert "costguard:keep-until" not in said
    assert buttons(warning) == [Button.WHY] * 3
    lines = [b for b in warning.blocks if "accessory" in b]
    assert sorted(json.loads(b["accessory"]["value"])["i"] for b in lines) == sorted(ids)
