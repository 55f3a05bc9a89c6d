"""A machine's fortnight of hours, compactly (`HourGrid`: a float32 slot an hour for each signal), folded from
CloudWatch's answers one at a time (`HourFolder`). Pure: no I/O."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta
from functools import lru_cache, partial
from itertools import compress, repeat
from math import inf, isnan
from operator import add, le, not_, truediv
from typing import NamedTuple, overload

from costguard.core.idleness import Judge

NAN = float("nan")
UNKNOWN_BUSY = 255  # an HourGrid's busy-GPU count for an hour not every GPU reported


class Hour(NamedTuple):
    """One hour of a machine. A named tuple, not a dataclass: the advice reads a fleet's week of them, and a
    frozen dataclass costs several times as much to make."""

    at: datetime
    cpu_max: float | None
    gpu_max: float | None = None  # the highest of the instance's GPUs
    gpu_avg: float | None = None  # the mean of the instance's GPUs
    gpus_busy: int | None = None  # how many GPUs reached the GPU threshold; None unless every GPU reported
    core_max: float | None = None  # the busiest core's maximum (the CloudWatch agent's); None where not published

    @property
    def running(self) -> bool:
        return self.cpu_max is not None


_hour_of = partial(tuple.__new__, Hour)  # an Hour from a tuple of its fields, made without a Python call
HOUR = timedelta(hours=1)
Counted = tuple[int, int, list[float], dict[date, tuple[int, int]]]  # running, idle, GPU means, (used, idle) a day


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
        """The hours it ran in [start, end), oldest first: made a column at a time (a NaN slot is a missing
        value, None in an Hour)."""
        span = _slot_range(self.origin, len(self.cpu), start, end)
        a, b = span.start, span.stop
        if a >= b:
            return []
        times = _hours_of(self.origin, len(self.cpu))[0][a:b]
        cpu = self.cpu[a:b]
        gpu_max = [None if isnan(v) else v for v in self.gpu_max[a:b]]
        gpu_avg = [None if isnan(v) else v for v in self.gpu_avg[a:b]]
        busy = [None if v == UNKNOWN_BUSY else v for v in self.busy[a:b]]
        core = [None if isnan(v) else v for v in self.core[a:b]]
        ran = map(not_, map(isnan, cpu))
        return list(map(_hour_of, compress(zip(times, cpu, gpu_max, gpu_avg, busy, core, strict=True), ran)))

    def tally(self, idle_hour: Judge, start: datetime, end: datetime) -> Counted | None:
        """What summarize counts of the hours in [start, end), off the slots (as figures._count does off
        Hour objects, by `idle_hour`, the machine's judge: the stopper's rule, core/idleness.py; a NaN slot is
        a missing value)."""
        span = _slot_range(self.origin, len(self.cpu), start, end)
        a, b = span.start, span.stop
        running = idle = 0
        averages: list[float] = []
        days: dict[date, tuple[int, int]] = {}
        if a >= b:
            return None
        dates = _hours_of(self.origin, len(self.cpu))[1][a:b]
        # the columns walked in step (a NaN slot is a missing value)
        for day, load, top, busiest, mean in zip(
            dates, self.cpu[a:b], self.gpu_max[a:b], self.core[a:b], self.gpu_avg[a:b], strict=True
        ):
            if isnan(load):
                continue
            running += 1
            used, wasted = days.get(day, (0, 0))
            if idle_hour(load, None if isnan(top) else top, None if isnan(busiest) else busiest):
                idle += 1
                days[day] = (used, wasted + 1)
            else:
                days[day] = (used + 1, wasted)
            if not isnan(mean):
                averages.append(mean)
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
    """Folds hourly series into an HourGrid as they are read, so no point outlives its grid. A series
    that covers a run of consecutive hours (as CloudWatch sends a machine's hours) is folded a run at a
    time, in C; any other, a point at a time. Either way each slot gets the same float32 arithmetic. The
    GPUs' maxima over the same run are kept until the grid is made and folded together there: the highest
    of n GPUs and how many were in use, in one pass over the hours instead of n (a float32 rounding keeps
    the order of values, so the highest rounded is the rounded highest)."""

    def __init__(self, origin: datetime, slots: int, gpus: int, busy_percent: float = 5.0) -> None:
        self.origin, self.slots, self.gpus, self.busy_percent = origin, slots, gpus, busy_percent
        self.busy = array("B", [0]) * slots  # how many GPUs reached busy_percent that hour
        self.cpu = array("f", [NAN]) * slots
        self.core = array("f", [NAN]) * slots  # the busiest core's maximum, where the agent published it
        self.gpu_max = array("f", [-inf]) * slots  # the highest so far: read only where every GPU reported
        self.gpu_sum = array("f", [0.0]) * slots
        self.reported = array("H", [0]) * slots  # how many GPUs gave a maximum that hour
        self.averaged = array("H", [0]) * slots
        self._times, _, self._index = _hours_of(origin, slots)
        self._maxima: dict[tuple[int, int], list[Sequence[float]]] = {}  # each run's GPUs' maxima, to fold
        self._folded = False  # whether a maximum was folded into the columns yet
        self._averaged = False  # whether a GPU's mean was added to the columns yet

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
        if first is None or tuple(times) != self._times[first : first + len(times)]:
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
        self._fill(self.cpu, times, values)

    def add_core_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """The busiest core's hourly maxima: the agent rolls every core up into one series per instance."""
        self._fill(self.core, times, values)

    def _fill(self, column: array[float], times: Sequence[datetime], values: Sequence[float]) -> None:
        """A series laid into its column: in one slice where its hours are the grid's own run, else hour by hour."""
        run = self._run(times)
        if run is not None:
            column[run] = array("f", values)
            return
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                column[slot] = value

    def add_gpu_max_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """One GPU's hourly maxima."""
        run = self._run(times)
        if run is not None and len(values) == len(times):
            self._maxima.setdefault((run.start, run.stop), []).append(values)
            return
        self._folded = True
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.gpu_max[slot] = max(self.gpu_max[slot], value)
                self.reported[slot] += 1
                if value >= self.busy_percent and self.busy[slot] < UNKNOWN_BUSY - 1:
                    self.busy[slot] += 1

    def add_gpu_avg_series(self, times: Sequence[datetime], values: Sequence[float]) -> None:
        """One GPU's hourly means. The first series is laid in as it is (0 + a mean is the mean, the same
        float32, for any mean but -0.0, which no GPU reports), the next ones added to it slot by slot; a list
        made in C is made into an array faster than the map it comes from (about 75 µs a GPU's fortnight
        before, 10 µs the first now, on the dev machine)."""
        run = self._run(times)
        if run is not None and len(values) == len(times):
            if not self._averaged:
                self.gpu_sum[run] = array("f", values)
                self.averaged[run] = array("H", [1]) * len(values)
            else:
                self.gpu_sum[run] = array("f", list(map(add, self.gpu_sum[run], values)))
                self.averaged[run] = array("H", list(map(add, self.averaged[run], repeat(1))))
            self._averaged = True
            return
        self._averaged = True
        for at, value in zip(times, values, strict=True):
            if (slot := self._slot(at)) >= 0:
                self.gpu_sum[slot] += value
                self.averaged[slot] += 1

    def _fold_maxima(self) -> None:
        """Each run's GPUs' maxima into the columns: the highest of them, how many reported, how many in use."""
        cap = UNKNOWN_BUSY - 1
        for (a, b), runs in self._maxima.items():
            top = runs[0] if len(runs) == 1 else list(map(max, *runs))
            in_use: list[int] = list(map(le, repeat(self.busy_percent), runs[0]))  # the threshold <= the value
            for values in runs[1:]:
                in_use = list(map(add, in_use, map(le, repeat(self.busy_percent), values)))
            if self._folded:
                self.gpu_max[a:b] = array("f", map(max, self.gpu_max[a:b], top))
                self.reported[a:b] = array("H", map(add, self.reported[a:b], repeat(len(runs))))
                self.busy[a:b] = array("B", map(min, map(add, self.busy[a:b], in_use), repeat(cap)))
            else:
                self.gpu_max[a:b] = array("f", top)
                self.reported[a:b] = array("H", [len(runs)]) * (b - a)
                # a count of fewer GPUs than the cap is its own minimum with it
                self.busy[a:b] = array("B", in_use if len(runs) < cap else map(min, in_use, repeat(cap)))
            self._folded = True
        self._maxima = {}

    def grid(self) -> HourGrid:
        self._fold_maxima()
        gpus, slots = self.gpus, self.slots
        if not gpus:
            gpu_max, busy = array("f", [NAN]) * slots, array("B", [UNKNOWN_BUSY]) * slots
        elif self.reported.count(gpus) == slots:  # every GPU reported every hour
            gpu_max, busy = self.gpu_max, self.busy
        else:  # an hour some GPU did not report is never read as idle, nor as using fewer GPUs than it has
            gpu_max = array("f", [m if n == gpus else NAN for m, n in zip(self.gpu_max, self.reported, strict=True)])
            busy = array("B", [b if n == gpus else UNKNOWN_BUSY for b, n in zip(self.busy, self.reported, strict=True)])
        if self.averaged.count(1) == slots:  # one GPU's means, each its own sum (divided by 1: the same float)
            gpu_avg = self.gpu_sum
        elif self.averaged.count(0) == 0:
            gpu_avg = array("f", map(truediv, self.gpu_sum, self.averaged))
        elif self.averaged.count(0) == slots:
            gpu_avg = array("f", [NAN]) * slots
        else:
            gpu_avg = array("f", [s / n if n else NAN for s, n in zip(self.gpu_sum, self.averaged, strict=True)])
        return HourGrid(self.origin, self.cpu, gpu_max, gpu_avg, busy, core=self.core)


def _columns(points: Iterable[tuple[datetime, float]]) -> tuple[list[datetime], list[float]]:
    pairs = list(points)
    return [at for at, _ in pairs], [value for _, value in pairs]
