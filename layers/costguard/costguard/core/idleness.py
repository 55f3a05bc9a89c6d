"""Is this sample idle: the one rule the idle stopper (a point of its window) and the weekly digest (an
hour of the week) judge by. Pure.

A sample is idle only when it shows no work anywhere: every GPU under the GPU threshold, and the CPU
under its own: the busiest core's threshold where the CloudWatch agent publishes the busiest core (and
the instance's CPU under the CPU threshold), else the instance's CPU under a threshold one busy core
cannot hide under (IdlePolicy.cpu_threshold). A value that is missing is never under a threshold.
"""

from __future__ import annotations

from dataclasses import dataclass

from costguard.core.settings import IdlePolicy


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
    if cpu is None:
        return False
    level = levels(policy, vcpus=vcpus, busiest_core_known=busiest_core is not None)
    if cpu >= level.cpu or (busiest_core is not None and busiest_core >= level.busiest_core):
        return False
    if gpu_telemetry:
        return gpu is not None and gpu < level.gpu
    return True
