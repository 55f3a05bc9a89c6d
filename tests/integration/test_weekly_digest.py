"""weekly_digest end to end against moto: hourly metrics in, the digest's headline, its thread, its chart, the
owners' messages and the permissions to grant out."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse, HTTPHeaders

from costguard.core import tags
from costguard.runtime import Runtime
from costguard.state.entries import Entry, EntryKind
from costguard.state.history import MachineHistory
from testing import moto_fixes
from testing.billing import answer_the_bill
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, ec2, run_instance

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("weekly_digest")
A10G = [{"Name": "name", "Value": "NVIDIA A10G"}, {"Name": "arch", "Value": "Ampere"}]


@pytest.fixture
def now() -> datetime:
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


@pytest.fixture
def threads(slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The thread each message went to (its ts -> its parent's ts): the stand-in records no threads, so each
    post's `thread_ts` is noted as the stand-in records the post."""
    parents: dict[str, str] = {}
    record = slack._record

    def recording(route: str, channel: str, payload: Any, *, direct: bool = False) -> Any:
        posted = record(route, channel, payload, direct=direct)
        if payload.get("thread_ts"):
            parents[posted.ts] = str(payload["thread_ts"])
        return posted

    monkeypatch.setattr(slack, "_record", recording)
    return parents


def everything(messages: list[Any]) -> str:
    return json.dumps([[m.text, m.blocks] for m in messages])


AWS_CODES = ("NotImplementedError", "AccessDenied", "UnauthorizedOperation", "Exception")


def launch(instance_type: str, owner: str, team: str, now: datetime) -> str:
    iid = run_instance(ec2(), instance_type, {"Owner": owner, "Team": team})
    moto_fixes.set_launch_time(iid, REGION, now - timedelta(days=10))
    return iid


def publish_hours(iid: str, gpus: int, start: datetime, count: int, *, cpu: float, gpu: float) -> None:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    moments = [start + timedelta(hours=k, minutes=30) for k in range(count)]
    cloudwatch.put_metric_data(
        Namespace="AWS/EC2",
        MetricData=[
            {
                "MetricName": "CPUUtilization",
                "Dimensions": [{"Name": "InstanceId", "Value": iid}],
                "Timestamp": t,
                "Value": cpu,
            }
            for t in moments
        ],
    )
    for index in range(gpus):
        dims: Any = [{"Name": "InstanceId", "Value": iid}, {"Name": "index", "Value": str(index)}, *A10G]
        cloudwatch.put_metric_data(
            Namespace="CWAgent",
            MetricData=[
                {"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": dims, "Timestamp": t, "Value": gpu}
                for t in moments
            ],
        )


