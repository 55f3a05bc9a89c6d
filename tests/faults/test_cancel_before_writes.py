"""A warned machine found at work at its stop time has its stop cancelled (CANCEL_STOP): its warning changed in
place, while the sweep sends, to say "Not stopped: at work after all", and its tags taken off after, with the
sweep's writes. When that DeleteTags is refused, or the sweep ends before it, the warning still stands on the
machine; a later sweep that finds it idle must not then stop it on that warning: the message said costguard would
warn again first. The same flaw as a withdrawal shown before its clear (test_withdrawal_before_writes.py)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from costguard.core import tags
from costguard.idle.sweep import idle_stopper  # noqa: F401
from costguard.runtime import Runtime
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, notices
from tests.faults.conftest import Killed, said_from_now
from tests.faults.test_sweep_faults import state
from tests.faults.test_unkept_promises import PROMISE
from tests.integration.conftest import REGION, answers, report, tags_of
from tests.integration.test_activity_check import sweep
from tests.integration.test_idle_stopper import idle, launch, publish

__all__ = ["answers"]

CANCELLED = "Not stopped: at work after all"
KILLED = Killed("before the clear")
THROTTLED = ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, "DeleteTags")


@pytest.mark.parametrize(
    ("fault", "lasting"),
    [(KILLED, False), (THROTTLED, False), (THROTTLED, True)],
    ids=["killed before DeleteTags", "DeleteTags refused", "DeleteTags refused for longer than a record is kept"],
)
def test_a_cancelled_stop_whose_clear_was_not_made_does_not_end_in_a_stop_its_message_called_off(
    fault: Exception,
    lasting: bool,
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    answers[iid] = report()  # nothing alive on it: warned
    publish(iid, now - timedelta(minutes=45), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=45), lambda_context, monkeypatch)
    assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)

    faulty = [False]

    def clear(**_: Any) -> None:
        if faulty[0]:
            raise fault

    runtime.client("ec2", REGION).meta.events.register("before-call.ec2.DeleteTags", clear)
    said = said_from_now(monkeypatch, slack)  # from the faulty sweep on: what its messages say, edited or posted
    # at its stop time, someone typed on it a minute ago: the stop is cancelled, and its clear is not made
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])
    publish(iid, now, gpus=[idle(), idle()])
    faulty[0] = True
    with contextlib.suppress(type(fault)):  # the sweep may end on it: what it left is the point
        sweep(runtime, now, lambda_context, monkeypatch)
    faulty[0] = lasting
    assert state(iid) == "running"
    assert tags.IDLE_WARNED_AT in tags_of(iid)  # the warning still stands on the machine

    answers[iid] = report()  # they logged out; the machine is idle again
    for minutes in (15, 30, 45, 60) if lasting else (15, 30):  # the cancel's record is kept 40 minutes
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(), idle()])
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
    shown_cancelled = [s for s in said if CANCELLED in s]
    assert shown_cancelled  # the faulty sweep said the stop is off: the case this test is about
    # the safety rule: a machine is not stopped on a warning its message said was called off
    assert not (shown_cancelled and state(iid) in ("stopping", "stopped")), shown_cancelled[0][:600]
