"""The SageMaker week in figures, and what an idle endpoint has cost. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from costguard.core.sagemaker import Resource, has_nvidia_gpu
from costguard.core.series import Point, Signal
from costguard.core.settings import SageMakerPolicy
from costguard.state.entries import Entry, EntryKind

LOOKBACK = timedelta(days=90)  # how far back an endpoint's last invocation is looked for


def idle_notebook_hours(
    series: Mapping[Signal, Sequence[Point]] | None, policy: SageMakerPolicy, instance_type: str
) -> int:
    """Hours with a kernel and a CPU report (and a GPU one on an NVIDIA type) in which no kernel was at work,
    and the busiest core and GPU stayed under their thresholds."""
    found = series or {}
    kernels = dict(found.get(Signal.KERNEL_ACTIVITY, ()))
    cores = dict(found.get(Signal.BUSIEST_CORE, ()))
    gpus = dict(found.get(Signal.GPU, ()))
    nvidia = has_nvidia_gpu(instance_type)

    def quiet(t: datetime) -> bool:
        core, gpu = cores.get(t), gpus.get(t)
        if core is None or core >= policy.busiest_core_percent:
            return False
        if gpu is None:
            return not nvidia
        return gpu < policy.gpu_idle_percent

    return sum(1 for t, v in kernels.items() if v == 0 and quiet(t))


def endpoint_cost_since(
    endpoint: Resource, last_invoked: datetime | None, hourly: float | None, now: datetime
) -> tuple[float | None, datetime]:
    """What the endpoint has cost since its last invocation (the end of that day), or since it became what it
    is now when no invocation is known (at most the 90 days looked at): (USD or None, since when)."""
    since = last_invoked + timedelta(days=1) if last_invoked else max(endpoint.since, now - LOOKBACK)
    since = max(since, endpoint.since)
    if hourly is None:
        return None, since
    return hourly * max(0.0, (now - since).total_seconds() / 3600), since


@dataclass(frozen=True)
class Zombie:
    name: str
    owner: str
    daily_usd: float
    reason: str


@dataclass
class SageMakerWeek:
    notebooks: int = 0
    apps: int = 0
    endpoints: int = 0
    daily_usd: float = 0.0  # what the GPU resources InService now cost a day together
    idle_hours: float = 0.0  # notebook instances and Studio apps, judged idle now, for as long as they were
    zombie_days: float = 0.0  # endpoint-days without an invocation, this week
    idle_usd: float = 0.0
    warned: int = 0
    stopped: int = 0
    deleted: int = 0
    kept: int = 0
    zombies: list[Zombie] = field(default_factory=list)
    unwatched: list[str] = field(default_factory=list)  # GPU notebook instances reporting no kernel activity
    idle_shutdown_off: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.notebooks or self.apps or self.endpoints or self.warned or self.stopped or self.deleted)

    def count(self, entries: Sequence[Entry]) -> None:
        """What costguard did to SageMaker resources this week, from the ledger."""
        done = [e for e in entries if e.applied]
        self.warned = sum(1 for e in done if e.kind is EntryKind.SAGEMAKER_WARN)
        self.stopped = sum(1 for e in done if e.kind is EntryKind.SAGEMAKER_STOP)
        self.deleted = sum(1 for e in done if e.kind is EntryKind.SAGEMAKER_DELETE)
        self.kept = sum(1 for e in done if e.kind is EntryKind.SAGEMAKER_KEEP)
