"""The weekly digest's figures, from hourly samples. Pure: no I/O.

An hour counts as *running* when the instance published CPUUtilization in it (EC2 publishes only
while it runs). A running hour is *idle* by the idle stopper's rule (core/idleness.py): every GPU's
maximum under the GPU threshold, and the CPU under its own: the busiest core's threshold where the
hour carries the busiest core (the CloudWatch agent's), else a CPU threshold one busy core cannot hide
under (50 % / vCPUs); an hour with CPU data but no GPU data from an instance that has GPU telemetry is
not idle (missing data is never idleness). GPU-hours are running hours times
the instance's GPU count; the waste is the idle hours at what a stop would have saved on the bill
(rules/bill.py; the on-demand price until the bill is read), and the idle hours of a machine whose hours
are paid whether it runs or not (a Capacity Block, a capacity reservation, Reserved Instances or a Savings
Plan with room) are counted apart, as paid idle hours, not as waste.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import reduce
from operator import add

from costguard.core.idleness import Judge, sample_judge
from costguard.core.records import vcpus_of_type
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules.grid import Counted, Hour, HourGrid


@dataclass(frozen=True)
class InstanceWeek:
    """One instance's hours over the two weeks the digest compares."""

    instance_id: str
    instance_type: str
    region: str
    owner: str
    team: str
    gpus: int
    usd_per_hour: float | None
    telemetry: bool
    state: str
    hours: Sequence[Hour] = ()
    lifecycle: str = ""  # "spot", or "" for on-demand
    zone: str = ""  # its Availability Zone
    vcpus: int = 0  # as EC2 reported them; 0 when it did not say
    bill_usd_per_hour: float | None = None  # what an idle hour cost on the bill (rules/bill.py); None: not priced
    paid_by: str = ""  # what pays its hours whether it runs or not: its idle hours are not waste

    @property
    def idle_usd_per_hour(self) -> float:
        """What one of its idle hours wasted: the bill's price, else the on-demand price; $0 on paid capacity."""
        if self.paid_by:
            return 0.0
        price = self.bill_usd_per_hour if self.bill_usd_per_hour is not None else self.usd_per_hour
        return price or 0.0

    @property
    def vcpu_count(self) -> int:
        """The vCPUs EC2 reported, else what the size of the type says (as Instance.vcpu_count)."""
        return self.vcpus or vcpus_of_type(self.instance_type)

    def since(self, start: datetime) -> InstanceWeek:
        """The same instance with its hours from `start` on: once last week is counted, the digest keeps
        this week's hours only (half the memory of a fortnight's)."""
        if isinstance(self.hours, HourGrid):
            return replace(self, hours=self.hours.since(start))
        return replace(self, hours=tuple(h for h in self.hours if h.at >= start))


@dataclass
class Figures:
    instances: int = 0
    gpu_hours: float = 0.0
    idle_gpu_hours: float = 0.0
    idle_instance_hours: float = 0.0
    waste_usd: float = 0.0
    paid_idle_hours: float = 0.0  # idle hours on capacity paid whether it runs or not (not waste)
    _util_sum: float = 0.0
    _util_hours: float = 0.0

    @property
    def avg_gpu_util(self) -> float | None:
        return self._util_sum / self._util_hours if self._util_hours else None


@dataclass
class Week:
    start: datetime
    end: datetime
    fleet: Figures = field(default_factory=Figures)
    per_owner: dict[str, Figures] = field(default_factory=dict)
    per_team: dict[str, Figures] = field(default_factory=dict)
    per_day: dict[date, tuple[float, float]] = field(default_factory=dict)  # used, idle GPU-hours
    idle_hours_by_instance: dict[str, float] = field(default_factory=dict)
    # each machine's idle hours day by day (item k: the week's k-th day), to price the days once the bill is read;
    # a few bytes a machine, where a tuple of (day, hours) pairs was about 600 (8.7 MB over 10,000 machines' weeks)
    idle_days_by_instance: dict[str, Sequence[int]] = field(default_factory=dict)
    per_day_usd: dict[date, float] = field(default_factory=dict)  # what the idle hours of each day cost


