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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from functools import lru_cache, reduce
from itertools import repeat
from math import inf, isnan
from operator import add
from typing import overload

from costguard.core.idleness import Judge, judge
from costguard.core.records import vcpus_of_type
from costguard.core.settings import IdlePolicy

NAN = float("nan")
UNKNOWN_BUSY = 255  # an HourGrid's busy-GPU count for an hour not every GPU reported


@dataclass(frozen=True)
class Hour:
    at: datetime
    cpu_max: float | None
    gpu_max: float | None = None  # the highest of the instance's GPUs
    gpu_avg: float | None = None  # the mean of the instance's GPUs
    gpus_busy: int | None = None  # how many GPUs reached the GPU threshold; None unless every GPU reported
    core_max: float | None = None  # the busiest core's maximum (the CloudWatch agent's); None where not published

    @property
    def running(self) -> bool:
        return self.cpu_max is not None


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
    # each machine's idle hours day by day (the days it had some), to price the days once the bill is read
    idle_days_by_instance: dict[str, tuple[tuple[date, int], ...]] = field(default_factory=dict)
    per_day_usd: dict[date, float] = field(default_factory=dict)  # what the idle hours of each day cost


def is_idle(hour: Hour, instance: InstanceWeek, policy: IdlePolicy) -> bool:
    """The idle stopper's rule (core/idleness.py), for one hour of the week."""
    return judge_of(instance, policy)(hour.cpu_max, hour.gpu_max, hour.core_max)


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
    found = judge(policy, vcpus=instance.vcpu_count, gpu_telemetry=instance.telemetry)
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
        counted = instance.hours.tally(instance, week.start, week.end, policy)
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
        week.idle_days_by_instance[instance.instance_id] = tuple((d, n) for d, (_, n) in sorted(days.items()) if n)
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
    for instance_id, days in week.idle_days_by_instance.items():
        if (priced := by_id.get(instance_id)) is not None:
            for day, hours in days:
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


Counted = tuple[int, int, list[float], dict[date, tuple[int, int]]]  # running, idle, GPU means, (used, idle) a day


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


HOUR = timedelta(hours=1)


@lru_cache(maxsize=8)
def _hours_of(origin: datetime, slots: int) -> tuple[tuple[datetime, ...], tuple[date, ...], dict[datetime, int]]:
    """Each slot's hour and day, and the slot of each hour: computed once per fortnight, not per point."""
    times = tuple(origin + HOUR * k for k in range(slots))
    return times, tuple(t.date() for t in times), {t: k for k, t in enumerate(times)}


