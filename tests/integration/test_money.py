"""The idle stopper follows the money, through the handler: prepaid capacity idles unstopped and is said
once a day, a person may still stop it; Reserved Instances with and without overflow; the saving said
and recorded as the bill shows it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.runtime import Runtime
from testing.billing import answer_the_bill
from testing.slack_standin import SlackStandIn
from testing.slack_text import notices
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_idle_stopper import SWEEP, idle, launch, publish, run, state_of, warn_tags

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

P4D = 21.96  # the bundled list price, as the price book answers without the Pricing API


def ri(count: int, instance_type: str = "p4d.24xlarge", now: datetime | None = None) -> dict[str, Any]:
    start = (now or datetime.now(UTC)) - timedelta(days=30)
    return {
        "ReservedInstancesId": f"ri-{count}",
        "InstanceType": instance_type,
        "InstanceCount": count,
        "Start": start,
        "End": start + timedelta(days=365),
        "ProductDescription": "Linux/UNIX",
        "InstanceTenancy": "default",
        "Scope": "Region",
        "State": "active",
    }


def recorded(kind: str) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i for i in items if i.get("kind", {}).get("S") == kind]


def stops_recorded() -> list[dict[str, Any]]:
    return recorded("stop")


def test_a_capacity_block_machine_idle_is_not_stopped_said_once_a_day_and_stop_anyway_stops_it(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p5.48xlarge", tags=warn_tags(now, 35))  # warned before the bill was read
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    block = {
        "CapacityReservationId": "cr-0block",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": f"{REGION}a",
        "TotalInstanceCount": 1,
        "AvailableInstanceCount": 0,
        "State": "active",
        "ReservationType": "capacity-block",
        "EndDate": now + timedelta(days=2),
    }
    fields = {"CapacityReservationId": "cr-0block", "InstanceLifecycle": "capacity-block"}
    answer_the_bill(runtime, REGION, holds=[block], in_holds={iid: fields})

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)

    assert state_of(iid) == "running"
    assert result["regions"][REGION]["stopped"] == []
    assert tags.IDLE_WARNED_AT not in tags_of(iid), "the warning given before the bill was read goes"
    told = [m for m in slack.messages if "prepaid capacity" in json.dumps(m.blocks)]
    assert sorted(m.channel for m in told) == sorted(["U0ALICE", runtime.settings.alerts_channel])
    assert "Capacity Block cr-0block (prepaid until" in json.dumps(told[0].blocks)

    [left] = recorded("left-running")  # the day's decision in the ledger, with its trail
    assert left["instance_id"]["S"] == iid
    assert [step["M"]["rule"]["S"] for step in left["trail"]["L"]][-1] == "the bill"

    run(SWEEP, runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)  # the next sweep: not again
    assert len([m for m in slack.messages if "prepaid capacity" in json.dumps(m.blocks)]) == 2
    assert len(recorded("left-running")) == 1

    [stop] = [e for e in told[0].blocks[-1]["elements"] if e["text"]["text"] == "Stop anyway"]
    assert stop["action_id"] == "costguard.stop_now"  # a stop from Slack: the buttons worker's, tested there
    assert stops_recorded() == []


def three_p4d_one_idle(now: datetime) -> str:
    """Two p4d at work and one idle through its grace period: the idle one's id."""
    for busy in (launch(now, "p4d.24xlarge") for _ in range(2)):
        publish(busy, now, gpus=[[90.0] * 48], cpu=[60.0] * 48)
    spare = launch(now, "p4d.24xlarge", tags=warn_tags(now, 35))
    publish(spare, now, gpus=[idle(48)], cpu=idle(48))
    return spare


def test_an_idle_p4d_covered_by_reserved_instances_is_not_stopped(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spare = three_p4d_one_idle(now)

    answer_the_bill(runtime, REGION, reserved=[ri(3, now=now)])  # 3 RIs for the 3 p4d that run
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(spare) == "running"
    assert stops_recorded() == []


def test_an_idle_p4d_beyond_its_reserved_instances_is_stopped_and_the_saving_said_on_the_bill(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    spare = three_p4d_one_idle(now)

    answer_the_bill(runtime, REGION, reserved=[ri(2, now=now)])  # 2 RIs for 3: one runs on demand
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(spare) in ("stopping", "stopped")
    [stop] = stops_recorded()
    assert float(stop["hourly_saving"]["N"]) == pytest.approx(P4D)
    assert float(stop["list_hourly"]["N"]) == pytest.approx(P4D)
    [notice] = notices(slack.messages, "stop")
    assert "Saves $21.96/h on the bill (on demand: 3 p4d run, 2 Reserved Instances)" in json.dumps(notice.blocks)


def test_the_warning_says_the_saving_on_the_bill_and_a_denied_read_says_so(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, "p4d.24xlarge")
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    run(SWEEP, runtime, now, lambda_context, monkeypatch)  # moto answers no RI, reservation or plan read
    [warning] = [m for m in slack.messages if "Idle GPU machine" in json.dumps(m.blocks)]
    text = json.dumps(warning.blocks)
    assert "Saves $21.96/h on the bill (on demand; Reserved Instances not read" in text
    assert formatting.format_time(now)  # the sweep ran at the test's time
