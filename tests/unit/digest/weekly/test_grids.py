"""The digest's hour grids, folded and counted without an object per hour, say exactly what Hour
objects say: the same figures to the last bit, the same advice, in the same order."""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import MetricRef
from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from costguard.core.series import Signal
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules.advice import advise, observe, schedule_advice, spot_candidates, weigh
from costguard.digest.weekly.rules.figures import InstanceWeek, empty_week, summarize, tally_into
from costguard.digest.weekly.rules.grid import UNKNOWN_BUSY, Hour, HourFolder, HourGrid

ORIGIN = datetime(2026, 11, 9, tzinfo=UTC)  # a Monday
H = timedelta(hours=1)
POLICY = IdlePolicy()
# Values around the thresholds (CPU 10 %, or 50 / 48 = 1.04 % without the busiest core; GPU 5 %; the
# busiest core 50 %), and missing ones.
VALUES = st.one_of(
    st.none(), st.sampled_from([0.0, 1.0, 1.05, 1.5, 4.99, 5.0, 9.99, 10.0, 10.01, 33.3, 49.99, 50.0, 80.0, 100.0])
)


def instance(hours: Sequence[Hour], *, gpus: int = 2, telemetry: bool = True, iid: str = "i-1") -> InstanceWeek:
    return InstanceWeek(iid, "g5.12xlarge", "us-east-1", "ana", "nlp", gpus, 5.672, telemetry, "running", hours)


@st.composite
def grids(draw: Any) -> HourGrid:
    slots = draw(st.integers(1, 80))
    column = st.lists(VALUES, min_size=slots, max_size=slots)

    def f32(values: list[float | None]) -> array[float]:
        return array("f", [math.nan if v is None else v for v in values])

    busy = draw(st.lists(st.sampled_from([0, 1, 2, UNKNOWN_BUSY]), min_size=slots, max_size=slots))
    cpu, gpu_max, gpu_avg, core = (f32(draw(column)) for _ in range(4))
    return HourGrid(ORIGIN, cpu, gpu_max, gpu_avg, array("B", busy), core=core)


@settings(max_examples=200, deadline=None)
@given(grids(), st.integers(-5, 90), st.integers(0, 90), st.booleans())
def test_a_grid_counts_the_same_week_as_its_hours_as_objects(grid: HourGrid, first: int, span: int, seen: bool) -> None:
    start, end = ORIGIN + H * first + timedelta(minutes=first % 3 * 20), ORIGIN + H * (first + span)
    as_grid = summarize([instance(grid, telemetry=seen), instance(grid, telemetry=seen, iid="i-2")], start, end, POLICY)
    as_hours = summarize(
        [instance(tuple(grid), telemetry=seen), instance(tuple(grid), telemetry=seen, iid="i-2")], start, end, POLICY
    )
    assert as_grid == as_hours  # every figure, float for float: Figures and Week compare field by field
    assert grid.between(start, end) == [h for h in grid if start <= h.at < end]


@settings(max_examples=100, deadline=None)
@given(grids(), st.integers(0, 90))
def test_a_grid_from_a_moment_on_keeps_the_same_hours_from_then_on(grid: HourGrid, first: int) -> None:
    since = grid.since(ORIGIN + H * first)
    assert list(since) == [h for h in grid if h.at >= ORIGIN + H * first]
    whole = instance(grid)
    assert whole.since(ORIGIN + H * first).hours == since


def test_counting_a_week_instance_by_instance_is_summarizing_it() -> None:
    # a: CPU 2 % with no core over 6 % (the agent's busiest core), its GPUs quiet: idle
    a = instance(tuple(Hour(ORIGIN + H * k, 2.0, 1.0, 0.5, 0, 6.0) for k in range(30)))
    b = instance(tuple(Hour(ORIGIN + H * k, 50.0, 90.0, 80.0, 2, 100.0) for k in range(10, 20)), iid="i-2")
    week = empty_week(ORIGIN, ORIGIN + timedelta(days=1))
    for machine in (a, b):
        tally_into(week, machine, POLICY)
    assert week == summarize([a, b], ORIGIN, ORIGIN + timedelta(days=1), POLICY)
    assert week.fleet.idle_gpu_hours == 24 * 2  # a's first day idle on both GPUs; b worked
    assert len(week.per_day) == 1