def _slot_range(origin: datetime, slots: int, start: datetime, end: datetime) -> range:
    """The slots whose hour is in [start, end)."""
    first = -((origin - start) // HOUR)  # the first slot at or after start: a ceiling, in whole hours
    after = -((origin - end) // HOUR)
    return range(max(0, first), min(slots, after))


class HourGrid(Sequence[Hour]):
    """An instance's hours, compactly: one float32 slot an hour for the CPU maximum, the GPU maximum
    (the highest of every GPU, NaN unless every GPU reported that hour), the GPU mean and the busiest
    core's maximum (NaN where the agent did not publish it), and a byte for the GPUs in use. The hours
    it yields are those with CPU data (the instance ran). About 6 KB an instance-fortnight, where a
    tuple of Hour objects is about 100 KB: the digest's memory no longer grows with the points it read,
    and its figures are counted off the slots without making an Hour."""

    __slots__ = ("busy", "core", "cpu", "gpu_avg", "gpu_max", "origin")

    def __init__(
        self,
        origin: datetime,
        cpu: array[float],
        gpu_max: array[float],
        gpu_avg: array[float],
        busy: array[int] | None = None,
        *,
        core: array[float] | None = None,
    ) -> None:
        self.origin, self.cpu, self.gpu_max, self.gpu_avg = origin, cpu, gpu_max, gpu_avg
        self.busy = busy if busy is not None else array("B", [UNKNOWN_BUSY]) * len(cpu)
        self.core = core if core is not None else array("f", [NAN]) * len(cpu)

    def _slots(self) -> list[int]:
        return [i for i, v in enumerate(self.cpu) if not isnan(v)]

    def _hour(self, slot: int, at: datetime | None = None) -> Hour:
        gmax, gavg, busy, core = self.gpu_max[slot], self.gpu_avg[slot], self.busy[slot], self.core[slot]
        return Hour(
            at or self.origin + HOUR * slot,
            self.cpu[slot],
            None if isnan(gmax) else gmax,
            None if isnan(gavg) else gavg,
            None if busy == UNKNOWN_BUSY else busy,
            None if isnan(core) else core,
        )

    def since(self, start: datetime) -> HourGrid:
        """The same hours from `start` on (the slots before it let go)."""
        first = _slot_range(self.origin, len(self.cpu), start, start + HOUR * len(self.cpu)).start
        if first == 0:
            return self
        return HourGrid(
            self.origin + HOUR * first,
            self.cpu[first:],
            self.gpu_max[first:],
            self.gpu_avg[first:],
            self.busy[first:],
            core=self.core[first:],
        )

    def between(self, start: datetime, end: datetime) -> list[Hour]:
        """The hours it ran in [start, end), oldest first."""
        times = _hours_of(self.origin, len(self.cpu))[0]
        cpu = self.cpu
        return [self._hour(k, times[k]) for k in _slot_range(self.origin, len(cpu), start, end) if not isnan(cpu[k])]

    def tally(self, instance: InstanceWeek, start: datetime, end: datetime, policy: IdlePolicy) -> Counted | None:
        """What summarize counts of the hours in [start, end), off the slots (as figures._count does off
        Hour objects, by is_idle's rule: the stopper's, core/idleness.py; a NaN slot is a missing value)."""
        cpu, gpu_max, gpu_avg, core = self.cpu, self.gpu_max, self.gpu_avg, self.core
        dates = _hours_of(self.origin, len(cpu))[1]
        idle_hour = judge_of(instance, policy)
        running = idle = 0
        averages: list[float] = []
        days: dict[date, tuple[int, int]] = {}
        for k in _slot_range(self.origin, len(cpu), start, end):
            load = cpu[k]
            if isnan(load):
                continue
            running += 1
            used, wasted = days.get(dates[k], (0, 0))
            top, busiest = gpu_max[k], core[k]
            if idle_hour(load, None if isnan(top) else top, None if isnan(busiest) else busiest):
                idle += 1
                days[dates[k]] = (used, wasted + 1)
            else:
                days[dates[k]] = (used + 1, wasted)
            if not isnan(gpu_avg[k]):
                averages.append(gpu_avg[k])
        return (running, idle, averages, days) if running else None

    def __len__(self) -> int:
        return len(self._slots())

    @overload
    def __getitem__(self, index: int) -> Hour: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Hour]: ...
    def __getitem__(self, index: int | slice) -> Hour | Sequence[Hour]:
        slots = self._slots()
        if isinstance(index, slice):
            return tuple(self._hour(i) for i in slots[index])
        return self._hour(slots[index])

    def __iter__(self) -> Iterator[Hour]:
        times = _hours_of(self.origin, len(self.cpu))[0]
        for slot, value in enumerate(self.cpu):
            if not isnan(value):
                yield self._hour(slot, times[slot])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


class HourFolder:
    """Folds hourly series into an HourGrid as they are read, so no point outlives its answer. A series
    that covers a run of consecutive hours (as CloudWatch sends a machine's hours) is folded a run at a
    time, in C; any other, a point at a time. Either way each slot gets the same float32 arithmetic."""

    def __init__(self, origin: datetime, slots: int, gpus: int, busy_percent: float = 5.0) -> None:
        self.origin, self.slots, self.gpus, self.busy_percent = origin, slots, gpus, busy_percent
        self.busy = array("B", [0]) * slots  # how many GPUs reached busy_percent that hour
        self.cpu = array("f", [NAN]) * slots
        self.core = array("f", [NAN]) * slots  # the busiest core's maximum, where the agent published it
        self.gpu_max = array("f", [-inf]) * slots  # the highest so far: read only where every GPU reported
        self.gpu_sum = array("f", [0.0]) * slots
        self.reported = array("H", [0]) * slots  # how many GPUs gave a maximum that hour
        self.averaged = array("H", [0]) * slots
        self._index = _hours_of(origin, slots)[2]

    def _slot(self, at: datetime) -> int:
        slot = self._index.get(at)
        if slot is None:  # not on the hour: the hour it falls in
            slot = int((at - self.origin).total_seconds() // 3600)
        return slot if 0 <= slot < self.slots else -1

    def _run(self, times: Sequence[datetime]) -> slice | None:
        """The slots of `times` when they are consecutive hours of the grid, in order; else None."""
        if not times:
            return None
        first = self._index.get(times[0])
        if first is None or list(map(self._index.get, times)) != list(range(first, first + len(times))):
            return None
        return slice(first, first + len(times))

    def add_cpu(self, points: Iterable[tuple[datetime, float]]) -> None:
        self.add_cpu_series(*_columns(points))

    def add_gpu_max(self, points: Iterable[tuple[datetime, float]]) -> None:
        """One GPU's hourly maxima."""
        self.add_gpu_max_series(*_columns(points))

    def add_core(self, points: Iterable[tuple[datetime, float]]) -> None:
        """The busiest core's hourly maxima."""
        self.add_core_series(*_columns(points))

    def add_gpu_avg(self, points: Iterable[tuple[datetime, float]]) -> None:
        """One GPU's hourly means."""
        self.add_gpu_avg_series(*_columns(points))

    def add_cpu_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        run = self._run(times)
        if run is not None:
            self.cpu[run] = array("f", values)
            return
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.cpu[slot] = value

    def add_core_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """The busiest core's hourly maxima: the agent rolls every core up into one series per instance."""
        run = self._run(times)
        if run is not None:
            self.core[run] = array("f", values)
            return
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.core[slot] = value

    def add_gpu_max_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """One GPU's hourly maxima."""
        run = self._run(times)
        if run is not None:
            self.gpu_max[run] = array("f", map(max, self.gpu_max[run], values))
            self.reported[run] = array("H", map(add, self.reported[run], repeat(1)))
            in_use = [value >= self.busy_percent for value in values]
            self.busy[run] = array("B", map(min, map(add, self.busy[run], in_use), repeat(UNKNOWN_BUSY - 1)))
            return
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.gpu_max[slot] = max(self.gpu_max[slot], value)
                self.reported[slot] += 1
                if value >= self.busy_percent and self.busy[slot] < UNKNOWN_BUSY - 1:
                    self.busy[slot] += 1

    def add_gpu_avg_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """One GPU's hourly means."""
        run = self._run(times)
        if run is not None:
            self.gpu_sum[run] = array("f", map(add, self.gpu_sum[run], values))
            self.averaged[run] = array("H", map(add, self.averaged[run], repeat(1)))
            return
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.gpu_sum[slot] += value
                self.averaged[slot] += 1

    def grid(self) -> HourGrid:
        gpus = self.gpus
        if gpus:  # an hour some GPU did not report is never read as idle, nor as using fewer GPUs than it has
            gpu_max = array("f", [m if n == gpus else NAN for m, n in zip(self.gpu_max, self.reported, strict=True)])
            busy = array("B", [b if n == gpus else UNKNOWN_BUSY for b, n in zip(self.busy, self.reported, strict=True)])
        else:
            gpu_max, busy = array("f", [NAN]) * self.slots, array("B", [UNKNOWN_BUSY]) * self.slots
        gpu_avg = array("f", [s / n if n else NAN for s, n in zip(self.gpu_sum, self.averaged, strict=True)])
        return HourGrid(self.origin, self.cpu, gpu_max, gpu_avg, busy, core=self.core)


def _columns(points: Iterable[tuple[datetime, float]]) -> tuple[list[datetime], list[float]]:
    pairs = list(points)
    return [at for at, _ in pairs], [value for _, value in pairs]


@dataclass(frozen=True)
class OutlivedKeep:
    """A timed keep pressed in Slack on a machine that then sat idle through most of it."""

    instance_id: str
    kept_by: str
    until: datetime
    kept_hours: float
    idle_hours: float
    waste_usd: float


def outlived_keeps(
    keeps: Iterable[tuple[str, str, datetime, datetime]],
    instances: Iterable[InstanceWeek],
    end: datetime,
    policy: IdlePolicy,
) -> list[OutlivedKeep]:
    """Keeps (instance, who, pressed at, until) idle for at least half of their kept hours and two hours
    or more: the work ended long before the keep did. Worst first."""
    by_id = {i.instance_id: i for i in instances}
    out = []
    for instance_id, who, pressed, until in keeps:
        instance = by_id.get(instance_id)
        if instance is None:
            continue
        kept = [h for h in instance.hours if pressed <= h.at < min(until, end) and h.running]
        idle = sum(1 for h in kept if is_idle(h, instance, policy))
        if kept and idle >= 2 and idle >= len(kept) / 2:
            waste = idle * instance.idle_usd_per_hour
            out.append(OutlivedKeep(instance_id, who, until, float(len(kept)), float(idle), waste))
    return sorted(out, key=lambda k: -k.waste_usd)
