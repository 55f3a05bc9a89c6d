"""The stopper's judgement of a window and the digest's of an hour are one rule (core/idleness.py): a machine
steady at the same values is idle for both or for neither."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.core.idleness import sample_judge as digest_judge
from costguard.core.series import Series, Signal, Utilization
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.judgement import Verdict, judge, system_bursts

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
POLICY = IdlePolicy()
PERIOD = timedelta(seconds=POLICY.period_seconds)
STEPS = POLICY.window_minutes * 60 // POLICY.period_seconds + 1

VALUES = st.floats(0.0, 100.0, allow_nan=False)


def steady(signal: Signal, label: str, value: float) -> Series:
    return Series(signal, label, tuple((NOW - PERIOD * (STEPS - i), value) for i in range(STEPS)))


@settings(max_examples=300, deadline=None)
@given(
    cpu=VALUES,
    gpus=st.lists(VALUES, max_size=4),
    core=st.none() | VALUES,
    vcpus=st.sampled_from([4, 8, 48, 192]),
)
def test_a_steady_machine_is_idle_for_the_stopper_exactly_when_the_digest_calls_its_hours_idle(
    cpu: float, gpus: list[float], core: float | None, vcpus: int
) -> None:
    series = [steady(Signal.GPU, f"GPU {i}", value) for i, value in enumerate(gpus)]
    series.append(steady(Signal.CPU, "CPU", cpu))
    if core is not None:
        series.append(steady(Signal.BUSIEST_CORE, "busiest core", core))
    machine = Utilization("i-1", tuple(series), gpu_telemetry=bool(gpus), vcpus=vcpus)
    stopper = judge(machine, POLICY, NOW).verdict
    assert stopper is not Verdict.INSUFFICIENT  # every period has its point
    hour = digest_judge(POLICY, vcpus=vcpus, gpu_telemetry=bool(gpus))(cpu, max(gpus, default=None), core)
    assert (stopper is Verdict.IDLE) == hour


def test_a_gpu_that_did_not_report_is_idle_for_neither() -> None:
    machine = Utilization("i-1", (steady(Signal.CPU, "CPU", 0.1),), gpu_telemetry=True, vcpus=8)
    assert judge(machine, POLICY, NOW).verdict is Verdict.INSUFFICIENT
    assert not digest_judge(POLICY, vcpus=8, gpu_telemetry=True)(0.1, None, None)


def test_gpu_memory_held_is_said_beside_the_verdict_and_memory_not_held_says_nothing() -> None:
    quiet = [steady(Signal.GPU, "GPU 0", 0.0), steady(Signal.CPU, "CPU", 0.1), steady(Signal.BUSIEST_CORE, "c", 2.0)]
    held = Utilization("i-1", (*quiet, steady(Signal.GPU_MEMORY, "GPU 0 memory", 30000.0)), gpu_telemetry=True, vcpus=8)
    judged = judge(held, POLICY, NOW)
    assert judged.verdict is Verdict.IDLE  # the check, or its absence, says what memory held means
    assert judged.memory_held == f"GPU 0 held 29.3 GB of memory at {NOW - PERIOD:%H:%M} UTC"
    free = Utilization("i-1", (*quiet, steady(Signal.GPU_MEMORY, "GPU 0 memory", 3.0)), gpu_telemetry=True, vcpus=8)
    assert judge(free, POLICY, NOW).memory_held == ""


# ---------------------------------------------------------------------- a machine no check answers for
HOURS = 4
LONG = int(HOURS * 3600 // POLICY.period_seconds)


def series(signal: Signal, label: str, values: list[float]) -> Series:
    return Series(signal, label, tuple((NOW - PERIOD * (len(values) - i), v) for i, v in enumerate(values)))


def at_rest_but(
    core: dict[int, float],
    *,
    gpu: dict[int, float] | None = None,
    memory: float | None = 3.0,
    cores_busy: float = 1.0,
    gap: tuple[int, ...] = (),
    second_gpu_memory: bool = True,
) -> Utilization:
    """Four hours of a two-GPU machine at rest (its GPUs at 0 %, their memory free), but for its busiest core at
    `core`'s periods (`cores_busy` cores busy then: the CPU's average), its first GPU at `gpu`'s; `memory` None: GPU
    memory not published; `gap`: periods whose GPU memory points are missing; `second_gpu_memory` False: the second
    GPU's memory not published."""
    cores = [core.get(i, 2.0) for i in range(LONG)]
    cpu = [cores_busy * c / 8 if i in core else c / 8 for i, c in enumerate(cores)]
    gpus = [(gpu or {}).get(i, 0.0) for i in range(LONG)]
    out = [
        series(Signal.GPU, "GPU 0", gpus),
        series(Signal.GPU, "GPU 1", [0.0] * LONG),
        series(Signal.CPU, "CPU", cpu),
        series(Signal.BUSIEST_CORE, "c", cores),
    ]
    if memory is not None:
        for label in ("GPU 0 memory", "GPU 1 memory")[: 2 if second_gpu_memory else 1]:
            points = tuple((NOW - PERIOD * (LONG - i), memory) for i in range(LONG) if i not in gap)
            out.append(Series(Signal.GPU_MEMORY, label, points))
    return Utilization("i-1", tuple(out), gpu_telemetry=True, vcpus=8)


