"""idle_stopper end to end against moto: instance states, tags, alarms, the exact CloudWatch requests, Slack."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from costguard.aws.clients import ClientFactory
from costguard.core import formatting, tags
from costguard.core.errors import EventValidationError
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle import sweep as module
from costguard.idle.reads.facts import SweepFacts
from costguard.runtime import Runtime
from testing import moto_fixes
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read, dates_in, marked
from tests.integration.conftest import REGION, TABLE, ec2, gpu_group, make_runtime, tags_of

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("idle_stopper")
POLICY = IdlePolicy()
SWEEP = {"costguard": "sweep"}
A10G = [("name", "NVIDIA A10G"), ("arch", "Ampere")]


@pytest.fixture
def calls(runtime: Runtime) -> list[tuple[str, dict[str, Any]]]:
    """Every request the handler's own clients send: (operation, params)."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def record(params: dict[str, Any], model: Any, **_: Any) -> None:
        seen.append((model.name, json.loads(json.dumps(params, default=str))))

    for service in ("ec2", "cloudwatch", "autoscaling"):
        runtime.client(service, REGION).meta.events.register("provide-client-params.*.*", record)
    return seen


def launch(
    now: datetime, instance_type: str = "g5.12xlarge", owner: str = "alice@example.com", hours: float = 6, **extra: Any
) -> str:
    tag_map = {"Owner": owner, "Name": f"{owner.split('@', maxsplit=1)[0]}-box"} if owner else {}
    tag_map.update(extra.pop("tags", {}))
    params: dict[str, Any] = {
        "ImageId": "ami-12c6146b",
        "MinCount": 1,
        "MaxCount": 1,
        "InstanceType": instance_type,
        **extra,
    }
    if tag_map:
        params["TagSpecifications"] = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tag_map.items()]}
        ]
    instance_id = str(ec2().run_instances(**params)["Instances"][0]["InstanceId"])
    moto_fixes.set_launch_time(instance_id, REGION, now - timedelta(hours=hours))
    return instance_id


def publish(
    instance_id: str,
    now: datetime,
    *,
    gpus: list[list[float]] | None = None,
    cpu: Sequence[float | None] | None = None,
    core: Sequence[float | None] | None = None,
) -> None:
    """Points every 5 minutes, the last one 5 minutes before now (None: no point for that period);
    GPU series as the CloudWatch agent names them. A machine with the agent (GPU series) also has the
    agent's busiest-core series, at 3% unless `core` says otherwise."""
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    cpu = [2.0] * 36 if cpu is None else cpu
    if core is None and gpus:
        core = [None if v is None else 3.0 for v in cpu]
    for namespace, name, values in (("AWS/EC2", "CPUUtilization", cpu), ("CWAgent", "cpu_usage_active", core or [])):
        data: list[Any] = [
            {
                "MetricName": name,
                "Dimensions": [{"Name": "InstanceId", "Value": instance_id}],
                "Timestamp": now - timedelta(minutes=5 * (len(values) - k)),
                "Value": value,
            }
            for k, value in enumerate(values)
            if value is not None
        ]
        for start in range(0, len(data), 500):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 500])
    for index, values in enumerate(gpus or []):
        publish_gpu(instance_id, now, "nvidia_smi_utilization_gpu", values, index)


def publish_gpu(instance_id: str, now: datetime, name: str, values: Sequence[float], index: int = 0) -> None:
    """One GPU's series as the CloudWatch agent names it (`nvidia_smi_utilization_gpu`, `nvidia_smi_memory_used`),
    every 5 minutes, the last one 5 minutes before now."""
    dims = [{"Name": "InstanceId", "Value": instance_id}, {"Name": "index", "Value": str(index)}] + [
        {"Name": k, "Value": v} for k, v in A10G
    ]
    data: list[Any] = [
        {
            "MetricName": name,
            "Dimensions": dims,
            "Timestamp": now - timedelta(minutes=5 * (len(values) - k)),
            "Value": v,
        }
        for k, v in enumerate(values)
    ]
    boto3.client("cloudwatch", region_name=REGION).put_metric_data(Namespace="CWAgent", MetricData=data)


def idle(n: int = 36) -> list[float]:
    return [1.0] * n


def state_of(instance_id: str) -> str:
    return str(ec2().describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]["State"]["Name"])


def warn_tags(now: datetime, warned_minutes_ago: int, grace: int = 30) -> dict[str, str]:
    at = now - timedelta(minutes=warned_minutes_ago)
    return {
        tags.IDLE_WARNED_AT: formatting.format_time(at),
        tags.STOP_AFTER: formatting.format_time(at + timedelta(minutes=grace)),
    }


def run(
    event: Any, runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: now)
    return app.lambda_handler(event, lambda_context, runtime=runtime, policy=POLICY)  # type: ignore[no-any-return]