class OldFolder:
    """The folding as it was, a point at a time (the reference the runs must match)."""

    def __init__(self, slots: int, gpus: int) -> None:
        self.slots, self.gpus = slots, gpus
        self.busy = array("B", [0]) * slots
        self.cpu = array("f", [math.nan]) * slots
        self.gpu_max = array("f", [math.nan]) * slots
        self.gpu_sum = array("f", [0.0]) * slots
        self.reported = array("H", [0]) * slots
        self.averaged = array("H", [0]) * slots

    def _slot(self, at: datetime) -> int:
        slot = int((at - ORIGIN).total_seconds() // 3600)
        return slot if 0 <= slot < self.slots else -1

    def fold(self, kind: str, points: list[tuple[datetime, float]]) -> None:
        for at, value in points:
            if (slot := self._slot(at)) < 0:
                continue
            if kind == "cpu":
                self.cpu[slot] = value
            elif kind == "max":
                current = self.gpu_max[slot]
                self.gpu_max[slot] = value if math.isnan(current) else max(current, value)
                self.reported[slot] += 1
                if value >= 5.0 and self.busy[slot] < UNKNOWN_BUSY - 1:
                    self.busy[slot] += 1
            else:
                self.gpu_sum[slot] += value
                self.averaged[slot] += 1

    def grid(self) -> HourGrid:
        gpu_max, busy = array("f", self.gpu_max), array("B", self.busy)
        for slot in range(self.slots):
            if not self.gpus or self.reported[slot] != self.gpus:
                gpu_max[slot] = math.nan
                busy[slot] = UNKNOWN_BUSY
        gpu_avg = array("f", (s / n if n else math.nan for s, n in zip(self.gpu_sum, self.averaged, strict=True)))
        return HourGrid(ORIGIN, self.cpu, gpu_max, gpu_avg, busy)


series = st.tuples(
    st.sampled_from(["cpu", "max", "avg"]),
    st.integers(-3, 30),  # the first hour (before the grid, in it, after it)
    st.lists(st.floats(0, 100, width=32), min_size=1, max_size=30),
    st.sampled_from(["run", "gaps", "off the hour"]),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 3), st.lists(series, max_size=8))
def test_folding_a_run_of_hours_at_once_is_folding_it_point_by_point(gpus: int, folds: list[Any]) -> None:
    new, old = HourFolder(ORIGIN, 24, gpus), OldFolder(24, gpus)
    for kind, first, values, shape in folds:
        step = 2 if shape == "gaps" else 1
        shift = timedelta(minutes=17) if shape == "off the hour" else timedelta()
        times = [ORIGIN + H * (first + k * step) + shift for k in range(len(values))]
        add = {"cpu": new.add_cpu_series, "max": new.add_gpu_max_series, "avg": new.add_gpu_avg_series}[kind]
        add(times, values)
        old.fold(kind, list(zip(times, values, strict=True)))
    made, expected = new.grid(), old.grid()
    for column in ("cpu", "gpu_max", "gpu_avg", "busy"):
        assert getattr(made, column).tobytes() == getattr(expected, column).tobytes(), column


def price(instance_type: str, region: str) -> float | None:
    return BUNDLED_USD_PER_HOUR.get(instance_type)


def test_weighing_each_machine_in_turn_gives_every_kind_of_advice_in_the_same_order() -> None:
    start, end = ORIGIN, ORIGIN + timedelta(days=7)
    machines = []
    for n, (gpu, load) in enumerate([(80.0, 10.0), (12.0, 30.0), (90.0, 50.0), (1.0, 1.0)] * 3):
        hours = [
            Hour(start + timedelta(days=d, hours=h), load, gpu, gpu * 0.8, 1 if gpu > 5 else 0)
            if 8 <= h < 20 and h != 14  # a break at 14:00: runs of 6 and 5 hours, as Spot advice wants them
            else Hour(start + timedelta(days=d, hours=h), 1.0, 1.0, 0.5, 0)
            for d in range(7)
            for h in range(24)
        ]
        machines.append(
            InstanceWeek(
                f"i-{n}",
                "g5.12xlarge",
                "us-east-1",
                "ana",
                "",
                4,
                5.672,
                True,
                "running",
                tuple(hours),
                "",
                "us-east-1a",
            )
        )
    weighed = weigh(observe(machines, start, end), POLICY, price, exclude=frozenset({"i-2"}))
    assert weighed.sizes == advise(observe(machines, start, end), POLICY, price)
    assert weighed.spot == spot_candidates(observe(machines, start, end), POLICY)
    assert weighed.schedules == schedule_advice(observe(machines, start, end), POLICY, exclude=frozenset({"i-2"}))
    assert [bool(weighed.sizes), bool(weighed.spot), bool(weighed.schedules)] == [True] * 3  # each kind compared


class PagedCloudWatch:
    """GetMetricData that cuts every answer in two, the way CloudWatch pages past its datapoint quota."""

    def __init__(self) -> None:
        self.calls = 0

    def get_metric_data(self, **params: Any) -> dict[str, Any]:
        self.calls += 1
        times = [ORIGIN + H * k for k in range(6)]
        first = params.get("NextToken") is None
        results: list[dict[str, Any]] = []
        for query in params["MetricDataQueries"]:
            if query["Id"] == "q1":
                results.append({"Id": "q1", "StatusCode": "Forbidden"})
                continue
            part = slice(0, 4) if first else slice(4, 6)
            values = [float(k) for k in range(6)]
            results.append({"Id": query["Id"], "Timestamps": times[part], "Values": values[part]})
        return {"MetricDataResults": results, **({"NextToken": "rest"} if first else {})}


def test_a_series_cut_over_two_pages_is_read_whole_in_columns() -> None:
    refs = [
        MetricRef("i-1", Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", (("InstanceId", "i-1"),), "Maximum"),
        MetricRef("i-2", Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", (("InstanceId", "i-2"),), "Maximum"),
    ]
    cloudwatch = PagedCloudWatch()
    columns, failed = MetricReader(cast(Any, cloudwatch), POLICY).fetch_columns(
        refs, ORIGIN, ORIGIN + H * 5, period=3600
    )
    assert columns[refs[0]] == ([ORIGIN + H * k for k in range(6)], [float(k) for k in range(6)])
    assert failed == {refs[1]: "Forbidden for CPU"}
    assert cloudwatch.calls == 2
