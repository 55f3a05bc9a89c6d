"""The outbox's recovery reads the machines of its stale warnings and withdrawals in one DescribeInstances
(acts/outbox.py `_still_standing`). A machine with both a stale warning and a stale cancel (its clear refused,
then the outbox's own cleanup refused) is asked once; and a cancel whose machine EC2 cannot describe is kept, so
that no sweep stops the machine on the warning its message called off."""

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
from tests.faults.conftest import said_from_now
from tests.faults.test_cancel_before_writes import CANCELLED, THROTTLED
from tests.faults.test_sweep_faults import state
from tests.integration.conftest import REGION, answers, midday, report, tags_of
from tests.integration.test_activity_check import sweep
from tests.integration.test_idle_stopper import idle, launch, publish

__all__ = ["answers"]
STORM = ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, "BatchWriteItem")
UNREADABLE = ClientError({"Error": {"Code": "RequestLimitExceeded", "Message": "storm"}}, "DescribeInstances")


def cancelled_with_its_clear_refused(
    runtime: Runtime, answers: dict[str, str | None], now: datetime, lambda_context: Any, mp: pytest.MonkeyPatch
) -> tuple[str, list[bool]]:
    """A machine warned at -45 min, at work at its stop time (the stop cancelled and said so), whose DeleteTags is
    refused from then on while the returned switch is on: its warning's tags stand, and the cancel's record."""
    iid = launch(now)
    answers[iid] = report()
    publish(iid, now - timedelta(minutes=45), gpus=[idle(), idle()])
    sweep(runtime, now - timedelta(minutes=45), lambda_context, mp)
    refused = [True]

    def clear(**_: Any) -> None:
        if refused[0]:
            raise THROTTLED

    runtime.client("ec2", REGION).meta.events.register("before-call.ec2.DeleteTags", clear)
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])
    publish(iid, now, gpus=[idle(), idle()])
    with contextlib.suppress(ClientError):
        sweep(runtime, now, lambda_context, mp)
    assert tags.IDLE_WARNED_AT in tags_of(iid)
    answers[iid] = report()  # idle again from then on
    return iid, refused


def test_a_machine_with_a_stale_warning_and_a_stale_cancel_is_read_once_and_its_region_still_swept(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = midday(now)
    cleanup_refused, asked = [True], []

    def batch(**_: Any) -> None:
        if cleanup_refused[0]:
            raise STORM

    def described(params: dict[str, Any], **_: Any) -> None:
        if params.get("InstanceIds"):
            asked.append(list(params["InstanceIds"]))

    runtime.client("dynamodb", REGION).meta.events.register("before-call.dynamodb.BatchWriteItem", batch)
    runtime.client("ec2", REGION).meta.events.register("before-parameter-build.ec2.DescribeInstances", described)
    iid, _ = cancelled_with_its_clear_refused(runtime, answers, now, lambda_context, monkeypatch)
    for minutes in (15, 30, 45, 60):
        cleanup_refused[0] = minutes <= 30  # the outbox's cleanup refused for half an hour: both records stale
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(), idle()])
        asked.clear()
        sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)  # must not fail the region
        assert all(len(ids) == len(set(ids)) for ids in asked), (minutes, asked)
        assert state(iid) == "running", minutes


def test_a_stale_cancel_whose_machine_ec2_cannot_describe_is_kept_and_the_machine_not_stopped(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = midday(now)
    unreadable = [False]

    def read(params: dict[str, Any], **_: Any) -> None:
        if unreadable[0] and params.get("InstanceIds"):
            raise UNREADABLE

    runtime.client("ec2", REGION).meta.events.register("before-parameter-build.ec2.DescribeInstances", read)
    said = said_from_now(monkeypatch, slack)
    iid, _ = cancelled_with_its_clear_refused(runtime, answers, now, lambda_context, monkeypatch)
    assert [s for s in said if CANCELLED in s]  # its message said the stop is off
    for minutes in (15, 30, 45, 60):
        unreadable[0] = minutes == 45  # the cancel's record is stale from +40 min: read while EC2 cannot say
        publish(iid, now + timedelta(minutes=minutes), gpus=[idle(), idle()])
        with contextlib.suppress(ClientError):
            sweep(runtime, now + timedelta(minutes=minutes), lambda_context, monkeypatch)
        assert state(iid) == "running", minutes  # never stopped on the warning its message called off
