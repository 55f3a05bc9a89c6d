"""The demo's ML fleet: instances, an Auto Scaling group, CloudWatch history, CloudTrail launches.

Realistic on purpose: GPU types of several generations, people who launch from the CLI, from an
assumed role, from IAM Identity Center and as root, a group launched by Auto Scaling, a one-time Spot
instance, instances in a second region that only the backfill sees, one nobody can account for, a
notebook left idle, a machine that gets back to work during its grace period, one just started.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from costguard.aws.costexplorer import EC2_COMPUTE, periods
from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from costguard.core.records import vcpus_of_type
from testing import launches, moto_fixes
from testing.aws_gaps import AwsGaps
from testing.launches import AMI, iam_user, launch_record, person

HOME = "us-east-1"
OTHER = "us-west-2"
EVENTS = Path(__file__).resolve().parents[1] / "events"

# What the CloudWatch agent's nvidia_smi plugin reports as `name` and `arch`, and how many GPUs.
GPUS: dict[str, tuple[str, str, int]] = {
    "p4d.24xlarge": ("NVIDIA A100-SXM4-40GB", "Ampere", 8),
    "p5.48xlarge": ("NVIDIA H100 80GB HBM3", "Hopper", 8),
    "g5.12xlarge": ("NVIDIA A10G", "Ampere", 4),
    "g5.2xlarge": ("NVIDIA A10G", "Ampere", 1),
    "g5.xlarge": ("NVIDIA A10G", "Ampere", 1),
    "g6.xlarge": ("NVIDIA L4", "Ada Lovelace", 1),
    "g4dn.xlarge": ("Tesla T4", "Turing", 1),
}


# The demo's Spot prices, as a share of on-demand, by zone letter (illustrative, not AWS's).
SPOT_SHARE = {"a": 0.40, "b": 0.38, "c": 0.45}

# Whoever can launch an instance writes its tags: this one pings the channel with a link, if posted raw.
HOSTILE_OWNER = "<!channel> <https://example.com|re-authenticate>"


@dataclass
class Machine:
    """One seeded instance and the story the demo tells about it."""

    name: str
    region: str
    instance_type: str
    story: str
    launch_event: str = ""  # events/owner_tagger fixture used on the real-time launch path
    history_identity: dict[str, Any] | None = None  # a CloudTrail record only the backfill finds
    launch_tags: dict[str, str] = field(default_factory=dict)
    gpu_pattern: str = ""  # "busy", "idle", "wakes" (idle, then busy for the last 15 min), "" = no GPU metrics
    cpu_pattern: str = "idle"
    spot: bool = False
    hours_running: float = 6.0
    instance_id: str = ""
    # Working hours (costguard:schedule), as hours from the demo's present: a daily window in UTC.
    schedule_hours: tuple[float, float] | None = None
    stopped: bool = False  # stopped when the demo starts
    gpus_used: int = 0  # when busy, only this many of its GPUs work (0: all of them)


FLEET = [
    Machine(
        "alice-train",
        HOME,
        "p4d.24xlarge",
        "fine-tuning run, all 8 GPUs busy",
        "runinstances-iam-user.json",
        gpu_pattern="busy",
        cpu_pattern="busy",
    ),
    Machine(
        "bob-notebook",
        HOME,
        "g5.12xlarge",
        "notebook left open since Friday afternoon",
        "runinstances-assumed-role.json",
        gpu_pattern="idle",
    ),
    Machine(
        "carol-eval",
        HOME,
        "p5.48xlarge",
        "evaluation sweep",
        "runinstances-identity-center.json",
        gpu_pattern="busy",
        cpu_pattern="busy",
    ),
    Machine(
        "root-test", HOME, "g6.xlarge", "launched as root to test a driver; no GPU agent", "runinstances-root.json"
    ),
    Machine(
        "dave-prep",
        HOME,
        "c6i.4xlarge",
        "CPU data prep, owner tagged at launch",
        "runinstances-launch-tagged.json",
        launch_tags={"Owner": "dave@example.com"},
        cpu_pattern="busy",
    ),
    Machine(
        "erin-spot",
        HOME,
        "g5.2xlarge",
        "one-time Spot job, idle",
        history_identity=person("erin@example.com"),
        gpu_pattern="idle",
        spot=True,
    ),
    Machine(
        "frank-west",
        OTHER,
        "g5.xlarge",
        "us-west-2 (no real-time event there); back at work during its grace period",
        history_identity=iam_user("frank"),
        gpu_pattern="wakes",
    ),
    Machine("mystery-west", OTHER, "g4dn.xlarge", "no launch in CloudTrail's 90 days; no GPU agent"),
    Machine(
        "grace-west",
        OTHER,
        "g5.xlarge",
        "owner tagged by hand, busy",
        launch_tags={"Owner": "grace@example.com"},
        gpu_pattern="busy",
        cpu_pattern="busy",
    ),
    Machine(
        "henry-tokenize",
        HOME,
        "p5.48xlarge",
        "tokenizing a corpus on one core of 192: CPUUtilization 0.5 %, every GPU 0 %",
        launch_tags={"Owner": "henry@example.com"},
        gpu_pattern="idle",
        cpu_pattern="one-core",
    ),
    Machine(
        "kim-notebook",
        HOME,
        "g5.12xlarge",
        "notebook idle since the early hours; kim logs in a minute before the stop",
        launch_tags={"Owner": "kim@example.com"},
        gpu_pattern="idle",
    ),
    Machine(
        "leo-finetune",
        HOME,
        "g5.2xlarge",
        "a fine-tune waiting for its data; leo keeps it while it works",
        launch_tags={"Owner": "leo@example.com"},
        gpu_pattern="idle",
    ),
    Machine(
        "mallory-gpu",
        HOME,
        "g5.xlarge",
        "its Owner tag pings the channel with a login link, if posted raw; shown as plain text",
        launch_tags={"Owner": HOSTILE_OWNER},
        gpu_pattern="idle",
    ),
    Machine(
        "nina-nightly",
        HOME,
        "g5.2xlarge",
        "a nightly pipeline box, idle between steps, inside its working hours (costguard:schedule)",
        launch_tags={"Owner": "nina@example.com"},
        gpu_pattern="idle",
        schedule_hours=(-5, 2),
    ),
    Machine(
        "omar-morning",
        HOME,
        "g5.xlarge",
        "stopped overnight; its working hours open in 5 minutes: costguard starts it",
        launch_tags={"Owner": "omar@example.com"},
        schedule_hours=(5 / 60, 9),
        stopped=True,
    ),
    Machine(
        "ivy-new",
        HOME,
        "g6.xlarge",
        "started 20 minutes before costguard's first sweep: too new to judge all morning",
        launch_tags={"Owner": "ivy@example.com"},
        gpu_pattern="idle",
        hours_running=70 / 60,
    ),
    Machine(
        "pat-finetune",
        HOME,
        "g5.12xlarge",
        "fine-tunes a small model on one of its 4 GPUs, office hours, all week",
        launch_tags={"Owner": "pat@example.com"},
        gpu_pattern="busy",
        gpus_used=1,
        hours_running=9 * 24,
    ),
]
ASG_NAME = "inference-g5"
ASG_OWNER = "team-inference"


@dataclass
class SeededFleet:
    machines: list[Machine]
    asg_instances: list[str]
    now: datetime

    def by_id(self) -> dict[str, Machine]:
        return {m.instance_id: m for m in self.machines}

    def named(self, name: str) -> Machine:
        return next(m for m in self.machines if m.name == name)


def seed(clients: Any, gaps: AwsGaps, now: datetime) -> SeededFleet:
    """Create the fleet through the emulated AWS APIs, as it stands at `now`; record launches in CloudTrail."""
    for machine in FLEET:
        ec2 = clients("ec2", machine.region)
        params: dict[str, Any] = {"ImageId": AMI, "MinCount": 1, "MaxCount": 1, "InstanceType": machine.instance_type}
        tags = {"Name": machine.name, **machine.launch_tags}
        if machine.schedule_hours is not None:
            opens, closes = (now + timedelta(hours=h) for h in machine.schedule_hours)
            tags["costguard:schedule"] = f"daily {opens:%H:%M}-{closes:%H:%M} UTC"
        params["TagSpecifications"] = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
        if machine.spot:
            params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}}
        machine.instance_id = ec2.run_instances(**params)["Instances"][0]["InstanceId"]
        launched = now - timedelta(hours=machine.hours_running)
        moto_fixes.set_launch_time(machine.instance_id, machine.region, launched)
        if machine.stopped:
            ec2.stop_instances(InstanceIds=[machine.instance_id])
        if machine.history_identity:
            gaps.add_launch(
                machine.region,
                launch_record(
                    instance_id=machine.instance_id,
                    region=machine.region,
                    instance_type=machine.instance_type,
                    identity=machine.history_identity,
                    when=launched,
                    event_id=f"demo-{machine.name}",
                ),
            )
        if machine.instance_type in BUNDLED_USD_PER_HOUR:
            gaps.prices[(machine.instance_type, machine.region)] = BUNDLED_USD_PER_HOUR[machine.instance_type]
            for zone, share in SPOT_SHARE.items():  # Spot at 38-45 % of on-demand, as often seen for GPUs
                on_demand = BUNDLED_USD_PER_HOUR[machine.instance_type]
                gaps.spot_prices[(machine.instance_type, f"{machine.region}{zone}")] = round(on_demand * share, 4)

    ec2 = clients("ec2", HOME)
    autoscaling = clients("autoscaling", HOME)
    ec2.create_launch_template(
        LaunchTemplateName=ASG_NAME, LaunchTemplateData={"ImageId": AMI, "InstanceType": "g5.2xlarge"}
    )
    autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=ASG_NAME,
        LaunchTemplate={"LaunchTemplateName": ASG_NAME},
        MinSize=2,
        MaxSize=4,
        DesiredCapacity=2,
        AvailabilityZones=[f"{HOME}a"],
        Tags=[
            {
                "Key": "Owner",
                "Value": ASG_OWNER,
                "PropagateAtLaunch": False,
                "ResourceId": ASG_NAME,
                "ResourceType": "auto-scaling-group",
            }
        ],
    )
    group = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[ASG_NAME])["AutoScalingGroups"][0]
    asg_instances = [i["InstanceId"] for i in group["Instances"]]
    for instance_id in asg_instances:
        moto_fixes.set_launch_time(instance_id, HOME, now - timedelta(hours=5))
    # The second member starts protected from scale-in; idle, it should be released.
    autoscaling.set_instance_protection(
        AutoScalingGroupName=ASG_NAME, InstanceIds=asg_instances[1:], ProtectedFromScaleIn=True
    )
    gaps.prices[("g5.2xlarge", HOME)] = BUNDLED_USD_PER_HOUR["g5.2xlarge"]
    seed_metrics(clients, now, asg_instances)
    return SeededFleet(FLEET, asg_instances, now)


def seed_metrics(clients: Any, now: datetime, asg_instances: list[str], hours: int = 4) -> None:
    """CPUUtilization, and from the CloudWatch agent nvidia_smi_utilization_gpu and the busiest core
    (cpu_usage_active by InstanceId), one point every 5 minutes until `now`."""
    rng = random.Random(42)
    points = [now - timedelta(minutes=5 * k) for k in range(hours * 12, 0, -1)]
    series: dict[str, dict[str, list[dict[str, Any]]]] = {}
    level = {"busy": (70.0, 99.0), "idle": (0.0, 2.5)}
    members = [
        Machine(f"{ASG_NAME}-{n}", HOME, "g5.2xlarge", "", gpu_pattern="busy" if n == 0 else "idle", instance_id=i)
        for n, i in enumerate(asg_instances)
    ]
    for index, member in enumerate(members):
        member.cpu_pattern = "busy" if index == 0 else "idle"
        member.hours_running = 5
    for machine in [*FLEET, *members]:
        ec2, agent = series.setdefault(machine.region, {"AWS/EC2": [], "CWAgent": []}).values()
        by_instance = [{"Name": "InstanceId", "Value": machine.instance_id}]
        launched = now - timedelta(hours=machine.hours_running)
        moments = [p for p in points if p >= launched]
        cpu = level["busy"] if machine.cpu_pattern == "busy" else (0.5, 4.0)
        if machine.cpu_pattern == "one-core":  # one busy core, as an average over every vCPU
            vcpus = vcpus_of_type(machine.instance_type)
            cpu = (100 / vcpus, 100 / vcpus + 0.05)
        core = (95.0, 100.0) if machine.cpu_pattern in ("busy", "one-core") else (2.0, 20.0)
        for at in moments:
            if machine.gpu_pattern:  # the agent runs: the busiest core too
                agent.append(percent("cpu_usage_active", by_instance, at, round(rng.uniform(*core), 2)))
            ec2.append(percent("CPUUtilization", by_instance, at, round(rng.uniform(*cpu), 2)))
        if not machine.gpu_pattern or machine.instance_type not in GPUS:
            continue
        name, arch, count = GPUS[machine.instance_type]
        for gpu in range(count):
            dims = gpu_dims(machine.instance_id, gpu, name, arch)
            for at in moments:
                pattern = machine.gpu_pattern
                if pattern == "wakes":
                    pattern = "busy" if at >= now - timedelta(minutes=15) else "idle"
                if machine.gpus_used and gpu >= machine.gpus_used:
                    pattern = "idle"
                agent.append(percent("nvidia_smi_utilization_gpu", dims, at, round(rng.uniform(*level[pattern]), 1)))
    _put_series(clients, series)


def percent(name: str, dims: list[dict[str, str]], at: datetime, value: float) -> dict[str, Any]:
    return {"MetricName": name, "Dimensions": dims, "Timestamp": at, "Value": value, "Unit": "Percent"}


def gpu_dims(instance_id: str, index: int, name: str, arch: str) -> list[dict[str, str]]:
    """The dimensions the agent's nvidia_smi plugin gives one GPU's series."""
    return [
        {"Name": "InstanceId", "Value": instance_id},
        {"Name": "index", "Value": str(index)},
        {"Name": "name", "Value": name},
        {"Name": "arch", "Value": arch},
    ]


def _put_series(clients: Any, series: dict[str, dict[str, list[dict[str, Any]]]]) -> int:
    """Every region's datums, by namespace, in PutMetricData's batches; the number of datums written."""
    count = 0
    for region, namespaces in series.items():
        cloudwatch = clients("cloudwatch", region)
        for namespace, data in namespaces.items():
            count += len(data)
            for start in range(0, len(data), 1000):
                cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
    return count


# How much each machine cost on the same days of last month, relative to this month.
LAST_MONTH = {"alice-train": 0.45, "carol-eval": 0.0, "bob-notebook": 1.1}
OTHER_SERVICES = {
    "Amazon SageMaker": (1212.0, 900.0),
    "Amazon Simple Storage Service": (300.0, 310.0),
    "AmazonCloudWatch": (45.0, 40.0),
}


def seed_billing(gaps: AwsGaps, seeded: SeededFleet, today: datetime, month_to_date: float) -> None:
    """Cost Explorer's view of the fleet, Reserved Instances and a Savings Plan, for the demo's gap proxy."""
    (start, end), (previous_start, _) = periods(today.date())
    days = max(1, (end - start).days)
    raw: list[tuple[Machine, float, float]] = []
    for machine in seeded.machines:
        hourly = BUNDLED_USD_PER_HOUR.get(machine.instance_type, 0.68)  # c6i.4xlarge and the like
        current = hourly * 24 * days
        raw.append((machine, current, current * LAST_MONTH.get(machine.name, 0.9)))
    others = sum(c for c, _ in OTHER_SERVICES.values())
    scale = (month_to_date - others) / sum(c for _, c, _ in raw)
    ec2_now = sum(c for _, c, _ in raw) * scale
    ec2_before = sum(p for _, _, p in raw) * scale
    services = {EC2_COMPUTE: (ec2_now, ec2_before), **OTHER_SERVICES}
    by_type: dict[str, list[float]] = {}
    by_owner: dict[str, list[float]] = {}
    for machine, current, previous in raw:
        for table, key in (
            (by_type, machine.instance_type),
            (by_owner, f"Owner${machine.launch_tags.get('Owner', _OWNERS.get(machine.name, ''))}"),
        ):
            totals = table.setdefault(key, [0.0, 0.0])
            totals[0] += current * scale
            totals[1] += previous * scale
    tables: list[tuple[str, dict[str, Any]]] = [("SERVICE", services), ("INSTANCE_TYPE", by_type), ("Owner", by_owner)]
    for key, table in tables:
        gaps.costs[(key, start.isoformat())] = {k: v[0] for k, v in table.items()}
        gaps.costs[(key, previous_start.isoformat())] = {k: v[1] for k, v in table.items()}
    month_days = 30
    gaps.forecast_rest_of_month = month_to_date / days * (month_days - days)
    for back in range(1, 15):  # the digest's spend: the last week ran hotter than the one before
        day = today.date() - timedelta(days=back)
        gaps.daily_spend[day.isoformat()] = month_to_date / days * (1.0 if back <= 7 else 0.82)

    def stamp(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    expiring = today + timedelta(days=30, hours=3)
    later = today + timedelta(days=200)
    gaps.reserved_instances[HOME] = [
        {
            "ReservedInstancesId": "9d5cb137-5d65-4479-b4ac-8c3370000001",
            "InstanceType": "p4d.24xlarge",
            "InstanceCount": 2,
            "Start": stamp(expiring - timedelta(days=365)),
            "End": stamp(expiring),
            "OfferingType": "No Upfront",
            "OfferingClass": "convertible",
        },
        {
            "ReservedInstancesId": "4b1d0c2e-7f3a-4a8e-9d6c-2f1e0d9c0002",
            "InstanceType": "g5.12xlarge",
            "InstanceCount": 4,
            "Start": stamp(later - timedelta(days=365)),
            "End": stamp(later),
            "OfferingType": "Partial Upfront",
            "OfferingClass": "standard",
        },
    ]
    gaps.utilization["9d5cb137-5d65-4479-b4ac-8c3370000001"] = 96.4
    gaps.utilization["4b1d0c2e-7f3a-4a8e-9d6c-2f1e0d9c0002"] = 38.2
    plan_arn = "arn:aws:savingsplans::123456789012:savingsplan/3f9e8d7c-6b5a-4e3d-9c2b-1a0f9e8d0003"
    gaps.savings_plans = [
        {
            "savingsPlanId": "3f9e8d7c-6b5a-4e3d-9c2b-1a0f9e8d0003",
            "savingsPlanArn": plan_arn,
            "start": stamp(today - timedelta(days=65)),
            "end": stamp(today + timedelta(days=300)),
            "state": "active",
            "savingsPlanType": "Compute",
            "paymentOption": "No Upfront",
            "commitment": "12.5",
            "currency": "USD",
        }
    ]
    gaps.utilization[plan_arn] = 91.0
    gaps.coverage.update(ri=34.0, sp=41.0)


# Owners that the demo's real-time and backfill tagging give machines without a launch tag.
_OWNERS = {
    "alice-train": "alice",
    "bob-notebook": "bob@example.com",
    "carol-eval": "carol@example.com",
    "root-test": "root",
    "erin-spot": "erin@example.com",
    "frank-west": "frank",
    "mystery-west": "",
}


# How each machine spent the fortnight before the last four hours: which hours it ran, and whether busy.
def _week_pattern(name: str, at: datetime) -> str | None:
    """ "busy", "idle", or None when the machine was not running at that hour."""
    workday = at.weekday() < 5
    office = workday and 9 <= at.hour < 18
    patterns = {
        "alice-train": "busy",
        "carol-eval": "busy" if at >= _NOW[0] - timedelta(days=3) else None,
        "bob-notebook": "busy" if office and at.hour in (10, 11, 14) else "idle",
        "root-test": "idle" if at >= _NOW[0] - timedelta(days=5) else None,
        "erin-spot": "idle" if at >= _NOW[0] - timedelta(days=2) else None,
        "frank-west": ("busy" if office else "idle") if workday else None,
        "pat-finetune": "busy" if 8 <= at.hour < 19 else None,
        "grace-west": "busy" if office else None,
        "mystery-west": "idle",
        "inference-g5 #1": "busy",
        "inference-g5 #2": "idle" if not office else "busy",
    }
    if name == "bob-notebook" and at < _NOW[0] - timedelta(days=7):
        return "busy" if office else None  # the week before, bob stopped his notebook at night
    return patterns.get(name)


_NOW: list[datetime] = []
# The machines `_week_pattern` tells the days of (the others: an office day, demo/week.py).
WEEK_NAMED = frozenset(
    {
        "alice-train",
        "carol-eval",
        "bob-notebook",
        "root-test",
        "erin-spot",
        "frank-west",
        "pat-finetune",
        "grace-west",
        "mystery-west",
        "inference-g5 #1",
        "inference-g5 #2",
    }
)


def seed_week(
    clients: Any,
    seeded: SeededFleet,
    now: datetime,
    off: dict[str, list[tuple[datetime, datetime]]] | None = None,
    pattern: Callable[[Machine, datetime], str | None] | None = None,
) -> int:
    """Hourly CPU and GPU points for the 14 days before the last four hours (the digest's fortnight), none while a
    machine was stopped (`off`: its stopped spans, by instance id). `pattern` tells whether a machine was busy,
    idle or not running at an hour (by default `_week_pattern`, which knows only the machines it names)."""
    _NOW[:] = [now]
    rng = random.Random(7)
    members = [
        Machine(f"{ASG_NAME} #{n + 1}", HOME, "g5.2xlarge", "", gpu_pattern="busy", instance_id=i)
        for n, i in enumerate(seeded.asg_instances)
    ]
    series: dict[str, dict[str, list[dict[str, Any]]]] = {}
    hours = [now - timedelta(hours=k, minutes=30) for k in range(14 * 24, 4, -1)]
    for machine in [*seeded.machines, *members]:
        ec2, agent = series.setdefault(machine.region, {"AWS/EC2": [], "CWAgent": []}).values()
        by_instance = [{"Name": "InstanceId", "Value": machine.instance_id}]
        gpus = GPUS.get(machine.instance_type, ("", "", 0)) if machine.gpu_pattern else ("", "", 0)
        for at in hours:
            state = pattern(machine, at) if pattern else _week_pattern(machine.name, at)
            if state is None or any(start <= at < end for start, end in (off or {}).get(machine.instance_id, ())):
                continue
            low, high = (60.0, 98.0) if state == "busy" else (0.2, 3.0)
            ec2.append(percent("CPUUtilization", by_instance, at, round(rng.uniform(low / 2, high / 2), 2)))
            if gpus[2]:  # the agent's busiest core, as the sweeps' own points (demo/week.py) carry it
                agent.append(percent("cpu_usage_active", by_instance, at, round(rng.uniform(low, high), 2)))
            for index in range(gpus[2]):
                dims = gpu_dims(machine.instance_id, index, gpus[0], gpus[1])
                spare = machine.gpus_used and index >= machine.gpus_used
                value = rng.uniform(0.0, 1.0) if spare else rng.uniform(low, high)
                agent.append(percent("nvidia_smi_utilization_gpu", dims, at, round(value, 1)))
    return _put_series(clients, series)


def launch_event(machine: Machine) -> dict[str, Any]:
    """The events/owner_tagger payload for this machine, pointed at its real instance id."""
    return launches.launch_event(machine.launch_event, machine.instance_id)


# The deep dive's quarter: how each machine's monthly cost moved over the three months (oldest first).
_QUARTER_SHAPE = {"alice-train": (0.5, 0.6, 1.0), "carol-eval": (0.0, 0.2, 0.9), "bob-notebook": (1.0, 1.0, 1.0)}
_TEAMS = {"alice-train": "nlp", "carol-eval": "nlp", "bob-notebook": "vision", "kim-notebook": "vision"}
# Other regions' on-demand prices, relative to the demo's (illustrative, not AWS's).
_REGION_FACTORS = {"us-east-2": 1.0, "eu-west-1": 1.12, "ap-northeast-1": 1.28, "ap-south-1": 0.95}


def seed_quarter(gaps: AwsGaps, seeded: SeededFleet, today: datetime, member: tuple[str, str, str, str]) -> None:
    """Cost Explorer's three months of EC2 compute by account, region, type, owner and team (and type x
    region) for the deep dive; `member` is (account, region, instance type, owner) of the member's box."""
    first = today.date().replace(day=1)
    months: list[str] = []
    for _ in range(3):
        first = (first - timedelta(days=1)).replace(day=1)
        months.insert(0, first.isoformat())
    rows: list[tuple[str, str, str, str, str, tuple[float, ...]]] = []
    for machine in seeded.machines:
        monthly = BUNDLED_USD_PER_HOUR.get(machine.instance_type, 0.68) * 24 * 30
        shape = _QUARTER_SHAPE.get(machine.name, (0.8, 0.9, 1.0))
        owner = machine.launch_tags.get("Owner", _OWNERS.get(machine.name, ""))
        team = _TEAMS.get(machine.name, "platform")
        rows.append(
            ("123456789012", machine.region, machine.instance_type, owner, team, tuple(monthly * f for f in shape))
        )
    account, region, instance_type, owner = member
    monthly = BUNDLED_USD_PER_HOUR[instance_type] * 24 * 30
    rows.append((account, region, instance_type, owner, "vision", (monthly, monthly, monthly)))
    tables: dict[tuple[str, ...], dict[tuple[str, ...], dict[str, float]]] = {}
    groupings = {
        ("LINKED_ACCOUNT",): lambda r: (r[0],),
        ("REGION",): lambda r: (r[1],),
        ("INSTANCE_TYPE",): lambda r: (r[2],),
        ("Owner",): lambda r: (f"Owner${r[3]}",),
        ("Team",): lambda r: (f"Team${r[4]}",),
        ("INSTANCE_TYPE", "REGION"): lambda r: (r[2], r[1]),
    }
    for keys, group_of in groupings.items():
        table = tables.setdefault(keys, {})
        for row in rows:
            by_month = table.setdefault(group_of(row), {})
            for month, amount in zip(months, row[5], strict=True):
                by_month[month] = by_month.get(month, 0.0) + amount
    gaps.quarter.update(tables)
    if gaps.anomaly_monitors:  # Cost Anomaly Detection, on, saw the quarter's jumps as they happened
        monitor = gaps.anomaly_monitors[0]["MonitorArn"]
        for machine in seeded.machines:
            _, middle, last = _QUARTER_SHAPE.get(machine.name, (0.8, 0.9, 1.0))
            monthly = BUNDLED_USD_PER_HOUR.get(machine.instance_type, 0.68) * 24 * 30
            if last - middle < 0.5:
                continue
            gaps.anomalies.append(
                {
                    "AnomalyId": f"demo-quarter-{machine.name}",
                    "AnomalyStartDate": f"{months[2][:8]}06",
                    "DimensionValue": "Amazon Elastic Compute Cloud - Compute",
                    "RootCauses": [
                        {
                            "Service": "Amazon Elastic Compute Cloud - Compute",
                            "Region": machine.region,
                            "LinkedAccount": "123456789012",
                            "UsageType": f"BoxUsage:{machine.instance_type}",
                        }
                    ],
                    "AnomalyScore": {"MaxScore": 0.88, "CurrentScore": 0.4},
                    "Impact": {"MaxImpact": round(monthly / 30, 2), "TotalImpact": round(monthly * (last - middle), 2)},
                    "MonitorArn": monitor,
                }
            )
    for (instance_type, region), price in list(gaps.prices.items()):
        if region == HOME:
            for other, factor in _REGION_FACTORS.items():
                gaps.prices.setdefault((instance_type, other), round(price * factor, 4))
