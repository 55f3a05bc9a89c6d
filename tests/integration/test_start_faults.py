"""A machine's start is worth more than its record: a working-hours start is made when the state table
refuses the start's record, and a learned start that a working-hours start made for it is not recorded a
second time as learned."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.acts.outbox import effect_record
from costguard.runtime import Runtime
from costguard.state.entries import Entry, EntryKind
from costguard.state.outbox import PROTECT, Outbox
from testing.handlers import load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, TABLE, ec2
from tests.integration.test_idle_stopper import launch, schedule_around, state_of

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("idle_stopper")
SWEEP = {"costguard": "sweep"}


def throttled(*_: Any, **__: Any) -> None:
    raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "BatchWriteItem")


def test_a_working_hours_start_is_made_when_the_state_table_refuses_its_record(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = launch(now, tags={tags.SCHEDULE: schedule_around(now, 0, 8)})  # opens in under the lead
    ec2().stop_instances(InstanceIds=[soon])
    monkeypatch.setattr(Outbox, "add", throttled)  # a storm on the state table, all through the lead
    monkeypatch.setattr(runtime, "now", lambda: now - timedelta(minutes=10))

    result = app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=IdlePolicy())

    assert result["regions"][REGION]["started"] == [soon]
    assert state_of(soon) == "running"  # its owner does not find it stopped at the start of the day
    entries = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert [e["kind"]["S"] for e in entries if e["pk"]["S"].startswith("action#")] == ["morning-start"]


def test_a_scale_in_protection_record_outlives_its_members_launch_by_more_than_two_days(
    runtime: Runtime, now: datetime
) -> None:
    # Its key's time is the member's launch, days ago: kept from that, DynamoDB could expire it before a
    # sweep proved the change a killed attempt made, and the change's record would be lost.
    launched = now - timedelta(days=10)
    member = Instance("i-0123456789abcdef0", REGION, "g5.xlarge", "running", launched, {"Owner": "ana"})
    entry = Entry(at=now, kind=EntryKind.PROTECT, instance_id=member.instance_id, region=REGION, mode="enforce")
    client = boto3.client("dynamodb", region_name=REGION)
    Outbox(client, TABLE, REGION).add([effect_record(PROTECT, member, launched, entry, now=now, group="trainers")])
    [item] = [i for i in client.scan(TableName=TABLE)["Items"] if i["pk"]["S"].startswith("outbox#")]
    assert int(item["expires_at"]["N"]) >= (now + timedelta(days=2)).timestamp()
