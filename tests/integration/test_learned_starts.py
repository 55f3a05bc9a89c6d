"""Learned recurring work through the handlers, against moto: a nightly box is stopped after its run with
`costguard:start-at`, started again before the next run (and the tag taken off), never when its owner
stopped it or pressed "Don't start it", and not stopped at all when its next run is too near."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest
from botocore.exceptions import ClientError

from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.settings import IdlePolicy
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from costguard.slack.interactions import Click, parse_interaction
from costguard.state.ledger import LedgerWriteError
from costguard.state.startlog import StartLog, StartRecord
from testing import moto_fixes
from testing.handlers import load_handler
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, dates_in
from tests.integration.conftest import REGION, TABLE, ec2, tags_of
from tests.integration.test_idle_stopper import A10G, idle, launch, publish, run, state_of, warn_tags

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("idle_stopper")
buttons = load_handler("buttons")
POLICY = IdlePolicy()
SWEEP = {"costguard": "sweep"}
QUARTER = timedelta(minutes=15)


def quarter(moment: datetime) -> datetime:
    return datetime.fromtimestamp(int(moment.timestamp()) // 900 * 900, moment.tzinfo)


def nightly_history(instance_id: str, first_run: datetime, days: int = 14) -> None:
    """Two weeks of a job that runs an hour every day from `first_run`'s time: quarter-hourly points of its GPU,
    CPU and busiest core, busy during the job and idle between (what CloudWatch keeps of a nightly box)."""
    busy = {first_run - timedelta(days=d) + QUARTER * k for d in range(days) for k in range(4)}
    start, end = first_run - timedelta(days=days), first_run + timedelta(hours=1)
    quarterly(instance_id, [start + QUARTER * k for k in range(int((end - start) / QUARTER))], busy)


def quarterly(instance_id: str, moments: list[datetime], busy: set[datetime]) -> None:
    """Quarter-hourly points of a machine's GPU, CPU and busiest core at `moments`: busy at those in `busy`,
    idle at the others."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    ec2_dims = [{"Name": "InstanceId", "Value": instance_id}]
    gpu_dims = [*ec2_dims, {"Name": "index", "Value": "0"}] + [{"Name": k, "Value": v} for k, v in A10G]
    for namespace, name, dims, level in (
        ("CWAgent", "nvidia_smi_utilization_gpu", gpu_dims, 85.0),
        ("AWS/EC2", "CPUUtilization", ec2_dims, 30.0),
        ("CWAgent", "cpu_usage_active", ec2_dims, 100.0),
    ):
        data: list[Any] = [
            {"MetricName": name, "Dimensions": dims, "Timestamp": t, "Value": level if t in busy else 1.0}
            for t in moments
        ]
        for n in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[n : n + 500])


def sweep(runtime: Runtime, at: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    result: dict[str, Any] = app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=POLICY)
    return result["regions"][REGION]  # type: ignore[no-any-return]


def ledger(kind: str) -> list[dict[str, Any]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == kind]