def test_a_digest_run_posts_a_headline_its_chart_and_a_thread_and_tells_each_owner_with_something_to_act_on(
    runtime: Runtime,
    slack: SlackStandIn,
    threads: dict[str, str],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    now: datetime,
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    alice = launch("g5.12xlarge", "alice@example.com", "nlp", now)  # 4 GPUs, $5.672/h (bundled price)
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)  # 1 GPU, $1.006/h
    day = now - timedelta(days=3)
    publish_hours(alice, 4, day, 10, cpu=40, gpu=90)  # 10 busy hours: 40 GPU-hours used
    publish_hours(bob, 1, day, 20, cpu=2, gpu=1)  # 20 idle hours: 20 idle GPU-hours, $20.12
    publish_hours(bob, 1, now - timedelta(days=10), 5, cpu=2, gpu=1)  # the week before: 5 idle hours
    ec2().stop_instances(InstanceIds=[bob])
    runtime.ledger.record(
        Entry(
            at=now - timedelta(hours=5),
            kind=EntryKind.STOP,
            instance_id=bob,
            region=REGION,
            mode="enforce",
            owner="bob@example.com",
            instance_type="g5.xlarge",
            hourly_saving=1.006,
        )
    )

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert (result["status"], result["instances"], result["idle_gpu_hours"], result["waste_usd"]) == (
        "posted",
        2,
        20.0,
        20.12,
    )
    digest, *replies = slack.messages
    assert digest.channel == "C0DIGEST"
    # The post: a headline of five numbers at most, money first; moto has no bill, so on the on-demand list.
    assert len(digest.blocks) <= 12
    headline = digest.blocks[1]["text"]["text"]
    assert headline == (
        "Idle GPU machines cost *$20.12* at on-demand list prices this week (+300% on last week): what stopping "
        "them while idle would have saved. The most: *bob@example.com*, 100% of it. The stops costguard made saved "
        "*$5.03* at on-demand list prices. Commitments' use: not read this week."
    )
    assert digest.text == "GPU week: $20.12 idle at on-demand list prices (+300% on last week)"
    # The rest in the post's thread, a reply a topic.
    assert [r.channel for r in replies] == ["C0DIGEST", "C0DIGEST"]
    assert [threads.get(r.ts) for r in replies] == [digest.ts, digest.ts]
    owners, housekeeping = (json.dumps(r.blocks) for r in replies)
    # (10 x 90 + 20 x 1) / 30 running hours: 31 %; bob's 20 hours at 1 %
    assert "*bob@example.com*: *$20.12* (20 idle GPU-h)" in owners
    assert "*By team*" not in owners  # each team is one owner with idle cost: its line would repeat theirs
    # what the stop saved is the post's; here, how long it stayed off
    assert "*What costguard did*: 1 stop. Stopped machines stayed off 5 h." in housekeeping
    assert "$5.03" not in housekeeping
    # moto has no Cost Explorer reports: said as not read, neutrally, and not as a permission to grant
    assert "Not read this week: Reserved Instance use, Reserved Instance coverage" in housekeeping
    assert not any(code in everything(slack.messages) for code in AWS_CODES)
    # The chart: a real PNG at twice the preview's size, uploaded to the digest channel.
    [chart] = slack.files
    assert chart["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", chart["bytes"][16:24]) == (1600, 800)
    assert chart["channel"] == "C0DIGEST"
    # Each owner with something to act on gets their own week: alice's machine worked all week, so she gets
    # nothing; bob had $20.12 idle, but Slack does not know him.
    assert [m for m in slack.messages if m.direct] == []
    assert result["owners_quiet"] == ["alice@example.com"]
    assert result["owners_unreachable"] == ["bob@example.com"]  # not in the stand-in's workspace
    assert set(result["dashboards"]) == {"nlp", "vision"}
    dashboards = boto3.client("cloudwatch", region_name=REGION).list_dashboards(DashboardNamePrefix="costguard-")[
        "DashboardEntries"
    ]
    assert sorted(d["DashboardName"] for d in dashboards) == ["costguard-nlp-us-east-1", "costguard-vision-us-east-1"]


def test_a_retried_digest_run_posts_nothing_twice(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch("g5.xlarge", "alice@example.com", "nlp", now)
    publish_hours(iid, 1, now - timedelta(days=1), 12, cpu=2, gpu=1)  # $12.07 idle: alice has something to act on
    first = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    again = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert (first["status"], again["status"]) == ("posted", "already-posted")
    assert len(slack.messages) == 4  # the post, its two replies and alice's DM, once each
    assert len(slack.files) == 1


def test_the_digests_thread_lists_an_exempt_machine_with_what_it_idled_and_suggests_keeping_it_for_its_runs(
    runtime: Runtime,
    slack: SlackStandIn,
    threads: dict[str, str],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    now: datetime,
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch("g5.xlarge", "alice@example.com", "nlp", now)  # 1 GPU, $1.006/h
    ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.EXEMPT, "Value": "nightly eval"}])
    first = (now - timedelta(days=5)).replace(hour=0)
    for day in range(4):  # a 2-hour job at 02:00 UTC each night, the rest of the day idle: 88 idle hours
        midnight = first + timedelta(days=day)
        publish_hours(iid, 1, midnight, 2, cpu=2, gpu=1)
        publish_hours(iid, 1, midnight + timedelta(hours=2), 2, cpu=40, gpu=90)
        publish_hours(iid, 1, midnight + timedelta(hours=4), 20, cpu=2, gpu=1)

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    digest, *replies = [m for m in slack.messages if not m.direct]
    assert "exempt" not in everything([digest]).lower()  # the post stays a headline
    [housekeeping] = [r for r in replies if "Exempt machines that sat idle" in everything([r])]
    assert threads.get(housekeeping.ts) == digest.ts
    [listed] = [as_read(b["text"]["text"]) for b in housekeeping.blocks if "Exempt machines" in str(b)]
    assert (
        f"• `{iid}` g5.xlarge (alice@example.com, exempt: nightly eval): idle 88 GPU-h, *$88.53* · "
        "work starts at about 02:00 UTC on 4 days: keep it for its runs"
    ) in listed


