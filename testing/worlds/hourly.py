"""A fleet whose GPUs publish every hour of a fortnight, for the digest's reads at scale (bench/digest.py,
tests/unit/digest/weekly/test_digest.py): CPUUtilization (AWS/EC2, InstanceId), the agent's busiest core
(cpu_usage_active, CWAgent, InstanceId) and nvidia_smi_utilization_gpu per GPU (CWAgent, InstanceId,
index, name), served by testing/aws/cloudwatch.py. A third of the machines (by the last hex digit of
their id) are busy from 08:00 to 20:00, a core at full load; the rest idle. Value lists are shared, so the
world's memory does not grow with the fleet."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from testing.aws.cloudwatch import Listed, Points, SeriesKey
from testing.aws.errors import unsupported

GPU_NAMESPACE, GPU_METRIC, GPU_NAME = "CWAgent", "nvidia_smi_utilization_gpu", "NVIDIA A10G"
CORE_METRIC = "cpu_usage_active"


class HourlyFleet:
    def __init__(self, gpus: dict[str, int], start: datetime, end: datetime) -> None:
        self.gpus = gpus
        hours = int((end - start).total_seconds() // 3600) + 1
        self.times = [(start + timedelta(hours=h)).timestamp() for h in range(hours)]
        self.idle = [1.0 + (h % 3) for h in range(hours)]
        self.busy = [90.0 if 8 <= h % 24 < 20 else 2.0 for h in range(hours)]
        self.idle_core = [5.0 + (h % 3) for h in range(hours)]
        self.busy_core = [100.0 if 8 <= h % 24 < 20 else 5.0 for h in range(hours)]

    def listed(self, recently_active: bool) -> list[Listed]:
        out: list[Listed] = []
        for iid, count in self.gpus.items():
            out.append(("AWS/EC2", "CPUUtilization", (("InstanceId", iid),)))
            out.append((GPU_NAMESPACE, CORE_METRIC, (("InstanceId", iid),)))
            out += [
                (GPU_NAMESPACE, GPU_METRIC, (("InstanceId", iid), ("index", str(g)), ("name", GPU_NAME)))
                for g in range(count)
            ]
        return out

    def _published(self, key: SeriesKey) -> str | None:
        namespace, name, dims = key
        iid = dict(dims).get("InstanceId", "")
        if iid not in self.gpus:
            return None
        if (namespace, name) in {("AWS/EC2", "CPUUtilization"), (GPU_NAMESPACE, CORE_METRIC)}:
            return iid if dims == {("InstanceId", iid)} else None
        index = dict(dims).get("index", "")
        exact = {("InstanceId", iid), ("index", index), ("name", GPU_NAME)}
        gpu = index.isdigit() and int(index) < self.gpus[iid] and dims == exact
        return iid if (namespace, name) == (GPU_NAMESPACE, GPU_METRIC) and gpu else None

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        iid = self._published(key)
        if iid is None:
            return None
        if period != 3600:
            raise unsupported(f"a period of {period} s over the hourly fleet")
        busy = int(iid[-1], 16) % 3 == 0
        if key[1] == CORE_METRIC:
            values: Sequence[float] = self.busy_core if busy else self.idle_core
        else:
            values = self.busy if busy else self.idle
        first = next((k for k, t in enumerate(self.times) if t >= start), len(self.times))
        last = next((k for k, t in enumerate(self.times) if t >= end), len(self.times))
        return self.times[first:last], values[first:last]