def ledger_kinds() -> list[tuple[str, str]]:
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    return sorted((i["kind"]["S"], i["instance_id"]["S"]) for i in items if i["pk"]["S"].startswith("action#"))


# ------------------------------------------------------------------ the sweep


def test_sweep_warns_the_owner_of_an_idle_gpu_instance_and_records_the_warning(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle(), idle(), idle()])

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(iid) == "running"
    t = tags_of(iid)
    assert t[tags.IDLE_WARNED_AT] == formatting.format_time(now)
    assert t[tags.STOP_AFTER] == formatting.format_time(now + timedelta(minutes=30))
    [dm] = slack.messages
    assert (dm.channel, dm.direct) == ("U0ALICE", True)
    text = json.dumps(dm.blocks)
    assert iid in text
    assert dm.blocks[0]["text"]["text"] == "Idle GPU machine · $136/day", "cost first: $5.67/h, a g5.12xlarge"
    assert "$5.67/h" in text, "the hourly price, in the detail"
    assert dates_in(dm.blocks[1]) == [int((now + timedelta(minutes=30)).timestamp())], "the stop, in the reader's time"
    assert "costguard:keep-until" in text
    assert result["regions"][REGION]["warned"] == [iid]
    assert ledger_kinds() == [("warn", iid)]


