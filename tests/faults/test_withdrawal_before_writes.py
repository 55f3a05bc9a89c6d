"""A withdrawal is kept as unsaid before the sweep's writes (acts/shown.py's before_writes). When the sweep ends
before the writes that clear the warning, the warning still stands. The withdrawal must then never be shown, because
the next sweep may carry out the standing warning's stop: neither the sweep whose clear was refused nor the next
one shows it. The killed case fails on 1798d7b, the refused one on 6959ec0 (its withdrawal shown at once)."""

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
from tests.faults.test_sweep_faults import state, sweep
from tests.faults.test_unkept_promises import PROMISE, WITHDRAWN
from tests.integration.conftest import REGION, tags_of
from tests.integration.test_idle_stopper import idle, launch, publish

KILLED = Killed("before the clear")
THROTTLED = ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, "DeleteTags")


@pytest.mark.parametrize("fault", [KILLED, THROTTLED], ids=["killed before DeleteTags", "DeleteTags refused"])
def test_a_withdrawal_whose_clear_was_not_made_does_not_end_in_a_stop_its_message_took_back(
    fault: Exception,
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    publish(iid, now - timedelta(minutes=45), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=45), lambda_context, monkeypatch)
    assert PROMISE in as_read(notices(slack.messages, "warn")[0].blocks)

    fortnight, failing = [False], [True]

    def asked(params: dict[str, Any], **_: Any) -> None:
        fortnight[0] = params["EndTime"] - params["StartTime"] > timedelta(days=2)

    def unanswered(parsed: dict[str, Any], **_: Any) -> None:
        for result in parsed.get("MetricDataResults", []) if fortnight[0] and failing[0] else []:
            result["StatusCode"] = "InternalError"

    faulty = [False]

    def clear(**_: Any) -> None:
        if faulty[0]:
            raise fault

    cloudwatch = runtime.client("cloudwatch", REGION)
    cloudwatch.meta.events.register("provide-client-params.monitoring.GetMetricData", asked)
    cloudwatch.meta.events.register("after-call.monitoring.GetMetricData", unanswered)
    runtime.client("ec2", REGION).meta.events.register("before-call.ec2.DeleteTags", clear)
    for minutes in (-30, -15):  # the fortnight unread: the warning stands past its stop time
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(3), idle(3)])
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
    updates = said_from_now(monkeypatch, slack, ("chat.update",))  # from the faulty sweep on: not the withdrawal either
    # the sweep that withdraws the overdue warning: it ends, or its DeleteTags is refused, before the clear
    publish(iid, now, gpus=[idle(3), idle(3)])
    faulty[0] = True
    with contextlib.suppress(type(fault)):  # the sweep may end on it: what it left is the point
        sweep(runtime, now, lambda_context, monkeypatch)
    faulty[0] = False
    assert tags.IDLE_WARNED_AT in tags_of(iid)  # the warning still stands on the machine

    failing[0] = False  # the read is back; the machine is still idle
    publish(iid, now + timedelta(minutes=15), gpus=[idle(3), idle(3)])
    sweep(runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)
    shown_withdrawn = [u for u in updates if WITHDRAWN in u]
    # the safety rule: a machine is not stopped after its message said costguard will not stop it
    assert not (shown_withdrawn and state(iid) in ("stopping", "stopped")), shown_withdrawn[0][:600]
