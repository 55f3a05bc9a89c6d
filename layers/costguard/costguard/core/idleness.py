"""What idle means: the one rule the idle stopper (each point of its window, idle/rules/judgement.py) and the
weekly digest (each hour of the week, `sample_judge`) judge by. Pure.

A machine is idle only when it shows no work anywhere: every GPU under the GPU threshold, and the CPU under
its own: the busiest core's threshold where the CloudWatch agent publishes the busiest core (and the
instance's CPU under the CPU threshold), else the instance's CPU under a threshold one busy core cannot hide
under (IdlePolicy.cpu_threshold); the network too where it is a signal (the stopper's; the digest reads no
network). A value at or above its level is work; a value that is missing is never under a level.

GPU memory held (the agent's nvidia_smi_memory_used, where its configuration collects it) is work that the
GPU's utilization cannot see: a job waiting on a queue or on upstream data holds its model in GPU memory at
0 %. Metrics cannot say whose it is, a job's or an idle notebook kernel's; the activity check can
(idle/rules/activity.py), so memory held decides only where the check cannot answer (`memory_held`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from costguard.core.series import Signal
from costguard.core.settings import IdlePolicy

# One sample's verdict from its CPU, the highest of its GPUs and its busiest core (None: missing).
Judge = Callable[[float | None, float | None, float | None], bool]


@dataclass(frozen=True)
class Levels:
    """The level at which each signal is work, for one machine."""

    gpu: float
    cpu: float  # the instance's CPUUtilization (the average over its vCPUs)
    busiest_core: float
    network: float  # bytes per second each way; 0 or less: the network is not a signal

    def by_signal(self) -> dict[Signal, float]:
        return {
            Signal.GPU: self.gpu,
            Signal.CPU: self.cpu,
            Signal.BUSIEST_CORE: self.busiest_core,
            Signal.NETWORK_IN: self.network,
            Signal.NETWORK_OUT: self.network,
        }


def levels(policy: IdlePolicy, *, vcpus: int, busiest_core_known: bool) -> Levels:
    return Levels(
        gpu=policy.gpu_idle_percent,
        cpu=policy.cpu_threshold(vcpus, busiest_core_known=busiest_core_known),
        busiest_core=policy.busiest_core_percent,
        network=policy.network_idle_bytes_per_second,
    )


def signals(policy: IdlePolicy, *, busiest_core_known: bool) -> tuple[Signal, ...]:
    """The signals that must all be under their levels: every GPU and the CPU, the busiest core where it is
    published (without it, the CPU's own level is the strict one), the network where it is a signal."""
    judged = [Signal.GPU, Signal.CPU]
    if busiest_core_known:
        judged.append(Signal.BUSIEST_CORE)
    if policy.network_idle_bytes_per_second > 0:
        judged += [Signal.NETWORK_IN, Signal.NETWORK_OUT]
    return tuple(judged)


def is_work(value: float, level: float) -> bool:
    return value >= level


# A CUDA context alone takes a few hundred MB; a GPU nobody uses shows a few MB (the driver's). At or above
# this, a process holds the GPU.
GPU_MEMORY_HELD_MB = 256.0


def memory_held(
    points: Iterable[tuple[datetime, float]], start: datetime, end: datetime
) -> tuple[datetime, float] | None:
    """The last point in [start, end) at which a GPU's memory was held (MB), or None: none held, or no points
    (memory not published is no sign either way: the other signals decide)."""
    held = [(t, v) for t, v in points if start <= t < end and is_work(v, GPU_MEMORY_HELD_MB)]
    return max(held, default=None)


def sample_judge(policy: IdlePolicy, *, vcpus: int, gpu_telemetry: bool) -> Judge:
    """One sample's verdict for one machine, its levels worked out once (the digest judges a fortnight of
    hours per machine, and must not build them again for each): `gpu` the highest of its GPUs (None: some
    GPU did not report), `busiest_core` the agent's busiest core (None: not published), `gpu_telemetry`
    whether the machine has GPU metrics. No network: the digest does not read it."""
    flat = levels(policy, vcpus=vcpus, busiest_core_known=False)
    cored = levels(policy, vcpus=vcpus, busiest_core_known=True)

    # is_work inlined: the digest calls this for every hour of a fleet's fortnight, and a call per signal
    # made each sample 2 to 3 times slower.
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