def test_sweep_sends_the_exact_requests_aws_needs(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    run(SWEEP, runtime, now, lambda_context, monkeypatch)

    # First the stopped machines with working hours, or a learned start, to start before their work (a
    # failure anywhere after never keeps one stopped): one call, a small answer. Then the running fleet.
    # Last, the machines costguard keeps stopped, to price what each saves now (for the digest).
    [mornings, describe, kept] = [p for op, p in calls if op == "DescribeInstances"]
    assert kept["Filters"] == [
        {"Name": "instance-state-name", "Values": ["stopped"]},
        {"Name": "tag-key", "Values": [tags.STOPPED_AT]},
        {"Name": "instance-type", "Values": ["p*", "g*", "trn*", "inf*", "dl*"]},
    ]
    assert describe["Filters"] == [
        {"Name": "instance-state-name", "Values": ["running"]},
        {"Name": "instance-type", "Values": ["p*", "g*", "trn*", "inf*", "dl*"]},
    ]
    assert describe["MaxResults"] == 1000
    assert mornings["Filters"] == [
        {"Name": "instance-state-name", "Values": ["stopped"]},
        {"Name": "tag-key", "Values": [tags.SCHEDULE, tags.START_AT]},
        {"Name": "instance-type", "Values": ["p*", "g*", "trn*", "inf*", "dl*"]},
    ]
    [listing, memory] = [p for op, p in calls if op == "ListMetrics"]
    # No RecentlyActive: the listing covers two weeks, so a GPU agent gone silent is still known.
    assert listing == {"Namespace": "CWAgent", "MetricName": "nvidia_smi_utilization_gpu"}
    # ... and each GPU's memory used, read where the agent publishes it (GPU memory held at 0 %: a job waiting).
    assert memory == {"Namespace": "CWAgent", "MetricName": "nvidia_smi_memory_used"}
    # The window's data; then, for the machine about to be warned, two weeks of quarter-hours to learn
    # whether work recurs on it (idle/rules/recurring.py).
    [query, learning] = [p for op, p in calls if op == "GetMetricData"]
    queried = sorted(
        (
            q["MetricStat"]["Metric"]["MetricName"],
            sorted((d["Name"], d["Value"]) for d in q["MetricStat"]["Metric"]["Dimensions"]),
            q["MetricStat"]["Stat"],
        )
        for q in query["MetricDataQueries"]
    )
    gpu_dims = [sorted([("InstanceId", iid), ("index", str(i)), *A10G]) for i in range(2)]
    assert queried == [
        ("CPUUtilization", [("InstanceId", iid)], "Maximum"),
        ("cpu_usage_active", [("InstanceId", iid)], "Maximum"),  # the agent's per-core CPU, rolled up
        ("nvidia_smi_utilization_gpu", gpu_dims[0], "Maximum"),
        ("nvidia_smi_utilization_gpu", gpu_dims[1], "Maximum"),
    ], "exactly the published dimension sets: real CloudWatch returns nothing for a subset"
    assert all(q["MetricStat"]["Period"] == 300 for q in query["MetricDataQueries"])
    learned = sorted(
        (q["MetricStat"]["Metric"]["MetricName"], q["MetricStat"]["Stat"], q["MetricStat"]["Period"])
        for q in learning["MetricDataQueries"]
    )
    assert learned == [
        ("CPUUtilization", "Average", 900),
        ("cpu_usage_active", "Average", 900),  # a core busy for half an hour, not a minute of apt
        ("nvidia_smi_utilization_gpu", "Maximum", 900),
        ("nvidia_smi_utilization_gpu", "Maximum", 900),
    ]
    span = datetime.fromisoformat(learning["EndTime"]) - datetime.fromisoformat(learning["StartTime"])
    assert span >= timedelta(days=14)


def test_an_aggregate_gpu_series_beside_the_per_gpu_ones_is_not_read(
    runtime: Runtime, calls: list[Any], now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    # The agent's aggregation_dimensions: [["InstanceId"]] adds a series with that dimension alone.
    boto3.client("cloudwatch", region_name=REGION).put_metric_data(
        Namespace="CWAgent",
        MetricData=[
            {
                "MetricName": "nvidia_smi_utilization_gpu",
                "Dimensions": [{"Name": "InstanceId", "Value": iid}],
                "Value": 1.0,
            }
        ],
    )
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    reads = [p for op, p in calls if op == "GetMetricData"]  # the window's, and the two weeks' to learn from
    assert len(reads) == 2
    for query in reads:
        gpu_dims = [
            sorted(d["Name"] for d in q["MetricStat"]["Metric"]["Dimensions"])
            for q in query["MetricDataQueries"]
            if q["MetricStat"]["Metric"]["MetricName"] == "nvidia_smi_utilization_gpu"
        ]
        assert gpu_dims == [["InstanceId", "arch", "index", "name"]] * 2


def test_gpu_instance_idle_through_grace_period_is_stopped_and_the_owner_told(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now, tags=warn_tags(now, 35))
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)

    assert state_of(iid) in ("stopping", "stopped")
    t = tags_of(iid)
    assert t[tags.STOPPED_AT] == formatting.format_time(now)
    assert t[tags.STOP_REASON] == "idle: GPU < 5%, CPU < 10% for 120 min", (
        "the rule: the same for every stop of a sweep"
    )
    assert t[tags.IDLE_WARNED_AT] == formatting.format_time(now - timedelta(minutes=35)), "kept as the record"
    [dm] = slack.messages  # no warning message to change (warned before this test): the stop says it all
    assert dm.channel == "U0ALICE"
    assert dm.blocks[0]["text"]["text"] == "Stopped: GPU machine · saves $136/day"
    assert marked(dm, "stop") == [dm.blocks[0]["block_id"]]
    assert "Stopped " in as_read(dm.blocks[1])
    assert "by costguard. Its disks are kept." in as_read(dm.blocks[1])
    [start, why] = dm.blocks[2]["elements"]
    assert (start["action_id"], json.loads(start["value"])["i"]) == ("costguard.start", iid)
    assert (why["action_id"], json.loads(why["value"])["i"]) == ("costguard.why", iid)
    [stop] = [p for op, p in calls if op == "StopInstances"]
    assert stop == {"InstanceIds": [iid], "Hibernate": False}
    assert result["regions"][REGION]["stopped"] == [iid]
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    [stopped] = [i for i in items if i.get("kind", {}).get("S") == "stop"]
    assert float(stopped["hourly_saving"]["N"]) == pytest.approx(5.672)
    assert float(stopped["idle_hours"]["N"]) >= 2.5


def test_instance_configured_for_hibernation_is_hibernated(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now, tags=warn_tags(now, 35), HibernationOptions={"Configured": True})
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert [p for op, p in calls if op == "StopInstances"] == [{"InstanceIds": [iid], "Hibernate": True}]
    assert slack.messages[0].text.startswith("Hibernated: GPU machine")
    assert "Its memory is kept" in json.dumps(slack.messages[0].blocks)


def test_a_sweep_writes_to_ec2_once_per_kind_of_write_not_once_per_instance(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    idle_ones = [launch(now, tags=warn_tags(now, 35), owner=f"user{k}@example.com") for k in range(3)]
    back_at_work = [launch(now, tags=warn_tags(now, 20)) for _ in range(2)]
    new_idle = [launch(now) for _ in range(2)]
    for iid in idle_ones + new_idle:
        publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    for iid in back_at_work:
        publish(iid, now, gpus=[[*idle(47), 93.0]], cpu=idle(48))

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)

    writes = [(op, p) for op, p in calls if op in ("StopInstances", "CreateTags", "DeleteTags")]
    assert [(op, sorted(p.get("InstanceIds") or p["Resources"])) for op, p in writes] == [
        ("StopInstances", sorted(idle_ones)),
        ("CreateTags", sorted(idle_ones)),  # the record of the stops
        ("CreateTags", sorted(new_idle)),  # the warnings
        ("DeleteTags", sorted(back_at_work)),
    ]
    assert all(state_of(iid) == "stopped" for iid in idle_ones)
    assert sorted(result["regions"][REGION]["stopped"]) == sorted(idle_ones)
    assert sorted(result["regions"][REGION]["warned"]) == sorted(new_idle)
    # One message per recipient: alice's two warnings together; the three stops of owners Slack does not
    # know, together in the alerts channel.
    assert [(m.channel, len(m.blocks) > 1) for m in slack.messages] == [("U0ALICE", True), ("C0ALERTS", True)]


def test_a_refused_batch_is_retried_one_instance_at_a_time_so_one_refusal_costs_no_one_else(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, refused, third = (launch(now, tags=warn_tags(now, 35)) for _ in range(3))
    for iid in (first, refused, third):
        publish(iid, now, gpus=[idle(48)], cpu=idle(48))

    def deny(params: dict[str, Any], **_: Any) -> None:
        # As IAM does when one instance was tagged costguard:exempt after the sweep read it.
        if refused in params["InstanceIds"]:
            raise ClientError({"Error": {"Code": "UnauthorizedOperation", "Message": "denied"}}, "StopInstances")

    runtime.client("ec2", REGION).meta.events.register("provide-client-params.ec2.StopInstances", deny)

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)  # ends normally; the next sweep retries
    [left] = result["regions"][REGION]["errors"]
    assert left.startswith(refused)
    assert "UnauthorizedOperation" in left

    stops = [sorted(p["InstanceIds"]) for op, p in calls if op == "StopInstances"]
    assert stops == [sorted([first, refused, third]), *sorted([[first], [refused], [third]])]
    assert (state_of(first), state_of(refused), state_of(third)) == ("stopped", "running", "stopped")
    assert tags.STOPPED_AT in tags_of(first)
    assert tags.STOPPED_AT not in tags_of(refused)
    assert ledger_kinds() == sorted([("stop", first), ("stop", third)]), "the refused one is retried next sweep"


def test_warned_machine_back_at_work_has_its_warning_cleared_and_nothing_is_said(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags=warn_tags(now, 20))
    publish(iid, now, gpus=[[*idle(47), 93.0]], cpu=idle(48))
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(iid) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(iid)
    assert slack.messages == []
    assert ledger_kinds() == [("clear-warning", iid)]


def test_missing_data_is_never_idle(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    warned = launch(now, tags=warn_tags(now, 40))
    fresh = launch(now)
    for iid in (warned, fresh):
        cpu: list[float | None] = [*idle(36)]
        cpu[10:16] = [None] * 6  # 30 minutes without CPU data, inside the window
        publish(iid, now, gpus=[idle(36)], cpu=cpu)
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(warned) == "running"
    assert state_of(fresh) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(fresh)
    assert slack.messages == []


def test_protected_machines_are_never_warned_or_stopped(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept_until = formatting.format_time(now + timedelta(hours=3))
    cases = {
        "exempt": launch(now, tags={tags.EXEMPT: "long eval", **warn_tags(now, 60)}),
        "kept": launch(now, tags={tags.KEEP_UNTIL: kept_until}),
        "spot": launch(
            now, InstanceMarketOptions={"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}}
        ),
        "young": launch(now, hours=0.5),
        # Less than a window: warned sooner only on certain idleness, which its check must confirm.
        "started 90 min ago": launch(now, hours=1.5),
        "cpu": launch(now, instance_type="c6i.4xlarge"),
        "karpenter": launch(now, tags={"karpenter.sh/nodepool": "gpu"}),
    }
    for iid in cases.values():
        publish(iid, now, gpus=[idle()])
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    for case, iid in cases.items():
        assert state_of(iid) == "running", case
        assert tags.IDLE_WARNED_AT not in tags_of(iid), case
    assert slack.messages == []
    skipped = result["regions"][REGION]["skipped"]
    assert skipped[cases["spot"]] == "one-time Spot instance: it cannot be stopped"
    assert skipped[cases["young"]] == "running for 30 min, less than the 120-min window"
    assert cases["cpu"] not in skipped, "CPU instances are not candidates at all"


def test_auto_scaling_members_get_scale_in_protection_instead_of_stops(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy, lazy = gpu_group("inference", 2)
    autoscaling = boto3.client("autoscaling", region_name=REGION)
    autoscaling.set_instance_protection(AutoScalingGroupName="inference", InstanceIds=[lazy], ProtectedFromScaleIn=True)
    for iid in (busy, lazy):
        moto_fixes.set_launch_time(iid, REGION, now - timedelta(hours=5))
    publish(busy, now, gpus=[[80.0] * 36], cpu=[40.0] * 36)
    publish(lazy, now, gpus=[idle()])

    run(SWEEP, runtime, now, lambda_context, monkeypatch)

    members = autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"][0]["Instances"]
    assert {m["InstanceId"]: m["ProtectedFromScaleIn"] for m in members} == {busy: True, lazy: False}
    assert state_of(lazy) == "running"
    assert slack.messages == []
    assert ledger_kinds() == sorted([("protect", busy), ("unprotect", lazy)])


# ------------------------------------------------------------------ modes


def test_notify_only_warns_but_never_stops_and_says_so_once(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack, mode=Mode.NOTIFY_ONLY)
    iid = launch(now, tags=warn_tags(now, 35))
    publish(iid, now, gpus=[idle(48)], cpu=idle(48))
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    run(SWEEP, runtime, now + timedelta(minutes=1), lambda_context, monkeypatch)
    assert state_of(iid) == "running"
    [notice] = slack.messages
    assert notice.channel == "C0ALERTS"
    assert notice.text == f"[notify-only] g5.12xlarge {iid} is still idle after the grace period; not stopped"


def test_dry_run_makes_no_mutating_call_and_reports_once_to_the_alerts_channel(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack, mode=Mode.DRY_RUN)
    sent: list[str] = []
    for service in ("ec2", "cloudwatch", "autoscaling"):
        runtime.client(service, REGION).meta.events.register(
            "before-call.*.*", lambda model, **_: sent.append(model.name)
        )
    idle_one = launch(now)
    warned_one = launch(now, tags=warn_tags(now, 35))
    for iid in (idle_one, warned_one):
        publish(iid, now, gpus=[idle(48)], cpu=idle(48))

    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    run(SWEEP, runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)

    mutating = {"StopInstances", "CreateTags", "DeleteTags", "PutMetricAlarm", "DeleteAlarms", "SetInstanceProtection"}
    assert sorted(set(sent) & mutating) == []
    assert state_of(warned_one) == "running"
    # One report for the sweep (issue 24: the alerts channel gets one message per sweep), a part each; the
    # second run reports neither again.
    [report] = slack.messages
    assert report.channel == "C0ALERTS"
    assert report.blocks[0]["text"]["text"] == "2 idle GPU machines: what costguard would do"
    text = json.dumps(report.blocks)
    assert f"`{warned_one}`" in text
    assert "is still idle after the grace period" in text
    assert f"`{idle_one}`" in text
    assert "would warn alice and stop it" in text
    assert "@example.com" not in text  # owners by name, never by address
    ids = [str(b.get("block_id", "")) for b in report.blocks]
    marked = sorted(i[:14] for i in ids if i.startswith("cg-"))
    assert marked == ["cg-not-stopped", "cg-would-warn-"]
    # What it would have done is in the ledger, not applied (the digest counts none of it): the warning,
    # and the second run's withdrawal of the old one (its data ends before that run: not idle any more).
    assert ledger_kinds() == sorted([("warn", idle_one), ("clear-warning", warned_one)])
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert [i["applied"]["BOOL"] for i in items if i["pk"]["S"].startswith("action#")] == [False, False]


# ------------------------------------------------------------------ failures


def test_slack_outage_records_no_warning_and_leaves_it_to_the_next_sweep(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle()])
    slack.fail("chat.postMessage", 500, count=50)
    slack.fail("webhook", 500, count=50)
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert "Slack" in result["regions"][REGION]["errors"][0]
    assert tags.IDLE_WARNED_AT not in tags_of(iid), "no warning recorded: the next sweep warns again"
    assert ledger_kinds() == []


def test_malformed_event_raises(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EventValidationError):
        run(
            {"detail-type": "CloudWatch Alarm State Change", "region": REGION, "detail": {"state": {}}},
            runtime,
            now,
            lambda_context,
            monkeypatch,
        )


# ------------------------------------------------------------------ alarms


def alarms() -> dict[str, Any]:
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    return {a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNamePrefix="costguard-idle-")["MetricAlarms"]}


def test_sweep_reconciles_one_idle_alarm_per_stoppable_gpu_instance(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = launch(now)
    publish(busy, now, gpus=[[70.0] * 36, [70.0] * 36], cpu=[30.0] * 36)
    boto3.client("cloudwatch", region_name=REGION).put_metric_alarm(
        AlarmName="costguard-idle-i-0000000000000dead",
        MetricName="CPUUtilization",
        Namespace="AWS/EC2",
        Statistic="Maximum",
        Period=300,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="LessThanThreshold",
    )
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)

    assert set(alarms()) == {f"costguard-idle-{busy}"}
    alarm = alarms()[f"costguard-idle-{busy}"]
    expression = next(m for m in alarm["Metrics"] if m.get("Expression"))
    assert expression["Expression"] == "IF(MAX([g0, g1]) < 5 AND c < 10, 1, 0)"
    gpu_dims = [
        sorted((d["Name"], d["Value"]) for d in m["MetricStat"]["Metric"]["Dimensions"])
        for m in alarm["Metrics"]
        if m["Id"].startswith("g")
    ]
    assert gpu_dims == [sorted([("InstanceId", busy), ("index", str(i)), *A10G]) for i in range(2)]
    assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"], alarm["TreatMissingData"]) == (
        24,
        24,
        "notBreaching",
    )
    assert result["regions"][REGION]["alarms_deleted"] == 1
    # A second sweep finds everything in place and changes nothing.
    again = run(SWEEP, runtime, now + timedelta(minutes=15), lambda_context, monkeypatch)
    assert (again["regions"][REGION]["alarms_created"], again["regions"][REGION]["alarms_deleted"]) == (0, 0)


def test_idle_alarm_evaluates_just_that_instance_on_fresh_data(
    runtime: Runtime,
    slack: SlackStandIn,
    calls: list[Any],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = launch(now)
    other = launch(now, owner="carol@example.com")
    for iid in (target, other):
        publish(iid, now, gpus=[idle()])
    event = load_event("idle_stopper/alarm-state-change.json")
    event["detail"]["alarmName"] = f"costguard-idle-{target}"

    run(event, runtime, now, lambda_context, monkeypatch)

    assert tags.IDLE_WARNED_AT in tags_of(target)
    assert tags.IDLE_WARNED_AT not in tags_of(other)
    # The machine alone; then, as a warning is priced on the bill, the region's running accelerated machines
    # (the Reserved Instances' pools are the region's, not one machine's).
    [machine, pools] = [p for op, p in calls if op == "DescribeInstances"]
    assert machine == {"InstanceIds": [target]}
    assert pools["Filters"] == [
        {"Name": "instance-state-name", "Values": ["running"]},
        {"Name": "instance-type", "Values": ["p*", "g*", "trn*", "inf*", "dl*"]},
    ]
    [listing, memory] = [p for op, p in calls if op == "ListMetrics"]
    assert listing["Dimensions"] == [{"Name": "InstanceId", "Value": target}]
    assert memory["Dimensions"] == [{"Name": "InstanceId", "Value": target}]
    assert [m.channel for m in slack.messages] == ["U0ALICE"]


def test_alarm_back_to_ok_is_ignored(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run(load_event("idle_stopper/alarm-back-to-ok.json"), runtime, now, lambda_context, monkeypatch)
    assert result == {"status": "ignored", "reason": "alarm costguard-idle-i-0a1b2c3d4e5f60718 went to OK, not ALARM"}


def test_instance_state_changes_create_and_delete_its_alarm(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    running = load_event("idle_stopper/ec2-state-running.json")
    running["detail"]["instance-id"] = iid
    run(running, runtime, now, lambda_context, monkeypatch)
    assert set(alarms()) == {f"costguard-idle-{iid}"}
    stopped = load_event("idle_stopper/ec2-state-stopped.json")
    stopped["detail"]["instance-id"] = iid
    run(stopped, runtime, now, lambda_context, monkeypatch)
    assert alarms() == {}


def test_the_documented_state_change_sample_is_handled_not_dead_lettered(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AWS's own sample names its instance i-xxxxxxxx: an 8-character id of letters, as AWS writes ids.
    boto3.client("cloudwatch", region_name=REGION).put_metric_alarm(
        AlarmName="costguard-idle-i-xxxxxxxx",
        MetricName="CPUUtilization",
        Namespace="AWS/EC2",
        Statistic="Maximum",
        Period=300,
        EvaluationPeriods=1,
        Threshold=1,
        ComparisonOperator="LessThanThreshold",
    )
    result = run(load_event("idle_stopper/ec2-state-documented-sample.json"), runtime, now, lambda_context, monkeypatch)
    assert result["status"] == "done"
    assert result["regions"][REGION]["alarms_deleted"] == 1
    assert alarms() == {}


def test_alarm_creation_is_spread_over_sweeps_on_a_large_fleet(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("costguard.idle.acts.alarms.MAX_ALARM_PUTS_PER_SWEEP", 3)
    for _ in range(5):
        publish(launch(now), now, gpus=[[70.0] * 36], cpu=[30.0] * 36)
    first = run(SWEEP, runtime, now, lambda_context, monkeypatch)["regions"][REGION]
    assert (first["alarms_created"], first["alarms_pending"], len(alarms())) == (3, 2, 3)
    second = run(SWEEP, runtime, now, lambda_context, monkeypatch)["regions"][REGION]
    assert (second["alarms_created"], second["alarms_pending"], len(alarms())) == (2, 0, 5)


def test_warning_older_than_the_data_read_is_given_again_not_acted_on(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, hours=40, tags=warn_tags(now, 30 * 60))  # warned 30 hours ago; sweeps failed since
    publish(iid, now, gpus=[idle(300)], cpu=idle(300))  # 25 hours, all idle
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert state_of(iid) == "running"
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == formatting.format_time(now)
    assert [m.channel for m in slack.messages] == ["U0ALICE"]
    assert "costguard stops it *" in json.dumps(slack.messages[0].blocks)


def test_one_region_failing_does_not_stop_the_others_and_fails_the_run(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack, governed_regions=(REGION, "eu-west-1"))
    iid = launch(now)
    publish(iid, now, gpus=[idle()])
    with Stubber(runtime.client("ec2", "eu-west-1")) as broken:
        # Both listings fail: the stopped machines to start first, then the running fleet.
        for _ in range(2):
            broken.add_client_error("describe_instances", "RequestLimitExceeded", http_status_code=503)
        with pytest.raises(app.SweepIncomplete, match="eu-west-1: ClientError"):
            run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert tags.IDLE_WARNED_AT in tags_of(iid), "us-east-1 was swept"


# ------------------------------------------------------------------ work the averages hide


def test_a_gpu_agent_silent_for_13_days_keeps_its_machine_from_being_judged_idle(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, hours=14 * 24)
    # The agent published GPU metrics until 13 days ago, then hung during a run; CPU is still reported.
    publish(iid, now - timedelta(days=13), gpus=[idle(), idle()], cpu=[])
    publish(iid, now, cpu=[2.0] * 36, core=[3.0] * 36)

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)["regions"][REGION]

    assert result["warned"] == []
    assert slack.messages == []
    assert iid not in result["no_gpu_telemetry"]


def test_one_busy_core_on_a_192_vcpu_host_is_not_warned_about(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, instance_type="p5.48xlarge")
    # Tokenization on one core of 192: CPUUtilization reads 0.52%, every GPU 0; no busiest-core metric.
    publish(iid, now, gpus=[[0.0] * 36] * 8, cpu=[100 / 192] * 36, core=[])

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)["regions"][REGION]

    assert result["warned"] == []
    assert slack.messages == []


def test_a_sweep_short_of_time_leaves_slack_work_to_the_next_and_ends_normally(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    machines = sorted([launch(now), launch(now)])
    for iid in machines:
        publish(iid, now, gpus=[idle()])
    monkeypatch.setattr(runtime, "time_left", lambda: 20.0)  # the invocation is nearly out of time

    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)  # no exception: nothing to retry

    region = result["regions"][REGION]
    assert (region["warned"], sorted(region["deferred"])) == ([], machines)
    assert slack.messages == []
    assert all(tags.IDLE_WARNED_AT not in tags_of(iid) for iid in machines)
    assert ledger_kinds() == []
    monkeypatch.setattr(runtime, "time_left", lambda: 280.0)
    again = run(SWEEP, runtime, now, lambda_context, monkeypatch)  # the next run, on the same data
    assert sorted(again["regions"][REGION]["warned"]) == machines, "the next run carries on"
    assert len(slack.messages) == 1  # alice's two machines, in one warning


def test_many_owners_are_found_with_one_users_list_walk_and_kept_for_every_later_run(
    aws: None, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    owners = {f"owner{n}@example.com": f"U{n:05d}" for n in range(30)}
    slack = SlackStandIn(users=owners).start()
    try:
        runtime = make_runtime(slack)
        for email in owners:
            publish(launch(now, owner=email), now, gpus=[idle()])
        result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
        assert len(result["regions"][REGION]["warned"]) == 30
        assert slack.calls.count("users.list") == 1
        assert slack.calls.count("users.lookupByEmail") == 0
        assert {m.channel for m in slack.messages} == set(owners.values())  # each by direct message
        # Another container, another function: the ids come from the state table, not from Slack.
        slack.calls.clear()
        fresh = Runtime(runtime.settings, ClientFactory(default_region=REGION))
        assert fresh.notifier.user_id_for("owner7@example.com") == "U00007"
        assert slack.calls == []
        slack.assert_all_accepted()
    finally:
        slack.stop()


# ------------------------------------------------------------------ working hours


def schedule_around(now: datetime, hours_from: int, hours_to: int) -> str:
    """A daily window in UTC from now + hours_from to now + hours_to (hours may be negative)."""
    start, end = now + timedelta(hours=hours_from), now + timedelta(hours=hours_to)
    return f"daily {start:%H:%M}-{end:%H:%M} UTC"


def test_inside_its_working_hours_an_idle_machine_is_left_alone_and_after_them_warned(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags={tags.SCHEDULE: schedule_around(now, -3, 1)})
    publish(iid, now, gpus=[idle()])
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert result["regions"][REGION]["skipped"][iid].startswith("inside its working hours")
    assert slack.messages == []
    ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.SCHEDULE, "Value": schedule_around(now, -5, -1)}])
    after = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert after["regions"][REGION]["warned"] == [iid]  # outside its hours, the idle rule applies


def test_a_stopped_machine_is_started_shortly_before_its_window_and_only_then(
    runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = launch(now, tags={tags.SCHEDULE: schedule_around(now, 0, 8)})  # opens in under 15 minutes
    later = launch(now, tags={tags.SCHEDULE: schedule_around(now, 2, 8)})  # opens in two hours
    plain = launch(now)
    ec2().stop_instances(InstanceIds=[soon, later, plain])
    monkeypatch.setattr(runtime, "now", lambda: now)
    result = run(SWEEP, runtime, now - timedelta(minutes=10), lambda_context, monkeypatch)
    assert result["regions"][REGION]["started"] == [soon]
    assert state_of(soon) in ("pending", "running")
    assert (state_of(later), state_of(plain)) == ("stopped", "stopped")
    assert ("morning-start", soon) in ledger_kinds()


def test_an_unreadable_schedule_keeps_the_machine_and_tells_its_owner_once(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags={tags.SCHEDULE: "weekdays 9-5"})
    publish(iid, now, gpus=[idle()])
    for _ in range(2):
        result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert "cannot be read" in result["regions"][REGION]["skipped"][iid]
    [note] = slack.messages
    assert (note.channel, note.direct) == ("U0ALICE", True)
    assert "weekdays 9-5" in note.text + json.dumps(note.blocks)


def test_dry_run_tells_no_owner_about_an_unreadable_schedule(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack, mode=Mode.DRY_RUN)
    iid = launch(now, tags={tags.SCHEDULE: "weekdays 9-5"})
    publish(iid, now, gpus=[idle()])
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert "cannot be read" in result["regions"][REGION]["skipped"][iid]
    assert slack.messages == []


def test_with_the_morning_note_the_owner_is_told_their_machine_is_starting_once(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = launch(now, tags={tags.SCHEDULE: schedule_around(now, 0, 8)})  # opens in under 15 minutes
    ec2().stop_instances(InstanceIds=[soon])
    monkeypatch.setattr(runtime, "now", lambda: now - timedelta(minutes=10))
    policy = dataclasses.replace(POLICY, morning_note=True)
    for _ in range(2):  # a second sweep in the lead starts nothing and says nothing
        result = app.lambda_handler(SWEEP, lambda_context, runtime=runtime, policy=policy)
    assert result["regions"][REGION]["started"] == []
    [note] = slack.messages
    assert (note.channel, note.direct) == ("U0ALICE", True)
    assert f"is starting for its working hours (`{schedule_around(now, 0, 8)}`)" in json.dumps(note.blocks)


def test_without_the_morning_note_a_morning_start_says_nothing(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    soon = launch(now, tags={tags.SCHEDULE: schedule_around(now, 0, 8)})
    ec2().stop_instances(InstanceIds=[soon])
    result = run(SWEEP, runtime, now - timedelta(minutes=10), lambda_context, monkeypatch)
    assert result["regions"][REGION]["started"] == [soon]
    assert slack.messages == []


def test_a_machine_started_and_stopped_at_the_same_hours_is_offered_working_hours_in_its_warning(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    # EC2's state changes of the five days before (core/working_hours.py wants five): started about 08:00,
    # stopped about 19:00 UTC
    for back in range(1, 6):
        day = (now - timedelta(days=back)).replace(hour=0, minute=0, second=0, microsecond=0)
        for at, state in (
            (day + timedelta(hours=8, minutes=5 * back), "running"),
            (day + timedelta(hours=19), "stopped"),
        ):
            change = load_event("idle_stopper/ec2-state-running.json")
            change["time"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
            change["detail"] = {"instance-id": iid, "state": state}
            run(change, runtime, now, lambda_context, monkeypatch)
    publish(iid, now, gpus=[idle()])
    result = run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert result["regions"][REGION]["warned"] == [iid]
    [warning] = slack.messages
    text = json.dumps(warning.blocks)
    assert "Keeps regular hours? Tag it `costguard:schedule=" in text
    assert "08:00-20:00 UTC`" in text


def test_a_machine_without_regular_hours_is_offered_none(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle()])
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    [warning] = slack.messages
    assert "Keeps regular hours" not in json.dumps(warning.blocks)


def test_the_rules_that_read_a_machines_nights_are_given_the_gpu_memory_series_the_sweep_found(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A job that begins by waiting holds its GPU memory at 0 % use: a machine that cannot answer its check has
    # its nights read with its memory (reads/fortnights.py), so the series the sweep discovers must reach them.
    given: list[Any] = []
    original = SweepFacts

    def facts(**kwargs: Any) -> Any:
        given.append(kwargs.get("memory_series"))
        return original(**kwargs)

    monkeypatch.setattr(module, "SweepFacts", facts)
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    publish_gpu(iid, now, "nvidia_smi_memory_used", [30_000.0] * 36)
    run(SWEEP, runtime, now, lambda_context, monkeypatch)
    assert given, "no warning or stop went through the rules"
    assert [dict(dims).get("index") for dims in given[0][iid]] == ["0"]
