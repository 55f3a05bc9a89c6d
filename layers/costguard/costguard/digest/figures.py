"""The weekly digest's figures, from hourly samples. Pure: no I/O.

An hour counts as *running* when the instance published CPUUtilization in it (EC2 publishes only
while it runs). A running hour is *idle* when every GPU's maximum stayed under the GPU threshold
and the CPU's under the CPU threshold; an hour with CPU data but no GPU data from an instance that
has GPU telemetry is not idle (missing data is never idleness). GPU-hours are running hours times
the instance's GPU count; the waste is the idle hours at the instance's on-demand price.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from math import isnan
from typing import overload

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


@dataclass
class Figures:
    instances: int = 0
    gpu_hours: float = 0.0
    idle_gpu_hours: float = 0.0
    idle_instance_hours: float = 0.0
    waste_usd: float = 0.0
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


def is_idle(hour: Hour, instance: InstanceWeek, policy: IdlePolicy) -> bool:
    if not hour.running or hour.cpu_max is None or hour.cpu_max >= policy.cpu_idle_percent:
        return False
    if instance.telemetry:
        return hour.gpu_max is not None and hour.gpu_max < policy.gpu_idle_percent
    return True


def summarize(instances: Iterable[InstanceWeek], start: datetime, end: datetime, policy: IdlePolicy) -> Week:
    week = Week(start, end)
    day = start.date()
    while day <= (end - timedelta(microseconds=1)).date():
        week.per_day[day] = (0.0, 0.0)
        day += timedelta(days=1)
    for instance in instances:
        hours = [h for h in instance.hours if start <= h.at < end and h.running]
        if not hours:
            continue
        buckets = [week.fleet, week.per_owner.setdefault(instance.owner or "(no owner)", Figures())]
        if instance.team:
            buckets.append(week.per_team.setdefault(instance.team, Figures()))
        idle = [h for h in hours if is_idle(h, instance, policy)]
        for figures in buckets:
            figures.instances += 1
            figures.gpu_hours += len(hours) * instance.gpus
            figures.idle_gpu_hours += len(idle) * instance.gpus
            figures.idle_instance_hours += len(idle)
            figures.waste_usd += len(idle) * (instance.usd_per_hour or 0.0)
            for h in hours:
                if h.gpu_avg is not None:
                    figures._util_sum += h.gpu_avg
                    figures._util_hours += 1
        week.idle_hours_by_instance[instance.instance_id] = float(len(idle))
        idle_at = {h.at for h in idle}
        for h in hours:
            day = h.at.date()
            used, wasted = week.per_day.get(day, (0.0, 0.0))
            if h.at in idle_at:
                wasted += instance.gpus
            else:
                used += instance.gpus
            week.per_day[day] = (used, wasted)
    return week


def worst_idle(
    instances: Sequence[InstanceWeek], week: Week, limit: int = 5
) -> list[tuple[InstanceWeek, float, float]]:
    """The running instances that were idle the longest this week: (instance, idle hours, cost per day)."""
    running = [i for i in instances if i.state == "running" and week.idle_hours_by_instance.get(i.instance_id, 0) > 0]
    ranked = sorted(
        running, key=lambda i: week.idle_hours_by_instance[i.instance_id] * (i.usd_per_hour or 0), reverse=True
    )
    return [(i, week.idle_hours_by_instance[i.instance_id], (i.usd_per_hour or 0.0) * 24) for i in ranked[:limit]]


class HourGrid(Sequence[Hour]):
    """An instance's hours, compactly: one float32 slot an hour for the CPU maximum, the GPU maximum
    (the highest of every GPU, NaN unless every GPU reported that hour) and the GPU mean. The hours it
    yields are those with CPU data (the instance ran). About 4 KB an instance-fortnight, where a tuple
    of Hour objects is about 100 KB: the digest's memory no longer grows with the points it read."""

    __slots__ = ("busy", "cpu", "gpu_avg", "gpu_max", "origin")

    def __init__(
        self,
        origin: datetime,
        cpu: array[float],
        gpu_max: array[float],
        gpu_avg: array[float],
        busy: array[int] | None = None,
    ) -> None:
        self.origin, self.cpu, self.gpu_max, self.gpu_avg = origin, cpu, gpu_max, gpu_avg
        self.busy = busy if busy is not None else array("B", [UNKNOWN_BUSY]) * len(cpu)

    def _slots(self) -> list[int]:
        return [i for i, v in enumerate(self.cpu) if not isnan(v)]

    def _hour(self, slot: int) -> Hour:
        gmax, gavg, busy = self.gpu_max[slot], self.gpu_avg[slot], self.busy[slot]
        return Hour(
            self.origin + timedelta(hours=slot),
            self.cpu[slot],
            None if isnan(gmax) else gmax,
            None if isnan(gavg) else gavg,
            None if busy == UNKNOWN_BUSY else busy,
        )

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
        for slot, value in enumerate(self.cpu):
            if not isnan(value):
                yield self._hour(slot)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None  # type: ignore[assignment]


