"""Is this sample idle (core/idleness.py): the one rule the idle stopper judges its window's points by."""

from __future__ import annotations

from costguard.core.idleness import idle_sample, levels
from costguard.core.settings import IdlePolicy

POLICY = IdlePolicy()


def test_without_the_busiest_core_a_low_average_over_many_vcpus_is_work() -> None:
    # 48 vCPUs: one core at full load is 2.1 % of the average; the threshold is half that, 1.04 %
    assert levels(POLICY, vcpus=48, busiest_core_known=False).cpu == 50.0 / 48
    assert not idle_sample(POLICY, cpu=2.0, gpu=0.5, busiest_core=None, vcpus=48, gpu_telemetry=True)
    assert idle_sample(POLICY, cpu=1.0, gpu=0.5, busiest_core=None, vcpus=48, gpu_telemetry=True)


def test_with_the_busiest_core_the_core_decides_beside_the_cpu_and_every_gpu() -> None:
    assert idle_sample(POLICY, cpu=5.0, gpu=0.5, busiest_core=20.0, vcpus=48, gpu_telemetry=True)
    assert not idle_sample(POLICY, cpu=5.0, gpu=0.5, busiest_core=80.0, vcpus=48, gpu_telemetry=True)
    assert not idle_sample(POLICY, cpu=5.0, gpu=6.0, busiest_core=20.0, vcpus=48, gpu_telemetry=True)


def test_missing_data_is_never_idle() -> None:
    assert not idle_sample(POLICY, cpu=None, gpu=0.5, busiest_core=None, vcpus=4, gpu_telemetry=True)
    assert not idle_sample(POLICY, cpu=1.0, gpu=None, busiest_core=None, vcpus=4, gpu_telemetry=True)
    assert idle_sample(POLICY, cpu=1.0, gpu=None, busiest_core=None, vcpus=4, gpu_telemetry=False)