def is_idle(hour: Hour, instance: InstanceWeek, policy: IdlePolicy) -> bool:
    """The idle stopper's rule (core/idleness.py), for one hour of the week. The advice asks it of each machine's
    hours in turn: the machine's judge is kept while the machine is the same one (looking it up again for each
    hour cost 5 times the verdict)."""
    global _last  # noqa: PLW0603 (one entry, read and replaced whole)
    kept = _last
    if kept[0] is not instance or kept[1] is not policy:
        kept = _last = (instance, policy, judge_of(instance, policy))
    return kept[2](hour.cpu_max, hour.gpu_max, hour.core_max)


# The machine and policy is_idle last judged for, and their judge (holding the machine, so that no other
# can be given its identity while it is kept).
_last: tuple[object, object, Judge] = (None, None, lambda *_: False)


# The judges made, by policy (its identity: the one the digest runs with), vCPUs and GPU telemetry: a judge
# works its levels out once, and the digest asks about every hour of a fleet's fortnight (built for each hour,
# an hour's verdict cost about 20 times as much).
_JUDGES: dict[tuple[int, int, bool], tuple[IdlePolicy, Judge]] = {}
MOST_JUDGES = 256


def judge_of(instance: InstanceWeek, policy: IdlePolicy) -> Judge:
    """The stopper's rule for this instance's hours: its vCPUs and whether it has GPU telemetry."""
    key = (id(policy), instance.vcpu_count, instance.telemetry)
    made = _JUDGES.get(key)
    if made is not None and made[0] is policy:
        return made[1]
    if len(_JUDGES) >= MOST_JUDGES:
        _JUDGES.clear()
    found = sample_judge(policy, vcpus=instance.vcpu_count, gpu_telemetry=instance.telemetry)
    _JUDGES[key] = (policy, found)
    return found


def summarize(instances: Iterable[InstanceWeek], start: datetime, end: datetime, policy: IdlePolicy) -> Week:
    week = empty_week(start, end)
    for instance in instances:
        tally_into(week, instance, policy)
    return week


def empty_week(start: datetime, end: datetime) -> Week:
    """A week with nothing counted yet: every day of it, at zero."""
    week = Week(start, end)
    day = start.date()
    while day <= (end - timedelta(microseconds=1)).date():
        week.per_day[day] = (0.0, 0.0)
        day += timedelta(days=1)
    return week


def tally_into(week: Week, instance: InstanceWeek, policy: IdlePolicy) -> None:
    """Count one instance's hours of the week into it: summarize is this, instance after instance, so a
    week can be counted as its instances are read, and their hours let go."""
    if isinstance(instance.hours, HourGrid):
        counted = instance.hours.tally(judge_of(instance, policy), week.start, week.end)
    else:
        counted = _count(instance, week.start, week.end, policy)
    if counted is None:
        return
    running, idle, averages, days = counted
    buckets = [week.fleet, week.per_owner.setdefault(instance.owner or "(no owner)", Figures())]
    if instance.team:
        buckets.append(week.per_team.setdefault(instance.team, Figures()))
    for figures in buckets:
        figures.instances += 1
        figures.gpu_hours += running * instance.gpus
        figures.idle_gpu_hours += idle * instance.gpus
        figures.idle_instance_hours += idle
        if instance.paid_by:
            figures.paid_idle_hours += idle
        figures.waste_usd += idle * instance.idle_usd_per_hour
        # hour by hour, in order: the same sum to the last bit, whichever way the hours were kept
        figures._util_sum = reduce(add, averages, figures._util_sum)
        figures._util_hours += len(averages)
    week.idle_hours_by_instance[instance.instance_id] = float(idle)
    if idle:
        week.idle_days_by_instance[instance.instance_id] = _by_day(week.start.date(), days)
    for day, (used_hours, idle_hours) in days.items():
        used, wasted = week.per_day.get(day, (0.0, 0.0))
        # GPU counts are whole numbers: adding them an hour at a time or at once is the same float
        week.per_day[day] = (used + used_hours * instance.gpus, wasted + idle_hours * instance.gpus)
        if idle_hours:
            week.per_day_usd[day] = week.per_day_usd.get(day, 0.0) + idle_hours * instance.idle_usd_per_hour


