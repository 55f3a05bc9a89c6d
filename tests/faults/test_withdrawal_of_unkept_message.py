"""A warning whose own message was never kept (every write of its record refused) is withdrawn in that message, not
in an older message of its machine: the latest message kept for the machine is then an earlier warning's, already
saying "At work", and changing it instead counted the withdrawal as shown while the warning went on promising its
stop (the fault week "all of the above at once", seed 7). Fails on 1675393."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from costguard.core import tags
from costguard.idle.sweep import idle_stopper  # noqa: F401 (the sweep's modules loaded before a hook is set)
from costguard.runtime import Runtime
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, notices
from tests.faults.test_sweep_faults import state, sweep
from tests.faults.test_unkept_promises import PROMISE, busy, storm
from tests.integration.conftest import REGION, tags_of
from tests.integration.test_idle_stopper import idle, launch, publish


def test_a_warning_whose_message_was_never_kept_is_withdrawn_in_it_not_in_an_older_message_of_its_machine(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = now - timedelta(hours=4)
    iid = launch(start, hours=10)
    publish(iid, start, gpus=[idle(), idle()])
    sweep(runtime, start, lambda_context, monkeypatch)  # the first warning, kept
    publish(iid, start + timedelta(minutes=15), gpus=[busy(), busy()])
    sweep(runtime, start + timedelta(minutes=15), lambda_context, monkeypatch)  # at work again: it says so
    [first] = notices(slack.messages, "warn")
    assert PROMISE not in as_read(first.blocks)
    assert tags.IDLE_WARNED_AT not in tags_of(iid)

    later = now - timedelta(minutes=15)  # idle for a whole window since: warned again
    dynamodb = runtime.client("dynamodb", REGION)
    batch, put = storm(dynamodb, "BatchWriteItem"), storm(dynamodb, "PutItem")  # its message never kept
    publish(iid, later, gpus=[idle(), idle()])
    sweep(runtime, later, lambda_context, monkeypatch)
    batch(False)
    put(False)
    [_, second] = notices(slack.messages, "warn")
    assert PROMISE in as_read(second.blocks)
    assert tags.IDLE_WARNED_AT in tags_of(iid)

    publish(iid, now, gpus=[busy(), busy()])  # at work again before its stop time: the warning withdrawn
    sweep(runtime, now, lambda_context, monkeypatch)

    assert state(iid) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    [_, second] = notices(slack.messages, "warn")
    assert PROMISE not in as_read(second.blocks), as_read(second.blocks)
