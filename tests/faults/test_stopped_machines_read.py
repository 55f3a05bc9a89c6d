"""The machines costguard keeps stopped, read once a sweep: where a spill profile prices a warning (the stops still
in force take their share first) and again at step 15 (priced for the digest), on the one read (found by review of
1e4764a: two DescribeInstances of the same machines a sweep). A read refused is not kept: step 15 asks again."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.core import tags
from costguard.core.bill import SpillProfile
from costguard.runtime import Runtime
from costguard.state.spill import SpillLog
from testing.slack_standin import SlackStandIn
from tests.faults.test_sweep_faults import sweep
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_idle_stopper import idle, launch, publish

KEPT_STOPPED = {"Name": "tag-key", "Values": [tags.STOPPED_AT]}


def described(runtime: Runtime, *, refuse_first_kept: bool = False) -> list[list[Any]]:
    """The filters of every DescribeInstances the sweep sends (the first read of the machines kept stopped refused,
    if asked)."""
    seen: list[list[Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        filters = json.loads(json.dumps(params.get("Filters", []), default=str))
        seen.append(filters)
        if refuse_first_kept and KEPT_STOPPED in filters and sum(KEPT_STOPPED in f for f in seen) == 1:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "storm"}}, "DescribeInstances")

    runtime.client("ec2", REGION).meta.events.register("provide-client-params.ec2.DescribeInstances", record)
    return seen


def priced_on_a_profile(now: datetime) -> str:
    """An idle machine in a region whose spill profile prices its warning over its off-period: its id."""
    SpillLog(boto3.client("dynamodb", region_name=REGION), TABLE).write(
        SpillProfile(REGION).learned({"sp:Compute": 40.0}, now), now
    )
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    return iid


def test_a_sweep_whose_warning_a_spill_profile_prices_reads_the_machines_kept_stopped_once(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = priced_on_a_profile(now)
    seen = described(runtime)

    sweep(runtime, now, lambda_context, monkeypatch)

    assert tags.IDLE_WARNED_AT in tags_of(iid)
    assert len(seen) == 3  # the mornings' starts, the running fleet, the machines kept stopped
    assert sum(KEPT_STOPPED in f for f in seen) == 1


def test_a_read_of_the_machines_kept_stopped_refused_while_pricing_is_made_again_for_the_digest(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = priced_on_a_profile(now)
    seen = described(runtime, refuse_first_kept=True)

    sweep(runtime, now, lambda_context, monkeypatch)

    assert tags.IDLE_WARNED_AT in tags_of(iid)  # priced on this hour instead: still warned
    assert sum(KEPT_STOPPED in f for f in seen) == 2
