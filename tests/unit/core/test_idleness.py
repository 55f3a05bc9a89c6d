"""What idle means (core/idleness.py): the one rule the idle stopper judges its window's points by and the
weekly digest its hours."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.idleness import GPU_MEMORY_HELD_MB, levels, memory_held, sample_judge, signals
from costguard.core.series import Signal
from costguard.core.settings import IdlePolicy

POLICY = IdlePolicy()


def idle(
    cpu: float | None, gpu: float | None, busiest_core: float | None, *, vcpus: int, telemetry: bool = True
) -> bool:
    return sample_judge(POLICY, vcpus=vcpus, gpu_telemetry=telemetry)(cpu, gpu, busiest_core)


def test_without_the_busiest_core_a_low_average_over_many_vcpus_is_work() -> None:
    # 48 vCPUs: one core at full load is 2.1 % of the average; the threshold is half that, 1.04 %
    assert levels(POLICY, vcpus=48, busiest_core_known=False).cpu == 50.0 / 48
    assert not idle(2.0, 0.5, None, vcpus=48)
    assert idle(1.0, 0.5, None, vcpus=48)


def test_with_the_busiest_core_the_core_decides_beside_the_cpu_and_every_gpu() -> None:
    assert idle(5.0, 0.5, 20.0, vcpus=48)
    assert not idle(5.0, 0.5, 80.0, vcpus=48)
    assert not idle(5.0, 6.0, 20.0, vcpus=48)


def test_a_value_at_its_level_is_work() -> None:
    at_gpu_level = POLICY.gpu_idle_percent
    assert not idle(1.0, at_gpu_level, None, vcpus=4)
    assert idle(1.0, at_gpu_level - 0.01, None, vcpus=4)
    assert not idle(5.0, 0.5, POLICY.busiest_core_percent, vcpus=48)


def test_missing_data_is_never_idle() -> None:
    assert not idle(None, 0.5, None, vcpus=4)
    assert not idle(1.0, None, None, vcpus=4)
    assert idle(1.0, None, None, vcpus=4, telemetry=False)


def test_the_busiest_core_is_judged_where_published_and_the_network_where_it_is_a_signal() -> None:
    assert signals(POLICY, busiest_core_known=False) == (Signal.GPU, Signal.CPU)
    assert signals(POLICY, busiest_core_known=True) == (Signal.GPU, Signal.CPU, Signal.BUSIEST_CORE)
    networked = replace(POLICY, network_idle_bytes_per_second=1024.0)
    assert signals(networked, busiest_core_known=False) == (
        Signal.GPU,
        Signal.CPU,
        Signal.NETWORK_IN,
        Signal.NETWORK_OUT,
    )
    assert levels(networked, vcpus=4, busiest_core_known=False).by_signal()[Signal.NETWORK_OUT] == 1024.0


# ------------------------------------------------------------------ GPU memory held


def test_gpu_memory_at_or_above_a_cuda_context_is_held_and_the_last_such_point_is_said() -> None:
    start = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    points = [(start + timedelta(minutes=5 * k), mb) for k, mb in enumerate([3.0, 30000.0, GPU_MEMORY_HELD_MB, 3.0])]
    assert memory_held(points, start, start + timedelta(hours=1)) == (start + timedelta(minutes=10), 256.0)


def test_a_gpu_with_only_the_drivers_few_mb_holds_nothing() -> None:
    start = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    points = [(start + timedelta(minutes=5 * k), 3.0) for k in range(12)]
    assert memory_held(points, start, start + timedelta(hours=1)) is None


def test_memory_held_outside_the_period_or_not_published_says_nothing() -> None:
    start = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    before = [(start - timedelta(minutes=5), 30000.0)]
    assert memory_held(before, start, start + timedelta(hours=1)) is None
    assert memory_held([], start, start + timedelta(hours=1)) is None
