"""The demo's ML fleet: instances, an Auto Scaling group, CloudWatch history, CloudTrail launches.

Realistic on purpose: GPU types of several generations, people who launch from the CLI, from an
assumed role, from IAM Identity Center and as root, a group launched by Auto Scaling, a one-time Spot
instance, instances in a second region that only the backfill sees, and one nobody can account for.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from demo.aws_gaps import AwsGaps

HOME = "us-east-1"
OTHER = "us-west-2"
AMI = "ami-12c6146b"
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
    gpu_pattern: str = ""  # "busy", "idle" or "" for no GPU telemetry
    cpu_pattern: str = "idle"
    spot: bool = False
    instance_id: str = ""


def person(user: str) -> dict[str, Any]:
    return {
        "type": "AssumedRole",
        "arn": f"arn:aws:sts::123456789012:assumed-role/ml-research/{user}",
        "sessionContext": {
            "sessionIssuer": {
                "type": "Role",
                "arn": "arn:aws:iam::123456789012:role/ml-research",
                "userName": "ml-research",
            }
        },
    }


def iam_user(user: str) -> dict[str, Any]:
    return {"type": "IAMUser", "arn": f"arn:aws:iam::123456789012:user/{user}", "userName": user}


FLEET = [
    Machine(
        "alice-train",
        HOME,
        "p4d.24xlarge",
        "fine-tuning run, GPUs busy",
        "runinstances-iam-user.json",
        gpu_pattern="busy",
        cpu_pattern="busy",
    ),
    Machine(
        "bob-notebook",
        HOME,
        "g5.12xlarge",
        "notebook left open over lunch",
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
    Machine("root-test", HOME, "g6.xlarge", "launched as root to test a driver", "runinstances-root.json"),
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
        "one-time Spot job from last week",
        history_identity=person("erin@example.com"),
        gpu_pattern="idle",
        spot=True,
    ),
    Machine(
        "frank-west",
        OTHER,
        "g5.xlarge",
        "launched in us-west-2 (no real-time event there)",
        history_identity=iam_user("frank"),
        gpu_pattern="idle",
    ),
    Machine("mystery-west", OTHER, "g4dn.xlarge", "no launch in CloudTrail's 90 days"),
    Machine(
        "grace-west",
        OTHER,
        "g5.xlarge",
        "owner tagged by hand",
        launch_tags={"Owner": "grace@example.com"},
        gpu_pattern="busy",
        cpu_pattern="busy",
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


def seed(clients: Any, gaps: AwsGaps, now: datetime | None = None) -> SeededFleet:
    """Create the fleet through the emulated AWS APIs; record launches in the demo's CloudTrail."""
    now = now or datetime.now(UTC)
    for machine in FLEET:
        ec2 = clients("ec2", machine.region)
        params: dict[str, Any] = {"ImageId": AMI, "MinCount": 1, "MaxCount": 1, "InstanceType": machine.instance_type}
        tags = {"Name": machine.name, **machine.launch_tags}
        params["TagSpecifications"] = [
            {"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}
        ]
        if machine.spot:
            params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {"SpotInstanceType": "one-time"}}
        machine.instance_id = ec2.run_instances(**params)["Instances"][0]["InstanceId"]
        if machine.history_identity:
            gaps.add_launch(
                machine.region, launch_record(machine, machine.history_identity, now - timedelta(minutes=3))
            )

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
    seed_metrics(clients, now, asg_instances)
    return SeededFleet(FLEET, asg_instances, now)


def launch_record(machine: Machine, identity: dict[str, Any], when: datetime) -> dict[str, Any]:
    """A RunInstances CloudTrail record in the same shape as the events/ fixtures."""
    record: dict[str, Any] = copy.deepcopy(
        json.loads((EVENTS / "owner_tagger/runinstances-iam-user.json").read_text())["detail"]
    )
    record.update(userIdentity=identity, eventTime=when.strftime("%Y-%m-%dT%H:%M:%SZ"), awsRegion=machine.region)
    record["eventID"] = f"demo-{machine.name}"
    record["requestParameters"]["instanceType"] = machine.instance_type
    item = record["responseElements"]["instancesSet"]["items"][0]
    item.update(instanceId=machine.instance_id, instanceType=machine.instance_type)
    return record


def launch_event(machine: Machine) -> dict[str, Any]:
    """The events/owner_tagger payload for this machine, pointed at its real instance id."""
    event: dict[str, Any] = json.loads((EVENTS / "owner_tagger" / machine.launch_event).read_text())
    event["detail"]["responseElements"]["instancesSet"]["items"][0]["instanceId"] = machine.instance_id
    return event


def seed_metrics(clients: Any, now: datetime, asg_instances: list[str], hours: int = 3) -> None:
    """CPUUtilization and CWAgent nvidia_smi_utilization_gpu, one point every 5 minutes."""
    rng = random.Random(42)
    points = [now - timedelta(minutes=5 * k) for k in range(hours * 12, 0, -1)]
    series: dict[str, list[dict[str, Any]]] = {}
    level = {"busy": (70.0, 99.0), "idle": (0.0, 2.5)}
    machines = [
        *FLEET,
        *(
            Machine(f"{ASG_NAME}-{n}", HOME, "g5.2xlarge", "", gpu_pattern="busy" if n == 0 else "idle", instance_id=i)
            for n, i in enumerate(asg_instances)
        ),
    ]
    for machine in machines:
        datums = series.setdefault(machine.region, [])
        cpu = level["busy"] if machine.cpu_pattern == "busy" else (0.5, 4.0)
        for at in points:
            datums.append(
                {
                    "MetricName": "CPUUtilization",
                    "Dimensions": [{"Name": "InstanceId", "Value": machine.instance_id}],
                    "Timestamp": at,
                    "Value": round(rng.uniform(*cpu), 2),
                    "Unit": "Percent",
                    "_ns": "AWS/EC2",
                }
            )
        if machine.gpu_pattern and machine.instance_type in GPUS:
            name, arch, count = GPUS[machine.instance_type]
            for index in range(count):
                dims = [
                    {"Name": "InstanceId", "Value": machine.instance_id},
                    {"Name": "index", "Value": str(index)},
                    {"Name": "name", "Value": name},
                    {"Name": "arch", "Value": arch},
                ]
                for at in points:
                    datums.append(
                        {
                            "MetricName": "nvidia_smi_utilization_gpu",
                            "Dimensions": dims,
                            "Timestamp": at,
                            "Value": round(rng.uniform(*level[machine.gpu_pattern]), 1),
                            "Unit": "Percent",
                            "_ns": "CWAgent",
                        }
                    )
    for region, datums in series.items():
        cloudwatch = clients("cloudwatch", region)
        for namespace in ("AWS/EC2", "CWAgent"):
            batch = [{k: v for k, v in d.items() if k != "_ns"} for d in datums if d["_ns"] == namespace]
            for start in range(0, len(batch), 500):
                cloudwatch.put_metric_data(Namespace=namespace, MetricData=batch[start : start + 500])