def settle(week: Week, instances: Iterable[InstanceWeek]) -> None:
    """The week's waste counted again at each machine's idle price, once the bill priced them (its idle hours
    as counted), the paid idle hours apart: this week's and last week's, on one bill."""
    by_id = {i.instance_id: i for i in instances}
    for figures in (week.fleet, *week.per_owner.values(), *week.per_team.values()):
        figures.waste_usd = figures.paid_idle_hours = 0.0
    week.per_day_usd = {}
    first = week.start.date()
    for instance_id, days in week.idle_days_by_instance.items():
        if (priced := by_id.get(instance_id)) is not None:
            for k, hours in enumerate(days):
                if hours:
                    day = first + timedelta(days=k)
                    week.per_day_usd[day] = week.per_day_usd.get(day, 0.0) + hours * priced.idle_usd_per_hour
    for instance_id, idle in week.idle_hours_by_instance.items():
        instance = by_id.get(instance_id)
        if instance is None:
            continue
        buckets = [week.fleet, week.per_owner.setdefault(instance.owner or "(no owner)", Figures())]
        if instance.team:
            buckets.append(week.per_team.setdefault(instance.team, Figures()))
        for figures in buckets:
            figures.waste_usd += idle * instance.idle_usd_per_hour
            if instance.paid_by:
                figures.paid_idle_hours += idle


def _by_day(first: date, days: dict[date, tuple[int, int]]) -> Sequence[int]:
    """The idle hours of each day from `first` (every day counted is on or after it) to the last counted: bytes
    (a day has 24 hours), else, for hours given more than once, an array of 16-bit counts."""
    counts = [0] * ((max(days) - first).days + 1)
    for day, (_, idle) in days.items():
        counts[(day - first).days] = idle
    return bytes(counts) if max(counts) < 256 else array("H", counts)


def _count(instance: InstanceWeek, start: datetime, end: datetime, policy: IdlePolicy) -> Counted | None:
    """An instance's running and idle hours in [start, end), the GPU means of its running hours in order,
    and its used and idle hours day by day; None when it did not run."""
    hours = [h for h in instance.hours if start <= h.at < end and h.running]
    if not hours:
        return None
    days: dict[date, tuple[int, int]] = {}
    idle = 0
    idle_hour = judge_of(instance, policy)
    for h in hours:
        used, wasted = days.get(h.at.date(), (0, 0))
        if idle_hour(h.cpu_max, h.gpu_max, h.core_max):
            idle += 1
            days[h.at.date()] = (used, wasted + 1)
        else:
            days[h.at.date()] = (used + 1, wasted)
    averages = [h.gpu_avg for h in hours if h.gpu_avg is not None]
    return len(hours), idle, averages, days


def worst_idle(
    instances: Sequence[InstanceWeek], week: Week, limit: int = 5
) -> list[tuple[InstanceWeek, float, float]]:
    """The running instances that were idle the longest this week: (instance, idle hours, cost per day on the
    bill). A machine on paid capacity is not among them: its idle hours go to the commitment advice."""
    running = [
        i
        for i in instances
        if i.state == "running" and not i.paid_by and week.idle_hours_by_instance.get(i.instance_id, 0) > 0
    ]
    ranked = sorted(
        running, key=lambda i: week.idle_hours_by_instance[i.instance_id] * i.idle_usd_per_hour, reverse=True
    )
    return [(i, week.idle_hours_by_instance[i.instance_id], i.idle_usd_per_hour * 24) for i in ranked[:limit]]
