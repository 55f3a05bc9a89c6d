"""Utilization as CloudWatch returns it: one series per signal of one instance. Plain records, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

Point = tuple[datetime, float]


class Signal(StrEnum):
    GPU = "gpu"
    GPU_MEMORY = "gpu-memory"  # the CloudWatch agent's nvidia_smi_memory_used (MB), where its configuration has it
    CPU = "cpu"  # CPUUtilization: the average over every vCPU
    BUSIEST_CORE = "busiest-core"  # the CloudWatch agent's per-core cpu_usage_active, its Maximum
    NETWORK_IN = "network-in"
    NETWORK_OUT = "network-out"
    # SageMaker: a notebook instance's kernel activity (costguard's lifecycle configuration publishes it with
    # the busiest core and GPU), an endpoint variant's invocations and its instances' CPU (the proof that its
    # metrics flow).
    KERNEL_ACTIVITY = "kernel-activity"
    INVOCATIONS = "invocations"


@dataclass(frozen=True)
class Series:
    """One CloudWatch time series of one instance, oldest point first. Network is in bytes per second."""

    signal: Signal
    label: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Utilization:
    """Everything fetched for one instance in one run."""

    instance_id: str
    series: tuple[Series, ...] = ()
    gpu_telemetry: bool = False  # GPU series were published in the last 14 days
    error: str = ""  # the fetch failed: nothing here may be read as idle
    vcpus: int = 0

    def of(self, signal: Signal) -> list[Series]:
        return [s for s in self.series if s.signal is signal]


@dataclass
class FleetUtilization:
    """Utilization of many instances, as one fetch returns it."""

    by_instance: dict[str, Utilization] = field(default_factory=dict)
    gpu_series: Mapping[str, Sequence[tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    def get(self, instance_id: str) -> Utilization:
        return self.by_instance.get(instance_id) or Utilization(instance_id, error="no metrics were fetched")
