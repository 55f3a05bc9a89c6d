"""Is this sample idle: the one rule the idle stopper (a point of its window) and the weekly digest (an
hour of the week) judge by. Pure.

A sample is idle only when it shows no work anywhere: every GPU under the GPU threshold, and the CPU
under its own: the busiest core's threshold where the CloudWatch agent publishes the busiest core (and
the instance's CPU under the CPU threshold), else the instance's CPU under a threshold one busy core
cannot hide under (IdlePolicy.cpu_threshold). A value that is missing is never under a threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from costguard.core.settings import IdlePolicy

# One sample's verdict from its CPU, the highest of its GPUs and its busiest core (None: missing).
Judge = Callable[[float | None, float | None, float | None], bool]


@dataclass(frozen=True)
class Levels:
    """The level at which each signal is work, for one machine."""

    gpu: float
    cpu: float  # the instance's CPUUtilization (the average over its vCPUs)
    busiest_core: float


def levels(policy: IdlePolicy, *, vcpus: int, busiest_core_known: bool) -> Levels:
    return Levels(
        gpu=policy.gpu_idle_percent,
        cpu=policy.cpu_threshold(vcpus, busiest_core_known=busiest_core_known),
        busiest_core=policy.busiest_core_percent,
    )


def idle_sample(
    policy: IdlePolicy,
    *,
    cpu: float | None,
    gpu: float | None,
    busiest_core: float | None,
    vcpus: int,
    gpu_telemetry: bool,
) -> bool:
    """One sample's verdict: `gpu` the highest of its GPUs (None: some GPU did not report), `busiest_core`
    the agent's busiest core (None: not published), `gpu_telemetry` whether the machine has GPU metrics."""
    return judge(policy, vcpus=vcpus, gpu_telemetry=gpu_telemetry)(cpu, gpu, busiest_core)


def judge(policy: IdlePolicy, *, vcpus: int, gpu_telemetry: bool) -> Judge:
    """idle_sample for one machine, its levels worked out once: the digest judges a fortnight of hours
    per machine, and must not build them again for each."""
    flat = levels(policy, vcpus=vcpus, busiest_core_known=False)
    cored = levels(policy, vcpus=vcpus, busiest_core_known=True)

    def idle(cpu: float | None, gpu: float | None, busiest_core: float | None) -> bool:
        if cpu is None:
            return False
        if busiest_core is None:
            if cpu >= flat.cpu:
                return False
        elif cpu >= cored.cpu or busiest_core >= cored.busiest_core:
            return False
        if gpu_telemetry:
            return gpu is not None and gpu < flat.gpu
        return True

    return idle
