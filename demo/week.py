"""The week before the story: the idle stopper's sweeps over the fleet's evenings, so that the ledger the weekly
digest reads holds a week of warnings, stops and starts, and "saved" is the fleet's week, not the story's hour.

Each of the five days before the story, the office closes at 18:00 UTC: the people's machines go idle, a sweep
two hours later warns their owners and the sweep after the grace period stops them; on a working day's morning
at 08:00 each person starts their machine again (EC2's state change reaches the idle stopper, as in life), and a
machine stopped before the weekend stays off until the story's Monday. Only those
sweeps run, through the real handler (`Demo.invoke`): a sweep every quarter-hour all week would cost the demo
minutes. The metrics a sweep reads are published just before it, five-minutely over its window. Then the
fleet is put back as the story finds it (its launch times, tags, alarms, scale-in protection), and what the
week posted to Slack is left off the page: one line of the transcript sums it up.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from costguard.digest.handoff import decode, encode
from costguard.digest.quarterly.rules import quarter_bounds
from costguard.state.weeks import WeekRecords
from demo import fleet
from testing import moto_fixes

DAYS = 5
SWEEPS = (timedelta(hours=20), timedelta(hours=20, minutes=45))  # UTC: 2 h after the office closes; after the grace
MORNING = timedelta(hours=8)  # each person starts their machine again
WINDOW = timedelta(minutes=135)  # the idle window and CloudWatch's lag, published before the first sweep
# Machines whose own story starts this morning, or that the week leaves alone.
LEFT_OUT = ("carol-batch", "dave-eval")


@dataclass
class Week:
    sweeps: int = 0
    warnings: int = 0
    stops: int = 0
    starts: int = 0
    off: dict[str, list[tuple[datetime, datetime]]] = field(default_factory=dict)  # instance -> stopped spans
    swept: set[str] = field(default_factory=set)  # the instances the week's sweeps saw (`pattern` tells their days)
    began: datetime | None = None  # the first day's midnight

    def fortnight(self, machine: fleet.Machine, at: datetime) -> str | None:
        """How the fortnight's hourly points (fleet.seed_week) find a machine at `at`: before the sweeps began, a
        machine they saw works as in the week, with nothing to stop it at night (the week before is the same
        fleet); from then on, the machines fleet._week_pattern names have hourly points, the others the sweeps'
        own. (Their office mornings in hourly points would teach the idle stopper that they start work at 08:00 on
        3 of the last 7 days, and it would rightly not warn about them at 07:30 on the story's Monday.)"""
        if machine.instance_id in self.swept and self.began is not None and at < self.began:
            return pattern(machine, at)
        return fleet._week_pattern(machine.name, at)


def pattern(machine: fleet.Machine, at: datetime) -> str | None:
    """ "busy", "idle", or None (not running, or no agent's points at that hour): the fleet's week pattern, and
    for the machines it does not name, an office day of work and idle evenings."""
    named = fleet._week_pattern(machine.name, at)
    if named is not None or machine.name in fleet.WEEK_NAMED:
        return named
    return "busy" if at.weekday() < 5 and 8 <= at.hour < 18 else "idle"


def run(
    demo: Any,
    seeded: fleet.SeededFleet,
    sweep: Callable[[], Any],
    running: Callable[[fleet.Machine], Any],
    now: datetime,
) -> Week:
    """The week's sweeps and starts (`sweep()` and `running(instance_id)` invoke the idle stopper), then the
    fleet as the story finds it at `now`."""
    fleet._NOW[:] = [now]  # the fleet's week pattern counts its days back from the story's present
    members = [
        fleet.Machine(f"{fleet.ASG_NAME} #{n + 1}", fleet.HOME, "g5.2xlarge", "", gpu_pattern="busy", instance_id=i)
        for n, i in enumerate(seeded.asg_instances)
    ]
    machines = [m for m in [*seeded.machines, *members] if m.name not in LEFT_OUT and not m.stopped]
    tags = {region: _tags(demo, region) for region in (fleet.HOME, fleet.OTHER)}
    for name in LEFT_OUT:  # their stories start this morning: the week leaves them alone (tags restored below)
        machine = seeded.named(name)
        demo.client("ec2", machine.region).create_tags(
            Resources=[machine.instance_id], Tags=[{"Key": "costguard:exempt", "Value": "true"}]
        )
    first = (now - timedelta(days=DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    for machine in machines:
        moto_fixes.set_launch_time(machine.instance_id, machine.region, first - timedelta(days=1))
    by_id = {m.instance_id: m for m in machines}
    rng = random.Random(11)
    week, stopped = Week(swept={m.instance_id for m in machines}, began=first), dict[str, datetime]()
    for day in range(DAYS):
        base = first + timedelta(days=day)
        if base.weekday() < 5:  # a working day: its people start what costguard stopped
            for instance_id, at in stopped.items():
                demo.clock = base + MORNING
                demo.client("ec2", by_id[instance_id].region).start_instances(InstanceIds=[instance_id])
                running(by_id[instance_id])
                week.starts += 1
                week.off.setdefault(instance_id, []).append((at, demo.clock))
            stopped = {}
        for index, offset in enumerate(SWEEPS):
            at = base + offset
            since = at - (WINDOW if index == 0 else SWEEPS[index] - SWEEPS[index - 1])
            _publish(demo, [m for m in machines if m.instance_id not in stopped], since, at, rng)
            demo.clock = at
            result = sweep()
            week.sweeps += 1
            for summary in result["regions"].values():
                for decision in summary["decisions"]:
                    week.warnings += decision["action"] == "warn"
                    if decision["action"] == "stop":
                        week.stops += 1
                        stopped[decision["instance_id"]] = at
    # The story's morning: each machine runs since its own launch (started again then, if costguard stopped it).
    for machine in machines:
        launched = now - timedelta(hours=machine.hours_running)
        if machine.instance_id in stopped:
            demo.clock = launched
            demo.client("ec2", machine.region).start_instances(InstanceIds=[machine.instance_id])
            week.off.setdefault(machine.instance_id, []).append((stopped[machine.instance_id], launched))
        moto_fixes.set_launch_time(machine.instance_id, machine.region, launched)
    for region, before in tags.items():
        _restore_tags(demo, region, before)
    cloudwatch = demo.client("cloudwatch")
    alarms = [a["AlarmName"] for a in cloudwatch.describe_alarms(AlarmNamePrefix="costguard-idle-")["MetricAlarms"]]
    if alarms:
        cloudwatch.delete_alarms(AlarmNames=alarms)
    autoscaling = demo.client("autoscaling")
    for protected, ids in ((False, seeded.asg_instances[:1]), (True, seeded.asg_instances[1:])):
        autoscaling.set_instance_protection(
            AutoScalingGroupName=fleet.ASG_NAME, InstanceIds=ids, ProtectedFromScaleIn=protected
        )
    return week


def _publish(demo: Any, machines: list[fleet.Machine], since: datetime, until: datetime, rng: random.Random) -> None:
    """Five-minutely CPU, busiest core and GPU points of the running machines over [since, until)."""
    series: dict[str, dict[str, list[dict[str, Any]]]] = {}
    moments = []
    at = until - timedelta(minutes=3)
    while at >= since:
        moments.append(at)
        at -= timedelta(minutes=5)
    for machine in machines:
        ec2, agent = series.setdefault(machine.region, {"AWS/EC2": [], "CWAgent": []}).values()
        by_instance = [{"Name": "InstanceId", "Value": machine.instance_id}]
        name, arch, count = fleet.GPUS.get(machine.instance_type, ("", "", 0)) if machine.gpu_pattern else ("", "", 0)
        for moment in moments:
            state = pattern(machine, moment)
            if state is None:
                continue
            low, high = (60.0, 98.0) if state == "busy" else (0.2, 3.0)
            ec2.append(fleet.percent("CPUUtilization", by_instance, moment, round(rng.uniform(low / 2, high / 2), 2)))
            if count:
                agent.append(fleet.percent("cpu_usage_active", by_instance, moment, round(rng.uniform(low, high), 2)))
            for gpu in range(count):
                spare = machine.gpus_used and gpu >= machine.gpus_used
                value = rng.uniform(0.0, 1.0) if spare else rng.uniform(low, high)
                dims = fleet.gpu_dims(machine.instance_id, gpu, name, arch)
                agent.append(fleet.percent("nvidia_smi_utilization_gpu", dims, moment, round(value, 1)))
    fleet._put_series(demo.client, series)


def _tags(demo: Any, region: str) -> dict[str, dict[str, str]]:
    return {
        raw["InstanceId"]: {t["Key"]: t["Value"] for t in raw.get("Tags", [])}
        for reservation in demo.client("ec2", region).describe_instances()["Reservations"]
        for raw in reservation["Instances"]
    }


def _restore_tags(demo: Any, region: str, before: dict[str, dict[str, str]]) -> None:
    """Each instance's tags as they were before the week."""
    ec2 = demo.client("ec2", region)
    for instance_id, now in _tags(demo, region).items():
        was = before.get(instance_id, {})
        added = [{"Key": k} for k in now if k not in was]
        if added:
            ec2.delete_tags(Resources=[instance_id], Tags=added)
        changed = [{"Key": k, "Value": v} for k, v in was.items() if now.get(k) != v]
        if changed:
            ec2.create_tags(Resources=[instance_id], Tags=changed)


def quarter(records: WeekRecords, account: str, now: datetime) -> int:
    """The deep dive's quarter as costguard's weekly records would hold it, made of the one week the demo
    simulates: the record this morning's weekly digest kept (the week `run` swept), repeated into each week that
    starts in the quarter, its days moved with it. How many weeks that is (the transcript says so)."""
    first, after, _ = quarter_bounds(now.date())
    [kept] = records.between(account, (now - timedelta(days=8)).date(), (now + timedelta(days=1)).date())
    week = decode(kept)
    weeks, back = 0, 1
    while (week.start - timedelta(weeks=back)).date() >= first:
        shift = timedelta(weeks=back)
        back += 1
        if (week.start - shift).date() >= after:
            continue
        moved = dataclasses.replace(
            week,
            start=week.start - shift,
            end=week.end - shift,
            days=tuple((day - shift, used, idle) for day, used, idle in week.days),
            days_usd=tuple((day - shift, usd) for day, usd in week.days_usd),
        )
        records.keep(account, moved.start, encode(moved))
        weeks += 1
    return weeks
