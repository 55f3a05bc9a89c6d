"""The demo's scenes of issue 22: recurring work learned and honoured, and certain idleness acted on sooner.

- carol-batch runs a job at the same time every day (two weeks of it in CloudWatch; 08:15 UTC in the
  story). Warned, and idle since yesterday's run, the sweep stops it with `costguard:start-at`, a quarter
  of an hour before its next run; the sweep after that starts it again, before the job. (The demo's
  45 minutes are short: its ShortestStopMinutes is 20 here, instead of the 90 a real deployment keeps.)
- dave-eval finished an evaluation 50 minutes before the first sweep. Its metrics are idle for the shorter
  window, not the full two hours, and its activity check sees nothing alive (no input for hours, no
  kernel, no busy process, no GPU memory held): it is warned at once, and stopped after the grace.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from demo import fleet
from testing import moto_fixes
from testing.aws_gaps import AwsGaps
from testing.launches import AMI

QUARTER = timedelta(minutes=15)
SHORTEST_STOP_MINUTES = "20"  # the demo's; 90 by default


def quiet_check() -> dict[str, Any]:
    """The activity check of a machine nobody uses: no one typed for 9 hours, nothing runs, its GPU at 0 %,
    and cgroup v2's CPU accounting (the same answer every sweep here: without its time, it attributes
    nothing, as costguard treats an answer it cannot place)."""
    return {
        "v": 1,
        "at": 0,
        "sessions": [{"tty": "pts/0", "idle_s": 9 * 3600}],
        "kernels": [],
        "cpu": [],
        "gpu": [],
        "hook": None,
        "gpus": [{"i": 0, "u": 0, "m": 3}],
        "cg": {"v": 2, "boot": "1c9e4d2a-demo-boot", "top": 5_310.4, "sys": 4_902.7},
    }


def next_quarter_after(moment: datetime, minutes: int) -> datetime:
    """The quarter-hour boundary in (moment + minutes, moment + minutes + 15]."""
    later = moment + timedelta(minutes=minutes)
    floor = datetime.fromtimestamp(int(later.timestamp()) // 900 * 900, later.tzinfo)
    return floor + QUARTER


def seed(clients: Callable[..., Any], gaps: AwsGaps, seeded: fleet.SeededFleet, now: datetime) -> datetime:
    """The two machines, their metrics and their checks; returns carol-batch's next run."""
    run = next_quarter_after(now, 10)  # its job today; the sweep 30 minutes before the demo's present stops it
    nina = fleet.Machine(
        "carol-batch",
        fleet.HOME,
        "g5.xlarge",
        f"a job at {run:%H:%M} UTC every day: stopped after it, started again a quarter before the next",
        launch_tags={"Owner": "carol@example.com"},
        gpu_pattern="idle",
        hours_running=20 * 24,
    )
    omar = fleet.Machine(
        "dave-eval",
        fleet.HOME,
        "g5.2xlarge",
        "an evaluation that ended 50 minutes before the first sweep: warned early, its check saw nothing running",
        launch_tags={"Owner": "dave@example.com"},
        gpu_pattern="idle",
        hours_running=8,
    )
    ec2 = clients("ec2", fleet.HOME)
    warned = {
        "costguard:idle-warned-at": f"{now - timedelta(minutes=60):%Y-%m-%dT%H:%M:%SZ}",
        "costguard:stop-after": f"{now - timedelta(minutes=30):%Y-%m-%dT%H:%M:%SZ}",
    }
    for machine, extra in ((nina, warned), (omar, {})):
        tags = {"Name": machine.name, **machine.launch_tags, **extra}
        machine.instance_id = ec2.run_instances(
            ImageId=AMI,
            MinCount=1,
            MaxCount=1,
            InstanceType=machine.instance_type,
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
        )["Instances"][0]["InstanceId"]
        moto_fixes.set_launch_time(machine.instance_id, machine.region, now - timedelta(hours=machine.hours_running))
        gaps.activity[machine.instance_id] = quiet_check()
        gaps.prices[(machine.instance_type, machine.region)] = BUNDLED_USD_PER_HOUR[machine.instance_type]
        seeded.machines.append(machine)
    cloudwatch = clients("cloudwatch", fleet.HOME)
    # carol-batch: two weeks of quarter-hours, an hour of work from the same time every day; then 4 h of 5 minutes.
    busy = {run - timedelta(days=d) + QUARTER * k for d in range(1, 15) for k in range(4)}
    # (From 2 h after two weeks ago: CloudWatch lists a series by data of the last 14 days, and the demo runs on.)
    first = next_quarter_after(now - timedelta(days=14), 120)
    quarters = [first + QUARTER * k for k in range(14 * 96 - 24)]
    publish(cloudwatch, nina, [(t, 85.0 if t in busy else 0.0) for t in quarters])
    fives = [now - timedelta(minutes=5 * k) for k in range(48, 0, -1)]
    publish(cloudwatch, nina, [(t, 0.0) for t in fives])
    # dave-eval: its evaluation until 80 minutes before the present, then nothing.
    publish(cloudwatch, omar, [(t, 92.0 if t < now - timedelta(minutes=80) else 0.0) for t in fives])
    return run


def publish(cloudwatch: Any, machine: fleet.Machine, points: list[tuple[datetime, float]]) -> None:
    """Its one GPU, its busiest core (busy with the GPU) and its CPU, at these moments."""
    name, arch, _ = fleet.GPUS[machine.instance_type]
    by_instance = [{"Name": "InstanceId", "Value": machine.instance_id}]
    data: dict[str, list[dict[str, Any]]] = {"CWAgent": [], "AWS/EC2": []}
    gpu_dims = fleet.gpu_dims(machine.instance_id, 0, name, arch)
    for at, gpu in points:
        data["CWAgent"].append(fleet.percent("nvidia_smi_utilization_gpu", gpu_dims, at, gpu))
        data["CWAgent"].append(fleet.percent("cpu_usage_active", by_instance, at, 100.0 if gpu else 3.0))
        data["AWS/EC2"].append(fleet.percent("CPUUtilization", by_instance, at, 30.0 if gpu else 0.4))
    for namespace, metrics in data.items():
        for start in range(0, len(metrics), 1000):
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=metrics[start : start + 1000])


def start_scene(demo: Any, sweep: Callable[[], dict[str, str]], run: datetime) -> tuple[str, dict[str, str]]:
    """The sweep at carol-batch's start-at (15 minutes before its run) starts it again; the demo's clock
    then goes back to where the other scenes left it (their metrics end at the demo's present). The scene's
    title, and what its sweep decided."""
    before = demo.clock
    start_at = run - timedelta(minutes=15)
    demo.clock = max(before, start_at)
    what = (
        "the sweep a quarter before carol-batch's job"
        if demo.clock == start_at
        else f"the next sweep (carol-batch's start-at, {start_at:%H:%M}, came with the sweep before)"
    )
    title = f"{demo.clock:%H:%M} idle_stopper: {what} (sweep.json)"
    print(f"\n== {title}")
    actions = sweep()
    demo.clock = before
    return title, actions