def test_a_short_burst_of_one_core_on_a_machine_at_rest_is_the_systems_and_does_not_restart_its_window() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}  # an hour ago, ten minutes of apt's timer
    machine = at_rest_but(burst)
    assert judge(machine, POLICY, NOW).verdict is Verdict.BUSY  # as before: the window starts again
    bursts = system_bursts(machine, POLICY)
    assert len(bursts) == 2
    judged = judge(machine, POLICY, NOW, excused=lambda t: t in bursts)
    assert judged.verdict is Verdict.IDLE


def test_a_burst_is_not_the_systems_where_anything_else_stirs_or_is_not_seen() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}
    assert not system_bursts(at_rest_but({**burst, LONG - 13: 100.0, LONG - 14: 100.0}), POLICY)  # 20 minutes
    again = system_bursts(at_rest_but({**burst, LONG - 20: 100.0}), POLICY)  # another burst 40 minutes before it
    assert again == {NOW - PERIOD * 20}  # the first may be the system's; the second is something going on
    assert not system_bursts(at_rest_but(burst, gpu={LONG - 11: 40.0}), POLICY)  # its GPU at work with it
    assert not system_bursts(at_rest_but(burst, memory=30000.0), POLICY)  # a job holding GPU memory: loading, waiting
    assert not system_bursts(at_rest_but(burst, memory=None), POLICY)  # memory not published: not known at rest
    assert not system_bursts(at_rest_but({3: 100.0}), POLICY)  # the hour before it not read


def test_a_burst_still_going_on_or_not_yet_seen_over_is_never_the_systems() -> None:
    assert not system_bursts(at_rest_but({LONG - 2: 100.0, LONG - 1: 100.0}), POLICY)  # the last ten minutes
    assert not system_bursts(at_rest_but({LONG - 3: 100.0, LONG - 2: 100.0}), POLICY)  # one quiet point after it
    assert system_bursts(at_rest_but({LONG - 4: 100.0, LONG - 3: 100.0}), POLICY)  # two: it is over


def test_a_burst_after_a_warning_is_judged_as_it_is() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}
    assert not system_bursts(at_rest_but(burst), POLICY, before=NOW - PERIOD * 12)  # warned just before it
    assert system_bursts(at_rest_but(burst), POLICY, before=NOW - PERIOD * 5)  # warned after it was over


def test_a_burst_of_more_than_one_cores_worth_is_work() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}
    assert system_bursts(at_rest_but(burst, cores_busy=1.0), POLICY)
    assert not system_bursts(at_rest_but(burst, cores_busy=8.0), POLICY)  # every core: preprocessing, tokenizing


def test_a_burst_where_any_gpus_memory_was_not_published_is_not_the_systems() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}
    assert not system_bursts(at_rest_but(burst, gap=(LONG - 11,)), POLICY)  # its memory missing in the burst
    assert not system_bursts(at_rest_but(burst, gap=(LONG - 9,)), POLICY)  # ... just after it
    assert not system_bursts(at_rest_but(burst, second_gpu_memory=False), POLICY)  # one GPU's memory not published
    doubled = at_rest_but(burst, second_gpu_memory=False)  # GPU 0's memory listed twice, GPU 1's not at all
    twice = [s for s in doubled.series if s.signal is Signal.GPU_MEMORY]
    assert not system_bursts(replace(doubled, series=(*doubled.series, *twice)), POLICY)


def test_a_burst_must_be_over_before_the_warning_to_the_period() -> None:
    burst = {LONG - 12: 100.0, LONG - 11: 100.0}  # its two quiet periods after it end at NOW - 8 periods
    assert system_bursts(at_rest_but(burst), POLICY, before=NOW - PERIOD * 8)
    assert not system_bursts(at_rest_but(burst), POLICY, before=NOW - PERIOD * 8 - timedelta(seconds=1))