class HourFolder:
    """Folds hourly series into an HourGrid as they are read, so no point outlives its answer."""

    def __init__(self, origin: datetime, slots: int, gpus: int, busy_percent: float = 5.0) -> None:
        self.origin, self.slots, self.gpus, self.busy_percent = origin, slots, gpus, busy_percent
        self.busy = array("B", [0]) * slots  # how many GPUs reached busy_percent that hour
        self.cpu = array("f", [NAN]) * slots
        self.gpu_max = array("f", [NAN]) * slots
        self.gpu_sum = array("f", [0.0]) * slots
        self.reported = array("H", [0]) * slots  # how many GPUs gave a maximum that hour
        self.averaged = array("H", [0]) * slots

    def _slot(self, at: datetime) -> int:
        slot = int((at - self.origin).total_seconds() // 3600)
        return slot if 0 <= slot < self.slots else -1

    def add_cpu(self, points: Iterable[tuple[datetime, float]]) -> None:
        for at, value in points:
            if (slot := self._slot(at)) >= 0:
                self.cpu[slot] = value

    def add_gpu_max(self, points: Iterable[tuple[datetime, float]]) -> None:
        """One GPU's hourly maxima."""
        for at, value in points:
            if (slot := self._slot(at)) >= 0:
                current = self.gpu_max[slot]
                self.gpu_max[slot] = value if isnan(current) else max(current, value)
                self.reported[slot] += 1
                if value >= self.busy_percent and self.busy[slot] < UNKNOWN_BUSY - 1:
                    self.busy[slot] += 1

    def add_gpu_avg(self, points: Iterable[tuple[datetime, float]]) -> None:
        """One GPU's hourly means."""
        for at, value in points:
            if (slot := self._slot(at)) >= 0:
                self.gpu_sum[slot] += value
                self.averaged[slot] += 1

    def grid(self) -> HourGrid:
        gpu_max = array("f", self.gpu_max)
        busy = array("B", self.busy)
        for slot in range(self.slots):
            if not self.gpus or self.reported[slot] != self.gpus:
                gpu_max[slot] = NAN  # an hour some GPU did not report is never read as idle
                busy[slot] = UNKNOWN_BUSY  # nor as using fewer GPUs than it has
        gpu_avg = array("f", (s / n if n else NAN for s, n in zip(self.gpu_sum, self.averaged, strict=True)))
        return HourGrid(self.origin, self.cpu, gpu_max, gpu_avg, busy)


def hours_from_points(
    cpu: Sequence[tuple[datetime, float]],
    gpu_max: Sequence[Sequence[tuple[datetime, float]]],
    gpu_avg: Sequence[Sequence[tuple[datetime, float]]],
    busy_percent: float = 5.0,
) -> HourGrid:
    """Hourly samples from hourly series: CPU Maximum, and per GPU its Maximum and Average."""
    times = [at for at, _ in cpu]
    if not times:
        return HourFolder(datetime.min.replace(tzinfo=UTC), 0, 0).grid()
    origin = min(times)
    folder = HourFolder(origin, int((max(times) - origin).total_seconds() // 3600) + 1, len(gpu_max), busy_percent)
    folder.add_cpu(cpu)
    for series in gpu_max:
        folder.add_gpu_max(series)
    for series in gpu_avg:
        folder.add_gpu_avg(series)
    return folder.grid()


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
            waste = idle * (instance.usd_per_hour or 0.0)
            out.append(OutlivedKeep(instance_id, who, until, float(len(kept)), float(idle), waste))
    return sorted(out, key=lambda k: -k.waste_usd)
