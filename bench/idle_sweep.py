"""One idle_stopper sweep over a fleet of GPU instances in moto: AWS API calls by operation vs the floor.

The fleet: N instances of 1, 4 and 8 GPUs (70/20/10 %), every one publishing CPU and per-GPU metrics;
10 % idle and never warned (a warning each), 5 % warned and idle through the grace period (a stop
each), the rest busy. Two sweeps: the first also creates the idle alarms; the second, on the same
data, is the steady state. moto is slow at this size (its GetMetricData scans every datapoint for
every query), so `index_metric_queries` in demo/moto_fixes.py indexes it, the window is 30 minutes
and the metrics cover 60: the number of calls depends on none of these.
"""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from bench.common import CallCounter, built_sizes, cold_import_seconds, save
from costguard.aws.clients import ClientFactory
from costguard.core import formatting, tags
from costguard.core.settings import IdlePolicy, Mode, Settings
from costguard.runtime import Runtime
from testing import moto_fixes
from testing.handlers import LambdaContext, load_handler
from testing.slack_standin import SlackStandIn
from testing.template import install_costguard

REGION = "us-east-1"
MIX = ((1, "g5.xlarge", 0.7), (4, "g5.12xlarge", 0.2), (8, "p4d.24xlarge", 0.1))


def seed(n: int, now: datetime) -> dict[str, Any]:
    ec2: Any = boto3.client("ec2", region_name=REGION)
    cloudwatch: Any = boto3.client("cloudwatch", region_name=REGION)
    instances: list[tuple[str, int]] = []
    for gpus, instance_type, share in MIX:
        count = round(n * share)
        for start in range(0, count, 100):
            batch = min(100, count - start)
            owner = f"user{len(instances) // 50}@example.com"
            reply = ec2.run_instances(
                ImageId="ami-12c6146b",
                MinCount=batch,
                MaxCount=batch,
                InstanceType=instance_type,
                TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": "Owner", "Value": owner}]}],
            )
            instances += [(i["InstanceId"], gpus) for i in reply["Instances"]]
    for iid, _ in instances:
        moto_fixes.set_launch_time(iid, REGION, now - timedelta(hours=3))
    idle_count, stop_count = n // 10, n // 20
    idle = {iid for iid, _ in instances[:idle_count]}
    to_stop = {iid for iid, _ in instances[idle_count : idle_count + stop_count]}
    warned_at = now - timedelta(minutes=40)
    ec2.create_tags(
        Resources=sorted(to_stop),
        Tags=[
            {"Key": tags.IDLE_WARNED_AT, "Value": formatting.format_time(warned_at)},
            {"Key": tags.STOP_AFTER, "Value": formatting.format_time(warned_at + timedelta(minutes=30))},
        ],
    )
    points = [now - timedelta(minutes=5 * k) for k in range(12, 0, -1)]
    cpu: list[dict[str, Any]] = []
    gpu: list[dict[str, Any]] = []
    series = 0
    for iid, gpus in instances:
        value = 1.0 if iid in idle or iid in to_stop else 60.0
        cpu += [
            {
                "MetricName": "CPUUtilization",
                "Dimensions": [{"Name": "InstanceId", "Value": iid}],
                "Timestamp": t,
                "Value": value,
            }
            for t in points
        ]
        for index in range(gpus):
            dims = [
                {"Name": "InstanceId", "Value": iid},
                {"Name": "index", "Value": str(index)},
                {"Name": "name", "Value": "NVIDIA A10G"},
                {"Name": "arch", "Value": "Ampere"},
            ]
            gpu += [
                {"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": dims, "Timestamp": t, "Value": value}
                for t in points
            ]
        series += 1 + gpus
    for namespace, data in (("AWS/EC2", cpu), ("CWAgent", gpu)):
        for start in range(0, len(data), 1000):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
    return {
        "instances": len(instances),
        "series": series,
        "gpu_series": series - len(instances),
        "warn": len(idle),
        "stop": len(to_stop),
    }