def assert_not_started(
    iid: str, next_run: datetime, runtime: Runtime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep at the time of the box's learned start leaves it stopped."""
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == []
    assert state_of(iid) == "stopped"


def skip_the_planned_start(
    iid: str,
    message: Any,
    at: datetime,
    slack: SlackStandIn,
    runtime: Runtime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Alice presses Skip the planned start on `message` at `at`; the buttons worker takes the click."""
    monkeypatch.setenv("CLICK_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/costguard-clicks")
    monkeypatch.setattr(runtime, "now", lambda: at)
    click = Click(
        button=Button.DONT_START,
        instance_id=iid,
        region=REGION,
        user_id="U0ALICE",
        user_name="alice",
        response_url=slack.response_url(message.ts),
        message_ts=message.ts,
        action_ts=str(at.timestamp()),
    )
    buttons._settings.cache_clear()
    buttons.lambda_handler({"Records": [{"body": click.to_json()}]}, lambda_context, runtime=runtime)


@pytest.fixture
def nightly_box(now: datetime) -> tuple[str, datetime]:
    """A 1-GPU box whose job ran from 3 h 30 ago to 2 h 30 ago, as every day for two weeks; warned half an
    hour ago, idle since its run: the sweep now stops it. Returns it and its next run."""
    run = quarter(now - timedelta(minutes=210))
    iid = launch(now, instance_type="g5.xlarge", hours=24 * 20, tags=warn_tags(now, warned_minutes_ago=30))
    nightly_history(iid, run)
    publish(iid, now, gpus=[[1.0] * 30])  # the last 2 h 30, every 5 minutes: idle
    return iid, run + timedelta(days=1)


def test_a_nightly_box_is_stopped_with_its_start_time_and_started_again_before_its_next_run(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)

    result = sweep(runtime, now, lambda_context, monkeypatch)

    assert result["stopped"] == [iid]
    assert state_of(iid) == "stopped"
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    [notice] = slack.messages
    text = as_read(notice.blocks)
    assert f"starts work at about {next_run:%H:%M} UTC" in text
    assert f"costguard starts it again *{start_at:%a %d %b %H:%M} UTC*, before its next run." in text
    assert int(start_at.timestamp()) in dates_in(notice.blocks)  # in each reader's own time
    assert Button.DONT_START.value in text

    # Not before its time: the sweep a quarter of an hour earlier leaves it stopped.
    assert sweep(runtime, start_at - QUARTER, lambda_context, monkeypatch)["started"] == []
    assert state_of(iid) == "stopped"

    started = sweep(runtime, start_at, lambda_context, monkeypatch)
    assert started["started"] == [iid]
    assert state_of(iid) == "running"
    assert tags.START_AT not in tags_of(iid)  # started: nothing more is promised
    [entry] = ledger("learned-start")
    assert entry["instance_id"]["S"] == iid
    assert float(entry["gpu_hours"]["N"]) == pytest.approx((start_at - now).total_seconds() / 3600, abs=0.01)
    [step] = entry["trail"]["L"]  # why it was started: the rule whose promise it keeps
    assert step["M"]["rule"]["S"] == "recurring work"
    assert "is expected at" in step["M"]["why"]["S"]
    # A retry of that sweep does not start it a second time.
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == []


def test_a_learned_start_cancelled_from_slack_is_not_made(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.START_AT in tags_of(iid)
    [notice] = slack.messages
    skip_the_planned_start(iid, notice, now + timedelta(minutes=5), slack, runtime, lambda_context, monkeypatch)

    assert tags_of(iid)[tags.LEARNED_START] == "off"
    assert tags.START_AT not in tags_of(iid)
    assert notice.updated  # the notice now says who turned it off, and its button is gone
    assert "Planned start skipped by <@U0ALICE>." in json.dumps(notice.blocks)
    assert Button.DONT_START.value not in json.dumps(notice.blocks)
    assert Button.START.value in json.dumps(notice.blocks)  # it can still be started by hand
    assert_not_started(iid, next_run, runtime, lambda_context, monkeypatch)


def test_a_box_its_owner_started_and_stopped_again_is_never_started_by_costguard(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.START_AT in tags_of(iid)
    # The owner starts it (its start-at goes with the state change), then stops it again.
    ec2().start_instances(InstanceIds=[iid])
    moto_fixes.set_launch_time(iid, REGION, now + timedelta(hours=1))
    event = {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "EC2 Instance State-change Notification",
        "source": "aws.ec2",
        "account": "123456789012",
        "time": formatting.format_time(now + timedelta(hours=1)),
        "region": REGION,
        "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{iid}"],
        "detail": {"instance-id": iid, "state": "running"},
    }
    app.lambda_handler(event, lambda_context, runtime=runtime, policy=POLICY)
    assert tags.START_AT not in tags_of(iid)
    ec2().stop_instances(InstanceIds=[iid])

    assert_not_started(iid, next_run, runtime, lambda_context, monkeypatch)


def test_a_start_at_left_behind_is_not_honoured_after_someone_else_started_the_box(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.START_AT in tags_of(iid)
    moto_fixes.set_launch_time(iid, REGION, now + timedelta(hours=1))  # started and stopped: the event was lost
    assert_not_started(iid, next_run, runtime, lambda_context, monkeypatch)
    assert tags.START_AT not in tags_of(iid)  # let go, so the console says what will happen


def test_a_box_whose_next_run_is_near_is_not_warned_but_one_whose_run_is_far_is(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    near = launch(now, instance_type="g5.xlarge", hours=24 * 20)
    nightly_history(near, quarter(now + timedelta(minutes=70)) - timedelta(days=1))  # the next run in ~70 min
    far = launch(now, instance_type="g5.xlarge", hours=24 * 20)
    nightly_history(far, quarter(now + timedelta(hours=8)) - timedelta(days=1))
    for iid in (near, far):
        publish(iid, now, gpus=[[1.0] * 36])

    result = sweep(runtime, now, lambda_context, monkeypatch)

    assert result["warned"] == [far]  # the same idleness: only the stop that would pay is announced
    assert tags.IDLE_WARNED_AT not in tags_of(near)
    [warning] = slack.messages
    assert far in warning.text


def test_stop_now_on_a_warning_that_promised_a_learned_start_keeps_the_promise(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = quarter(now - timedelta(minutes=210))
    iid = launch(now, instance_type="g5.xlarge", hours=24 * 20)
    nightly_history(iid, run)
    publish(iid, now, gpus=[[1.0] * 30])
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == [iid]
    [warning] = slack.messages
    start_at = run + timedelta(days=1) - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert f"starts it again *{start_at:%a %d %b %H:%M} UTC*" in as_read(warning.blocks)
    actions = [e for b in warning.blocks if b["type"] == "actions" for e in b["elements"]]
    [stop_now] = [e for e in actions if e["action_id"] == Button.STOP_NOW]
    payload = {
        "type": "block_actions",
        "user": {"id": "U0ALICE", "username": "alice"},
        "actions": [{"action_id": stop_now["action_id"], "value": stop_now["value"], "action_ts": "1.5"}],
        "response_url": slack.response_url(warning.ts),
        "message": {"ts": warning.ts, "blocks": warning.blocks},
    }
    click = parse_interaction(urlencode({"payload": json.dumps(payload)}))
    assert click is not None
    assert click.start_at == formatting.format_time(start_at)  # what the warning promised travels with the click
    monkeypatch.setattr(runtime, "now", lambda: now + timedelta(minutes=3))
    buttons._settings.cache_clear()
    monkeypatch.setenv("CLICK_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/costguard-clicks")
    buttons.lambda_handler({"Records": [{"body": click.to_json()}]}, lambda_context, runtime=runtime)

    assert state_of(iid) == "stopped"
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    assert warning.blocks[0]["text"]["text"].startswith("Stopped: GPU machine")  # the warning, changed in place
    assert f"costguard starts it again *{start_at:%a %d %b %H:%M} UTC* for its recurring work." in as_read(
        warning.blocks
    )
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == [iid]


def test_a_learned_start_is_made_even_when_the_rest_of_its_sweep_fails(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    busy = launch(now, instance_type="g5.xlarge", tags=warn_tags(now, warned_minutes_ago=40))  # a stop to record
    publish(busy, now, gpus=[[1.0] * 36])

    def storm(*_: Any, **__: Any) -> None:  # DynamoDB refuses every batch write for an hour
        raise LedgerWriteError("25 items still unprocessed after 8 tries")

    monkeypatch.setattr(runtime.ledger, "record_many", storm)
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)
    monkeypatch.setattr(runtime, "now", lambda: start_at)
    # A storm ends the sweep normally (issue 23): what it could not record is left to the next sweep.
    result = app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=POLICY)
    assert result["regions"][REGION]["started"] == [iid]
    assert state_of(iid) == "running"  # the run does not find its machine stopped


def test_a_box_its_owner_tagged_exempt_since_its_stop_is_not_started_by_costguard(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.EXEMPT, "Value": "moving it to the new pipeline"}])
    assert_not_started(iid, next_run, runtime, lambda_context, monkeypatch)
    assert tags.START_AT not in tags_of(iid)  # let go: costguard leaves an exempt machine alone


def test_dont_start_pressed_while_the_sweep_is_about_to_start_the_box_wins(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    sweep(runtime, now, lambda_context, monkeypatch)
    listing = Ec2.iter_instances

    def clicked_meanwhile(self: Ec2, filters: Any = ()) -> Any:
        for instance in listing(self, filters):
            if tags.START_AT in instance.tags and instance.state == "stopped":  # listed with its start-at,
                ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.LEARNED_START, "Value": "off"}])
                ec2().delete_tags(Resources=[iid], Tags=[{"Key": tags.START_AT}])  # then the owner's click lands
            yield instance

    monkeypatch.setattr(Ec2, "iter_instances", clicked_meanwhile)
    assert_not_started(iid, next_run, runtime, lambda_context, monkeypatch)


def test_a_start_at_costguard_did_not_promise_is_not_honoured(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone who may tag a machine writes the tags of a learned start on it: costguard's own stop an hour
    # ago, a start due now. costguard keeps the start times it promises (before the stop it promises them
    # at), and this one it never promised.
    iid = launch(now, instance_type="g5.xlarge", hours=24)
    ec2().stop_instances(InstanceIds=[iid])
    forged = {
        tags.STOPPED_AT: formatting.format_time(now - timedelta(hours=1)),
        tags.START_AT: formatting.format_time(now),
    }
    ec2().create_tags(Resources=[iid], Tags=[{"Key": k, "Value": v} for k, v in forged.items()])
    assert sweep(runtime, now, lambda_context, monkeypatch)["started"] == []
    assert state_of(iid) == "stopped"
    assert tags.START_AT not in tags_of(iid)


def test_the_start_time_a_stop_promises_is_kept_before_the_stop(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)
    dynamodb = runtime.client("dynamodb")
    put_item = dynamodb.put_item

    def refused(**params: Any) -> Any:  # DynamoDB refuses the promise's write
        if params["Item"]["pk"]["S"].startswith("learned#"):
            raise ClientError({"Error": {"Code": "ProvisionedThroughputExceededException", "Message": ""}}, "PutItem")
        return put_item(**params)

    monkeypatch.setattr(dynamodb, "put_item", refused)
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["stopped"] == []  # a start it could not vouch for later is not promised: no stop this sweep
    assert state_of(iid) == "running"
    monkeypatch.setattr(dynamodb, "put_item", put_item)
    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == [iid]  # the scheduler's retry
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == [iid]


def test_a_machine_its_person_started_again_soon_after_costguards_stop_is_not_warned_again_at_once(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped by costguard, started again by its person 40 minutes later, idle since: a whole window has
    passed, but the person who undid the stop is not warned again before the machine has run two windows, and
    a cheap one not before its idle hours have cost what the person's cold start did ($50 at the g5.12xlarge's
    $5.67/h: 8 h 49 min)."""
    launched = now - timedelta(hours=2, minutes=30)
    stopped = formatting.format_time(launched - timedelta(minutes=40))
    undone = launch(now, hours=2.5, tags={tags.STOPPED_AT: stopped})
    dear = launch(now, "p4d.24xlarge", hours=2.5, owner="dan@example.com", tags={tags.STOPPED_AT: stopped})
    ours = launch(now, hours=2.5, owner="carol@example.com", tags={tags.STOPPED_AT: stopped})
    log = StartLog(boto3.client("dynamodb", region_name=REGION), TABLE)
    at = formatting.format_time(launched)
    log.made(ours, at, at, StartRecord(), launched)
    for iid in (undone, dear, ours):
        publish(iid, now, gpus=[idle(), idle(), idle(), idle()])

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)

    assert result["regions"][REGION]["warned"] == [ours]  # costguard's own start undid nothing
    assert tags.IDLE_WARNED_AT not in tags_of(undone)
    later = now + timedelta(hours=1, minutes=35)  # four hours after its start: the p4d is warned
    for iid in (undone, dear):
        publish(iid, later, gpus=[idle(), idle(), idle(), idle()])
    assert run(SWEEP, runtime, later, lambda_context, monkeypatch)["regions"][REGION]["warned"] == [dear]
    paid = launched + timedelta(hours=8, minutes=50)
    publish(undone, paid, gpus=[idle(), idle(), idle(), idle()])
    assert run(SWEEP, runtime, paid, lambda_context, monkeypatch)["regions"][REGION]["warned"] == [undone]


def test_a_refused_learned_start_offers_to_skip_it_and_skipping_it_ends_the_retries(
    runtime: Runtime,
    slack: SlackStandIn,
    now: datetime,
    nightly_box: tuple[str, datetime],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, next_run = nightly_box
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)
    sweep(runtime, now, lambda_context, monkeypatch)
    asked: list[str] = []

    def short_of_capacity(self: Ec2, instance_id: str) -> bool:
        asked.append(instance_id)
        message = "We currently do not have sufficient capacity"
        raise ClientError({"Error": {"Code": "InsufficientInstanceCapacity", "Message": message}}, "StartInstances")

    monkeypatch.setattr(Ec2, "start", short_of_capacity)
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == []
    [refused] = [m for m in slack.messages if "Start refused" in json.dumps(m.blocks)]
    assert Button.DONT_START.value in json.dumps(refused.blocks)

    skip_the_planned_start(iid, refused, start_at + timedelta(minutes=5), slack, runtime, lambda_context, monkeypatch)
    assert tags_of(iid)[tags.LEARNED_START] == "off"

    sweep(runtime, start_at + timedelta(minutes=15), lambda_context, monkeypatch)
    assert asked == [iid]  # not tried again: its owner skipped it
    assert state_of(iid) == "stopped"