def test_only_owners_whose_idle_time_cost_something_get_a_direct_message_unless_everyone_should(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    busy = launch("g5.xlarge", "alice@example.com", "nlp", now)
    idle = launch("g5.xlarge", "carol@example.com", "nlp", now)
    publish_hours(busy, 1, now - timedelta(days=2), 10, cpu=60, gpu=95)
    publish_hours(busy, 1, now - timedelta(days=1), 3, cpu=1, gpu=0)  # 3 idle hours, $3.02: nothing to act on
    publish_hours(idle, 1, now - timedelta(days=2), 10, cpu=1, gpu=0)  # 10 idle hours, $10.06

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert [m.channel for m in slack.messages if m.direct] == ["U0CAROL"]
    assert "idle 10 h this week" in json.dumps(slack.messages[-1].blocks)
    assert result["owners_quiet"] == ["alice@example.com"]

    monkeypatch.setenv("OWNER_DIGESTS_ALWAYS", "true")
    app._settings.cache_clear()
    later = now + timedelta(days=7)
    monkeypatch.setattr(runtime, "now", lambda: later)
    publish_hours(busy, 1, later - timedelta(days=2), 10, cpu=60, gpu=95)
    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert "U0ALICE" in [m.channel for m in slack.messages if m.direct]
    app._settings.cache_clear()


def test_a_machine_that_used_one_of_its_four_gpus_all_week_gets_a_size_suggestion_in_the_digest_and_a_dm(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    alice = launch("g5.12xlarge", "alice@example.com", "nlp", now)  # 4 A10G, 48 vCPUs, $5.672/h
    cloudwatch: Any = boto3.client("cloudwatch", region_name=REGION)
    # six days, 10 working hours each: GPU 0 at 80 %, GPUs 1-3 at 0 %; CPUUtilization 40 % (19.2 of 48 vCPUs)
    moments = [now - timedelta(days=d) + timedelta(hours=h, minutes=30) for d in range(1, 7) for h in range(-12, -2)]
    cpu = [{"MetricName": "CPUUtilization", "Dimensions": [{"Name": "InstanceId", "Value": alice}], "Timestamp": t,
            "Value": 40.0} for t in moments]  # fmt: skip
    cloudwatch.put_metric_data(Namespace="AWS/EC2", MetricData=cpu)
    for index in range(4):
        dims: Any = [{"Name": "InstanceId", "Value": alice}, {"Name": "index", "Value": str(index)}, *A10G]
        gpu = [{"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": dims, "Timestamp": t,
                "Value": 80.0 if index == 0 else 0.0} for t in moments]  # fmt: skip
        cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=gpu)

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    _, _, advice, _, dm = slack.messages  # the post, its replies (owners, advice, housekeeping), alice's week
    # 1 GPU and 20 vCPUs needed: of the 1-GPU g5 sizes, g5.8xlarge (32 vCPUs, $2.448/h); 60 h at $3.224/h less.
    line = "*g5.8xlarge* instead, $2.45/h rather than $5.67/h, *$193 less* this week. At most 1 of its 4 GPUs"
    assert "(alice@example.com): *g5.8xlarge* instead, *$193 less* this week" in json.dumps(advice.blocks)
    # alice had nothing idle, but something worth reading: her week comes to her, with the figures it rests on
    assert dm.channel == "U0ALICE"
    assert line in json.dumps(dm.blocks)
    assert result["owners_told"] == ["alice@example.com"]


def g5_ri(now: datetime) -> dict[str, Any]:
    return {
        "ReservedInstancesId": "ri-g5",
        "InstanceType": "g5.xlarge",
        "InstanceCount": 1,
        "Start": now - timedelta(days=30),
        "End": now + timedelta(days=335),
        "ProductDescription": "Linux/UNIX",
        "InstanceTenancy": "default",
        "Scope": "Region",
        "State": "active",
    }


def test_the_digest_prices_waste_and_savings_on_the_bill_keeps_paid_idle_hours_apart_and_lists_failed_starts(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    held = launch("g5.12xlarge", "alice@example.com", "nlp", now)  # in a capacity reservation: paid idle or not
    carol = launch("g5.xlarge", "carol@example.com", "nlp", now)  # 20 idle hours: the most idle g5.xlarge
    dave = launch("g5.xlarge", "dave@example.com", "nlp", now)  # 10 idle hours, on the one g5.xlarge RI
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)
    day = now - timedelta(days=3)
    publish_hours(held, 4, day, 10, cpu=1, gpu=0)
    publish_hours(carol, 1, day, 20, cpu=2, gpu=1)
    publish_hours(dave, 1, day, 10, cpu=2, gpu=1)
    hold = {
        "CapacityReservationId": "cr-0held",
        "InstanceType": "g5.12xlarge",
        "AvailabilityZone": f"{REGION}a",
        "TotalInstanceCount": 1,
        "AvailableInstanceCount": 0,
        "State": "active",
        "ReservationType": "default",
    }
    answer_the_bill(
        runtime, REGION, reserved=[g5_ri(now)], holds=[hold], in_holds={held: {"CapacityReservationId": "cr-0held"}}
    )
    ec2().stop_instances(InstanceIds=[bob])
    stopped = Entry(now - timedelta(hours=5), EntryKind.STOP, bob, REGION, "enforce", owner="bob@example.com",
                    instance_type="g5.xlarge", hourly_saving=0.5, list_hourly=1.006)  # fmt: skip
    refused = Entry(now - timedelta(days=2), EntryKind.START_FAILED, bob, REGION, "enforce", owner="bob@example.com",
                    instance_type="g5.xlarge", reason="InsufficientInstanceCapacity in us-east-1a",
                    until=(now - timedelta(days=2) + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ"))  # fmt: skip
    runtime.ledger.record_many([stopped, refused])

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    # carol's 20 idle hours on demand ($1.006/h): dave's 10 and alice's 10 were on capacity already paid.
    assert (result["idle_gpu_hours"], result["waste_usd"]) == (20 + 10 + 40, 20.12)
    digest, owners, housekeeping = (m for m in slack.messages if m.channel == "C0DIGEST")
    basis = (
        "Prices as your bill shows them now, not hour by hour: on demand less a Reserved Instance and a capacity "
        "reservation; Spot at its price."
    )
    assert "Idle GPU machines cost *$20.12* on the bill this week" in json.dumps(digest.blocks)
    assert "The stops costguard made saved *$2.50* on the bill." in json.dumps(digest.blocks)
    assert owners.blocks[-1]["elements"][0]["text"] == basis  # under the idle cost by owner
    body = json.dumps(owners.blocks) + json.dumps(housekeeping.blocks)
    assert "Stopped machines stayed off 5 h ($5.03 at on-demand prices)." in body
    assert "$2.50" not in body  # the post's figure, said once
    assert (
        "10 idle machine-hours on capacity reservation cr-0held, already paid ($56.72 on demand): "
        "Release or shrink it: it is billed while it is held."
    ) in body
    assert held not in body  # the reservation is what to act on, not its machines
    assert f"10 idle machine-hours on Reserved Instances (g5, {REGION}), already paid ($10.06 on demand" in body
    assert "*carol@example.com*: *$20.12* (20 idle GPU-h)" in body
    assert "*dave@example.com*" not in body  # idle only on paid capacity: counted with the owners who had none
    due, gave_up = now - timedelta(days=2), now - timedelta(days=2) + timedelta(hours=3)
    assert (
        f"`{bob}` g5.xlarge (bob@example.com), due <!date^{int(due.timestamp())}^{{date_short_pretty}} at {{time}}|"
        f"{due:%a %d %b %H:%M} UTC>: InsufficientInstanceCapacity in us-east-1a; not started: costguard gave up "
        f"<!date^{int(gave_up.timestamp())}^{{date_short_pretty}} at {{time}}|{gave_up:%a %d %b %H:%M} UTC>"
    ) in body
    # carol's DM: her waste on the bill, and the basis it is priced on
    [carols] = [m for m in slack.messages if m.channel == "U0CAROL"]
    assert "idle machines cost *$20.12* on the bill (20 idle GPU-hours)" in json.dumps(carols.blocks)
    assert carols.blocks[-1]["elements"][0]["text"] == basis


def test_a_bill_the_digest_may_not_read_prices_on_the_on_demand_list_and_the_alerts_channel_is_told_what_to_grant(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    idle = launch("g5.xlarge", "carol@example.com", "nlp", now)
    publish_hours(idle, 1, now - timedelta(days=1), 10, cpu=2, gpu=1)
    ec2_client = runtime.client("ec2", REGION)
    deny(ec2_client, "ec2.DescribeReservedInstances")
    deny(ec2_client, "ec2.DescribeCapacityReservations")
    deny(runtime.client("savingsplans", "us-east-1"), "savingsplans.DescribeSavingsPlans")

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert result["waste_usd"] == 10.06  # 10 h at the on-demand $1.006/h
    channel = [m for m in slack.messages if m.channel == "C0DIGEST"]
    assert channel[1].blocks[-1]["elements"][0]["text"] == "Prices: on-demand list (the bill was not read)."
    assert not any(code in everything(channel) for code in AWS_CODES)  # no AWS error code in the digest
    # Said once, to the alerts channel, with the exact actions to grant
    [alert] = [m for m in slack.messages if m.channel == "C0ALERTS"]
    said = json.dumps(alert.blocks)
    for action in (
        "ec2:DescribeReservedInstances",
        "ec2:DescribeCapacityReservations",
        "savingsplans:DescribeSavingsPlans",
    ):
        assert f"`{action}`" in said
    assert "ce:" not in said.replace("For Cost Explorer (`ce:`)", "")  # moto's missing reports are no permission
    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert len([m for m in slack.messages if m.channel == "C0ALERTS"]) == 1  # once a week


def deny(client: Any, event: str) -> None:
    """The client's `event` call (service.Operation) refused, as IAM refuses it."""
    code = "UnauthorizedOperation" if event.startswith("ec2.") else "AccessDeniedException"

    def refuse(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        http = AWSResponse("https://denied", 403, HTTPHeaders(), None)
        return http, {"Error": {"Code": code, "Message": "denied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}

    client.meta.events.register(f"before-call.{event}", refuse)


def test_a_person_whose_machines_carry_two_owner_tags_gets_one_message_with_all_of_them(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    # "carol" and "carol@example.com" are one person to Slack (the deployment's email domain is example.com)
    short = launch("g5.xlarge", "carol", "nlp", now)
    full = launch("g5.xlarge", "carol@example.com", "nlp", now)
    publish_hours(short, 1, now - timedelta(days=2), 11, cpu=1, gpu=0)  # $11.07
    publish_hours(full, 1, now - timedelta(days=1), 12, cpu=1, gpu=0)  # $12.07

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    [dm] = [m for m in slack.messages if m.direct]
    assert dm.channel == "U0CAROL"
    text = json.dumps(dm.blocks)
    assert f"`{short}`" in text
    assert f"`{full}`" in text
    assert "*Your GPU week*: idle machines cost *$23.14* at on-demand list prices (23 idle GPU-hours)" in text
    assert "accounts" not in text  # one account, one part
    assert result["owners_told"] == ["carol", "carol@example.com"]


def stopped_twice(runtime: Runtime, now: datetime) -> str:
    """bob's g5.xlarge, stopped by costguard three days ago and again a day ago, started by bob 12 hours ago
    (its launch time: its last start). Each stop saved $0.50 an hour on the bill ($1.006 at on-demand prices)."""
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)
    moto_fixes.set_launch_time(bob, REGION, now - timedelta(hours=12))
    runtime.ledger.record_many(
        [
            Entry(
                now - timedelta(days=d),
                EntryKind.STOP,
                bob,
                REGION,
                "enforce",
                owner="bob@example.com",
                instance_type="g5.xlarge",
                hourly_saving=0.5,
                list_hourly=1.006,
            )
            for d in (3, 1)
        ]
    )
    return bob


def stayed_off(slack: SlackStandIn) -> str:
    """The housekeeping reply's first line: what costguard did, and how long its stops stayed off."""
    replies = [m for m in slack.messages if m.channel == "C0DIGEST" and "What costguard did" in json.dumps(m.blocks)]
    return json.dumps(replies[-1].blocks)


def cloudtrail_answers(client: Any, events: list[dict[str, Any]]) -> None:
    """LookupEvents (which moto lacks) answered with `events`, one page."""

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        http = AWSResponse("https://cloudtrail", 200, HTTPHeaders(), None)
        return http, {"Events": events, "ResponseMetadata": {"HTTPStatusCode": 200}}

    client.meta.events.register("before-call.cloudtrail.LookupEvents", answer)


def start_event(instance_id: str, at: datetime) -> dict[str, Any]:
    record = {
        "eventName": "StartInstances",
        "eventTime": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "requestParameters": {"instancesSet": {"items": [{"instanceId": instance_id}]}},
    }
    return {"EventName": "StartInstances", "EventTime": at, "CloudTrailEvent": json.dumps(record)}


def test_a_machine_stopped_started_by_its_person_and_stopped_again_stayed_off_the_two_off_periods_only(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    bob = stopped_twice(runtime, now)
    # The idle stopper saw its person start it two days ago (EC2's state change), and costguard's second stop.
    history = MachineHistory(runtime.client("dynamodb"), runtime.settings.state_table)
    history.record(bob, "running", now - timedelta(days=2))
    history.record(bob, "stopped", now - timedelta(days=1))

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    # 24 h from the first stop to its person's start, 12 h from the second to the last; not the day it ran.
    assert "Stopped machines stayed off 36 h ($36.22 at on-demand prices)." in stayed_off(slack)
    assert "The stops costguard made saved *$18.00* on the bill." in everything(slack.messages)


def test_a_start_seen_only_in_cloudtrail_ends_the_off_period_of_the_stop_before_it(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    bob = stopped_twice(runtime, now)
    cloudtrail_answers(runtime.client("cloudtrail", REGION), [start_event(bob, now - timedelta(days=2))])

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert "Stopped machines stayed off 36 h ($36.22 at on-demand prices)." in stayed_off(slack)
    assert "The stops costguard made saved *$18.00* on the bill." in everything(slack.messages)


def test_a_stop_whose_machine_ran_again_at_a_time_nothing_recorded_is_counted_as_unknown_never_as_off(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    stopped_twice(runtime, now)
    cloudtrail_answers(runtime.client("cloudtrail", REGION), [])  # no start in the trail either

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    said = stayed_off(slack)
    # The first stop: it was started before the second, nobody knows when: not counted. The second: 12 h.
    assert "Stopped machines stayed off 12 h ($12.07 at on-demand prices)." in said
    assert "The stops costguard made saved *$6.00* on the bill." in everything(slack.messages)
    assert (
        "Saved: from each stop to the next start, hour by hour on the bill; 1 stop with no known restart is not "
        "counted."
    ) in said


def stopped_before_the_week(runtime: Runtime, machine: str, start: datetime) -> None:
    """bob's g5.xlarge stopped by costguard two days before the week that begins at `start`, priced on the bill."""
    runtime.ledger.record(
        Entry(
            start - timedelta(days=2),
            EntryKind.STOP,
            machine,
            REGION,
            "enforce",
            owner="bob@example.com",
            instance_type="g5.xlarge",
            hourly_saving=0.5,
            list_hourly=1.006,
        )
    )


def test_a_stop_made_before_the_week_still_off_at_its_start_counts_its_hours_inside_the_week(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    start = (now - timedelta(days=7)).replace(hour=0)  # the digest's week: the seven full days before today
    since = now - timedelta(days=7)  # its saving: the seven days to now (the digest before ended there)
    # bob's g5.xlarge, stopped by costguard two days before the week and still off when it began; started by
    # bob 9 hours after the last digest ran (its launch time); no stop this week. This week's bill saved those 9
    # hours; the hours before `since` were the last digest's to claim.
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)
    moto_fixes.set_launch_time(bob, REGION, since + timedelta(hours=9))
    stopped_before_the_week(runtime, bob, start)

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    # The 9 hours inside the week, none of the 48 before it.
    assert "Stopped machines stayed off 9 h ($9.05 at on-demand prices)." in stayed_off(slack)
    assert "saved *$4.50* on the bill" in everything(slack.messages)


def midweek(now: datetime) -> datetime:
    """The last Wednesday at 12:00 UTC before `now`: runs a week apart, and hours after them, in the same ISO weeks
    whatever day the test runs on (the digest's post is keyed by its week)."""
    wednesday = (now - timedelta(days=(now.weekday() - 2) % 7)).replace(hour=12)
    return wednesday if wednesday <= now else wednesday - timedelta(days=7)


def test_after_last_weeks_digest_ran_two_hours_late_this_weeks_saving_counts_from_where_it_ended(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    now = midweek(now)
    # Last week's digest was retried two hours late (the scheduler retries for 6 h); it kept where it ended.
    last_run = now - timedelta(days=7) + timedelta(hours=2)
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)
    moto_fixes.set_launch_time(bob, REGION, now - timedelta(days=1))  # bob started it yesterday
    stopped_before_the_week(runtime, bob, now - timedelta(days=7))  # nine days before now
    monkeypatch.setattr(runtime, "now", lambda: last_run)
    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    monkeypatch.setattr(runtime, "now", lambda: now)

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    # From where last week's digest ended to bob's start: 142 h, not the 144 h of the seven days before now.
    assert "Stopped machines stayed off 142 h" in stayed_off(slack)


def test_a_retry_that_finds_last_weeks_digest_posted_does_not_move_where_the_next_counts_from(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    now = midweek(now)
    # Last week's digest posted on time; a step after its post failed, so it ran again 3 h later and found the
    # post made: the posted digest counted to its own run, and this week's counts from there.
    last_run = now - timedelta(days=7)
    bob = launch("g5.xlarge", "bob@example.com", "vision", now)
    moto_fixes.set_launch_time(bob, REGION, now - timedelta(days=1))  # bob started it yesterday
    stopped_before_the_week(runtime, bob, now - timedelta(days=7))  # nine days before now
    for run in (last_run, last_run + timedelta(hours=3)):
        monkeypatch.setattr(runtime, "now", lambda run=run: run)
        app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    monkeypatch.setattr(runtime, "now", lambda: now)

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert result["status"] == "posted"
    assert "Stopped machines stayed off 144 h" in stayed_off(slack)  # not the 141 h from the retry


def test_a_stop_before_the_week_whose_machine_cloudtrail_saw_started_before_it_counts_nothing_and_is_not_unknown(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    start = (now - timedelta(days=7)).replace(hour=0)
    # stopped_twice's machine, stopped also two days before the week; bob started it the day after, seen only
    # in CloudTrail: that stop ended before the week, and its end is known.
    bob = stopped_twice(runtime, now)
    stopped_before_the_week(runtime, bob, start)
    trail = runtime.client("cloudtrail", REGION)
    asked: list[float] = []
    trail.meta.events.register(
        "before-call.cloudtrail.LookupEvents", lambda params, **_: asked.append(json.loads(params["body"])["StartTime"])
    )
    cloudtrail_answers(trail, [start_event(bob, start - timedelta(days=1))])

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert asked == [(start - timedelta(days=2)).timestamp()]  # CloudTrail asked from the stop before the week
    said = stayed_off(slack)
    # This week's first stop ran again at a time nobody knows; its second, 12 h; the one before the week, none.
    assert "Stopped machines stayed off 12 h ($12.07 at on-demand prices)." in said
    assert "1 stop with no known restart is not counted." in said


@pytest.fixture
def activity_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The deployment runs the activity check: the digest asks Systems Manager which machines answer it."""
    monkeypatch.setenv("ACTIVITY_CHECK_DOCUMENT", "costguard-ActivityCheckDocument-ABC123")
    app._settings.cache_clear()
    yield
    app._settings.cache_clear()


SETTING_ARN = (
    f"arn:aws:ssm:{REGION}:123456789012:servicesetting/ssm/managed-instance/default-ec2-instance-management-role"
)


def ssm_answers(client: Any, online: list[str], asked: list[tuple[str, dict[str, Any]]], setting: Any) -> None:
    """DescribeInstanceInformation answered with `online` machines Online, and GetServiceSetting (which moto lacks)
    with `setting` (a response, or an error code); each request kept in `asked` as sent."""

    def answer(model: Any, params: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        asked.append((model.name, json.loads(params["body"])))
        http = AWSResponse("https://ssm", 200, HTTPHeaders(), None)
        if model.name == "DescribeInstanceInformation":
            listed = [{"InstanceId": i, "PingStatus": "Online"} for i in online]
            return http, {"InstanceInformationList": listed, "ResponseMetadata": {"HTTPStatusCode": 200}}
        if isinstance(setting, str):
            http = AWSResponse("https://ssm", 400, HTTPHeaders(), None)
            error = {"Code": setting, "Message": "denied"}
            return http, {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}
        return http, {"ServiceSetting": setting, "ResponseMetadata": {"HTTPStatusCode": 200}}

    for operation in ("DescribeInstanceInformation", "GetServiceSetting"):
        client.meta.events.register(f"before-call.ssm.{operation}", answer)


def housekeeping(slack: SlackStandIn) -> str:
    [reply] = [m for m in slack.messages if m.channel == "C0DIGEST" and "*Hygiene*" in json.dumps(m.blocks)]
    return as_read(reply.blocks)


@pytest.mark.usefixtures("activity_check")
def test_the_digests_thread_says_why_the_check_cannot_reach_a_machine_and_the_setting_or_command_that_fixes_it(
    runtime: Runtime,
    slack: SlackStandIn,
    threads: dict[str, str],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    now: datetime,
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    managed = launch("g5.xlarge", "alice@example.com", "nlp", now)
    unmanaged = [launch("g5.xlarge", "bob@example.com", "nlp", now) for _ in range(2)]
    blind = run_instance_with_metadata_off()
    asked: list[tuple[str, dict[str, Any]]] = []
    unset = {"SettingId": "/ssm/managed-instance/default-ec2-instance-management-role", "SettingValue": "$None"}
    ssm_answers(runtime.client("ssm", REGION), [managed], asked, {**unset, "Status": "Default", "ARN": SETTING_ARN})

    app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    # One listing of the running machines, and one read of the region's setting, by the ARN IAM allows
    assert [name for name, _ in asked] == ["DescribeInstanceInformation", "GetServiceSetting"]
    assert asked[1][1] == {"SettingId": SETTING_ARN}
    digest = next(m for m in slack.messages if m.channel == "C0DIGEST")
    text = housekeeping(slack)
    assert "judged on metrics alone" not in as_read(digest.blocks)  # the thread's, never the post's
    first, second = sorted(unmanaged)
    assert (
        f"2 machines judged on metrics alone (`{first}`, `{second}`): Systems Manager does not manage them (no "
        "instance profile, Default Host Management off). *Fix*: DefaultHostManagement=true, or an instance profile "
        "with AmazonSSMManagedInstanceCore"
    ) in text
    assert (
        f"1 machine judged on metrics alone (`{blind}`): the instance metadata service is off, so the SSM agent gets "
        f"no credentials. *Fix*: `aws ec2 modify-instance-metadata-options --instance-id {blind} --http-endpoint "
        "enabled --http-tokens required`"
    ) in text
    assert text.count("judged on metrics alone") == 2  # alice's machine answers the check: on neither line


@pytest.mark.usefixtures("activity_check")
def test_a_setting_the_digest_may_not_read_is_one_line_and_the_machines_still_get_both_fixes(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    unmanaged = launch("g5.xlarge", "bob@example.com", "nlp", now)
    ssm_answers(runtime.client("ssm", REGION), [], [], "AccessDeniedException")

    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert result["status"] == "posted"
    text = housekeeping(slack)
    assert f"1 machine judged on metrics alone (`{unmanaged}`): Systems Manager does not list them" in text
    assert "*Fix*: DefaultHostManagement=true or an instance profile with AmazonSSMManagedInstanceCore" in text
    assert "whether Default Host Management Configuration is on." in text  # in the not-read line
    [alert] = [m for m in slack.messages if m.channel == "C0ALERTS"]
    assert "`ssm:GetServiceSetting`" in json.dumps(alert.blocks)
    assert "AccessDeniedException" not in text


def run_instance_with_metadata_off() -> str:
    launched = ec2().run_instances(
        ImageId="ami-12c6146b",
        MinCount=1,
        MaxCount=1,
        InstanceType="g5.xlarge",
        MetadataOptions={"HttpEndpoint": "disabled"},
        TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "Owner", "Value": "dan@example.com"}]}],
    )
    return str(launched["Instances"][0]["InstanceId"])


def test_the_digest_reads_with_what_the_container_keeps_out_of_the_collectors_passes_and_gives_it_back(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: datetime
) -> None:
    import gc  # noqa: PLC0415

    from costguard.digest.weekly.flow import WeeklyDigest  # noqa: PLC0415

    monkeypatch.setattr(runtime, "now", lambda: now)
    frozen_while_run: list[int] = []
    run = WeeklyDigest.run

    def counted(self: WeeklyDigest, at: datetime) -> dict[str, Any]:
        frozen_while_run.append(gc.get_freeze_count())
        return run(self, at)

    monkeypatch.setattr(WeeklyDigest, "run", counted)
    gc.unfreeze()
    result = app.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert result["status"] == "posted"
    assert frozen_while_run[0] > 10_000  # the modules and service models, at least
    assert gc.get_freeze_count() == 0  # in the collector's care again after the run