def run(n: int = 1000) -> dict[str, Any]:
    moto_fixes.apply()
    moto_fixes.index_metric_queries()
    slack = SlackStandIn(users={f"user{k}@example.com": f"U{k:04d}" for k in range(100)}).start()
    try:
        with mock_aws():
            t = datetime.now(UTC).replace(second=0, microsecond=0)
            now = t - timedelta(minutes=t.minute % 5)
            started = time.perf_counter()
            fleet = seed(n, now)
            seed_seconds = time.perf_counter() - started
            env = {"STATE_TABLE": "state", "SLACK_SECRET_NAME": "costguard/slack"}
            install_costguard(
                boto3.client("dynamodb", region_name=REGION),
                boto3.client("secretsmanager", region_name=REGION),
                env,
                json.dumps({"bot_token": slack.token}),
            )
            settings = Settings(
                mode=Mode.ENFORCE,
                slack_secret_name="costguard/slack",
                alerts_channel="C0ALERTS",
                digest_channel="C0ALERTS",
                owner_tag_key="Owner",
                email_domain="",
                governed_regions=(REGION,),
                state_table="state",
                state_ttl_days=30,
                slack_api_url=slack.api_url,
                home_region=REGION,
            )
            counter = CallCounter()
            runtime = Runtime(settings, ClientFactory(counter.session(), default_region=REGION))
            runtime.slack_credentials()
            handler = load_handler("idle_stopper").lambda_handler
            policy = IdlePolicy(window_minutes=30)
            sweeps = []
            for offset in (0, 1):
                counter.reset()
                clock = now + timedelta(minutes=offset)
                runtime.now = lambda clock=clock: clock  # type: ignore[method-assign,misc]
                started = time.perf_counter()
                result = handler({"costguard": "sweep"}, LambdaContext(), runtime=runtime, policy=policy)
                summary = result["regions"][REGION]
                sweeps.append(
                    {
                        "seconds_in_moto": round(time.perf_counter() - started, 1),
                        "api_calls": counter.reset(),
                        "warned": len(summary["warned"]),
                        "stopped": len(summary["stopped"]),
                        "alarms_created": summary["alarms_created"],
                        "slack_messages": len(slack.messages),
                    }
                )
                slack.messages.clear()
    finally:
        slack.stop()
    first = sweeps[0]
    floor = {
        "ec2:DescribeInstances": math.ceil(fleet["instances"] / 1000),
        "cloudwatch:ListMetrics": math.ceil(fleet["gpu_series"] / 500),
        "cloudwatch:GetMetricData": math.ceil(fleet["series"] / 500),
        "ec2:CreateTags (warnings, then the stops' record, 500 instances a call)": math.ceil(fleet["warn"] / 500)
        + math.ceil(fleet["stop"] / 500),
        "ec2:StopInstances (500 instances a call)": math.ceil(fleet["stop"] / 500),
    }
    core = {
        k: v
        for k, v in first["api_calls"].items()
        if k.split(":")[0] in ("ec2",) or k in ("cloudwatch:ListMetrics", "cloudwatch:GetMetricData")
    }
    return {
        "fleet": fleet,
        "seed_seconds": round(seed_seconds, 1),
        "sweeps": sweeps,
        "floor": floor,
        "floor_total": sum(floor.values()),
        "core_total": sum(core.values()),
        "cold_import": cold_import_seconds("idle_stopper"),
        "built_sizes": built_sizes(),
    }


def main() -> dict[str, Any]:
    result = run()
    path = save("idle_sweep", result)
    fleet = result["fleet"]
    print(
        f"idle_stopper sweep ({path.name}): {fleet['instances']} GPU instances, {fleet['series']} series "
        f"({fleet['gpu_series']} GPU), {fleet['warn']} to warn, {fleet['stop']} to stop"
    )
    for label, sweep in zip(("first sweep", "steady-state sweep on the same data"), result["sweeps"], strict=True):
        print(
            f"  {label}: {sweep['seconds_in_moto']} s in moto, warned {sweep['warned']}, stopped {sweep['stopped']}, "
            f"alarms created {sweep['alarms_created']}"
        )
        for op, count in sweep["api_calls"].items():
            print(f"    {op:<36} {count}")
    print(f"  floor: {result['floor']} = {result['floor_total']}")
    print(f"  the first sweep's EC2 and metric calls: {result['core_total']}")
    print(f"  cold import of the handler: {result['cold_import']}")
    print(f"  sam build sizes: {result['built_sizes']}")
    return result


if __name__ == "__main__":
    main()
