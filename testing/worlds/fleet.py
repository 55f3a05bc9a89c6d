"""The benchmark's fleet: N GPU instances whose metrics are a function of time, so any backend can serve them.

Every instance publishes CPUUtilization (AWS/EC2, InstanceId) and, through the CloudWatch agent, one
`nvidia_smi_utilization_gpu` series per GPU (InstanceId, index, name, arch) plus the agent's
InstanceId-only aggregate (`aggregation_dimensions: [["InstanceId"]]`, the maximum over the GPUs),
which is the only GPU series a Cloud Custodian `metrics` filter can name, and the busiest CPU core
(`cpu_usage_active` rolled up by InstanceId, as docs/cloudwatch-agent.json publishes it).
Points every 5 minutes.

Kinds, and what a correct tool does with each (`should_stop`):
- idle: every GPU and the CPU low for hours; warned 40 min ago, grace over    → stopped
- busy: training                                                             → kept
- one_gpu_busy: 4 or 8 GPUs, all idle but the last one, CPU low              → kept
- cpu_busy: GPUs idle, CPU busy (data loading, CPU-side work)                → kept
- spike: idle, warned, then one GPU busy for 5 minutes after the warning     → kept (back at work)
- gap: idle, warned, but the GPU agent sent nothing for 30 minutes of the
  window: missing data is never idleness                                     → kept
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

STEP = 300  # seconds between points
KINDS = (("idle", 0.10), ("one_gpu_busy", 0.02), ("cpu_busy", 0.02), ("spike", 0.02), ("gap", 0.02))
TYPES = (("g5.xlarge", 1, "NVIDIA A10G", 0.6), ("g5.12xlarge", 4, "NVIDIA A10G", 0.3), ("p4d.24xlarge", 8, "A100", 0.1))
WARNED = {"idle", "spike", "gap"}
GPU_METRIC = "nvidia_smi_utilization_gpu"
CORE_METRIC = "cpu_usage_active"
BUSIEST_CORE = -2
IDLE_VALUE, BUSY_VALUE = 1.0, 70.0

Dims = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class SimInstance:
    index: int
    instance_id: str
    instance_type: str
    gpus: int
    gpu_name: str
    kind: str
    owner: str

    @property
    def should_stop(self) -> bool:
        return self.kind == "idle"


@dataclass(frozen=True)
class Series:
    instance: SimInstance
    namespace: str
    name: str
    dims: Dims  # in the order the publisher sends them
    gpu: int | None  # None: CPU; -1: the aggregate over GPUs; -2: the busiest CPU core

    @property
    def key(self) -> tuple[str, str, frozenset[tuple[str, str]]]:
        return (self.namespace, self.name, frozenset(self.dims))


class Fleet:
    def __init__(self, n: int, t0: datetime | None = None, *, owners: int = 200, warned: bool = True) -> None:
        """`owners` people own the fleet in turn; `warned`: the idle machines were warned earlier (their
        stop is due), else none was (a first sweep)."""
        self.owners, self.warned = owners, warned
        now = t0 or datetime.now(UTC)
        self.t0 = datetime.fromtimestamp(int(now.timestamp()) // STEP * STEP, UTC)
        self.launch = self.t0 - timedelta(hours=3)
        self.warned_at = self.t0 - timedelta(minutes=40)
        self.stop_after = self.warned_at + timedelta(minutes=30)
        self.instances = [self._instance(k, n) for k in range(n)]
        self.series = [s for i in self.instances for s in self._series(i)]

    @staticmethod
    def _pick(k: int, n: int, table: tuple[tuple[str, float], ...], default: str) -> str:
        """Deterministic spread: the k-th instance's kind by where k falls in the cumulative shares."""
        position = (k * 7919) % n / n  # a stride coprime with most n, so kinds are spread over the fleet
        total = 0.0
        for name, share in table:
            total += share
            if position < total:
                return name
        return default

    def _instance(self, k: int, n: int) -> SimInstance:
        type_table = tuple((name, share) for name, _, _, share in TYPES)
        instance_type = self._pick((k * 31 + 7) % n, n, type_table, TYPES[0][0])
        _, gpus, gpu_name, _ = next(t for t in TYPES if t[0] == instance_type)
        kind = self._pick(k, n, KINDS, "busy")
        if kind == "one_gpu_busy" and gpus == 1:
            kind = "cpu_busy"  # one busy GPU among several needs several
        return SimInstance(k, f"i-{k:017x}", instance_type, gpus, gpu_name, kind, f"user{k % self.owners}@example.com")

    @staticmethod
    def _series(instance: SimInstance) -> Iterator[Series]:
        iid = instance.instance_id
        yield Series(instance, "AWS/EC2", "CPUUtilization", (("InstanceId", iid),), None)
        for gpu in range(instance.gpus):
            dims = (("InstanceId", iid), ("index", str(gpu)), ("name", instance.gpu_name), ("arch", "Ampere"))
            yield Series(instance, "CWAgent", GPU_METRIC, dims, gpu)
        yield Series(instance, "CWAgent", GPU_METRIC, (("InstanceId", iid),), -1)
        yield Series(instance, "CWAgent", CORE_METRIC, (("InstanceId", iid),), BUSIEST_CORE)

    def tags(self, instance: SimInstance) -> dict[str, str]:
        out = {"Owner": instance.owner, "Name": f"bench-{instance.index}"}
        if self.warned and instance.kind in WARNED:
            out["costguard:idle-warned-at"] = _iso(self.warned_at)
            out["costguard:stop-after"] = _iso(self.stop_after)
        return out

    # ------------------------------------------------------------------ the data
    def value(self, series: Series, at: int) -> float | None:
        """The value published at epoch second `at` (a multiple of STEP), or None when nothing was sent."""
        instance = series.instance
        if at < int(self.launch.timestamp()):
            return None
        if series.gpu == -1:
            values = [self._gpu(instance, g, at) for g in range(instance.gpus)]
            present = [v for v in values if v is not None]
            return max(present) if present else None
        if series.gpu is None:
            return BUSY_VALUE if instance.kind in ("busy", "cpu_busy") else IDLE_VALUE + _wiggle(at, instance.index)
        if series.gpu == BUSIEST_CORE:
            return 100.0 if instance.kind in ("busy", "cpu_busy") else 3.0 + _wiggle(at, instance.index)
        return self._gpu(instance, series.gpu, at)

    def _gpu(self, instance: SimInstance, gpu: int, at: int) -> float | None:
        kind = instance.kind
        t0 = int(self.t0.timestamp())
        if kind == "busy":
            return BUSY_VALUE
        if kind == "one_gpu_busy" and gpu == instance.gpus - 1:
            return BUSY_VALUE
        if kind == "spike" and gpu == 0 and at == t0 - 20 * 60:
            return BUSY_VALUE
        if kind == "gap" and t0 - 70 * 60 <= at < t0 - 40 * 60:
            return None
        return IDLE_VALUE + _wiggle(at, instance.index + gpu)

    def points(self, series: Series, start: int, end: int) -> Iterator[tuple[int, float]]:
        """Published points with start <= t < end, never after the present."""
        last = min(end - 1, int(datetime.now(UTC).timestamp()))
        first = math.ceil(start / STEP) * STEP
        for at in range(first, last + 1, STEP):
            value = self.value(series, at)
            if value is not None:
                yield at, value

    def expected_stops(self) -> set[int]:
        return {i.index for i in self.instances if i.should_stop}

    def kinds(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for i in self.instances:
            counts[i.kind] = counts.get(i.kind, 0) + 1
        return dict(sorted(counts.items()))


def _wiggle(at: int, salt: int) -> float:
    """A little deterministic noise under any idle threshold (0 to 2 %)."""
    return ((at // STEP * 2654435761 + salt * 40503) % 1000) / 500


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
