"""Why did costguard stop my machine: the stop's *Why?* answers in the message's thread with the decision's
trail, as the ledger kept it, each step naming its rule."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from costguard.slack.buttons import Button
from testing.slack_standin import SlackStandIn
from tests.integration.test_buttons import env, runtime_for
from tests.integration.test_idle_stopper import idle, publish, state_of
from tests.integration.test_live_messages import buttons, idle_machine, press, sweep

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")
__all__ = ["env"]


def test_why_on_a_stop_answers_in_its_thread_with_each_rule_of_the_decision(
    aws: None,
    slack: SlackStandIn,
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = runtime_for(slack)
    earlier = now - timedelta(minutes=35)
    iid = idle_machine(earlier)
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    assert Button.WHY in buttons(warning), "the warning says why too"
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, now, lambda_context, monkeypatch)
    assert state_of(iid) in ("stopping", "stopped")
    assert buttons(warning) == [Button.START, Button.WHY]

    press(slack, warning, Button.WHY, runtime, env, now + timedelta(minutes=5), lambda_context, monkeypatch)

    [answer] = [m for m in slack.messages if m.thread_ts == warning.ts and "Why costguard" in m.text]
    assert answer.channel == warning.channel
    assert answer.text.startswith(f"Why costguard stopped `{iid}`:")
    assert "1. *idle verdict* → stop it: idle for" in answer.text
    assert "GPU" in answer.text, "the first step shows the evidence the metrics gave"
    assert state_of(iid) in ("stopping", "stopped"), "asking why changes nothing"

    press(slack, warning, Button.WHY, runtime, env, now + timedelta(minutes=6), lambda_context, monkeypatch)
    assert len([m for m in slack.messages if "Why costguard" in m.text]) == 1, "asked twice, answered once"


def test_why_on_one_line_of_a_grouped_stop_answers_in_its_thread_for_that_machine(
    aws: None,
    slack: SlackStandIn,
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = runtime_for(slack)
    earlier = now - timedelta(minutes=35)
    ids = [idle_machine(earlier) for _ in range(2)]
    sweep(runtime, earlier, lambda_context, monkeypatch)
    [warning] = slack.messages
    for iid in ids:
        publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, now, lambda_context, monkeypatch)
    assert [state_of(i) in ("stopping", "stopped") for i in ids] == [True, True]
    assert buttons(warning) == [Button.START, Button.WHY] * 2, "each line: Start it again, and its Why?"

    at = now + timedelta(minutes=5)
    press(slack, warning, Button.WHY, runtime, env, at, lambda_context, monkeypatch, machine=ids[1])

    [answer] = [m for m in slack.messages if m.thread_ts == warning.ts and "Why costguard" in m.text]
    assert answer.channel == warning.channel
    assert answer.text.startswith(f"Why costguard stopped `{ids[1]}`:")
    assert "1. *idle verdict* → stop it: idle for" in answer.text
