"""The fleet's fortnight at one-hour resolution: CPU and per-GPU maximum and average, folded into
each instance's compact hour grid as each GetMetricData answer arrives. Read with the same batched
GetMetricData code as the sweep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.aws.cloudwatch.reads import MetricReader, align_down, series_per_call
from costguard.aws.cloudwatch.series import GPU_METRIC, GPU_NAMESPACE, Dimensions, GpuSeriesFinder, MetricRef
from costguard.aws.pricing import PriceBook
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.series import Signal
from costguard.digest.figures import HourFolder, HourGrid, InstanceWeek

HOUR = 3600


def read_hours(
    region: str,
    instances: Sequence[Instance],
    start: datetime,
    end: datetime,
    *,
    gpu_series: GpuSeriesFinder,
    metrics: MetricReader,
    prices: PriceBook,
    owner_tag_key: str,
    team_tag_key: str,
) -> list[InstanceWeek]:
    """Two weeks at one-hour resolution, streamed: the instances are read in runs that fill one
    GetMetricData call (by queries and by datapoints), and each answer is folded into the instances'
    hour grids before the next is read, so the points of only one call are ever held."""
    if not instances:
        return []
    reader = _Runs(region, gpu_series.discover(instances), start, end, metrics, prices, owner_tag_key, team_tag_key)
    budget = series_per_call(start, end, HOUR)
    out: list[InstanceWeek] = []
    run: list[Instance] = []
    refs: list[MetricRef] = []
    for instance in instances:
        mine = reader.refs(instance)
        if run and len(refs) + len(mine) > budget:
            out += reader.read(run, refs)
            run, refs = [], []
        run.append(instance)
        refs += mine
    if run:
        out += reader.read(run, refs)
    return out


@dataclass
class _Runs:
    region: str
    gpu: Mapping[str, Sequence[Dimensions]]
    start: datetime
    end: datetime
    metrics: MetricReader
    prices: PriceBook
    owner_tag_key: str
    team_tag_key: str

    def refs(self, instance: Instance) -> list[MetricRef]:
        iid = instance.instance_id
        refs = [MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", (("InstanceId", iid),), "Maximum")]
        for dims in self.gpu.get(iid, []):
            for stat in ("Maximum", "Average"):
                refs.append(MetricRef(iid, Signal.GPU, stat, GPU_NAMESPACE, GPU_METRIC, dims, stat))
        return refs

    def read(self, run: Sequence[Instance], refs: Sequence[MetricRef]) -> list[InstanceWeek]:
        origin = align_down(self.start, HOUR)
        slots = int((align_down(self.end, HOUR) - origin).total_seconds() // HOUR) + 1
        folders = {i.instance_id: HourFolder(origin, slots, len(self.gpu.get(i.instance_id, []))) for i in run}
        points, failed = self.metrics.fetch(refs, self.start, self.end, period=HOUR)
        for ref in failed:
            logger.warning("digest series unreadable", instance_id=ref.instance_id, reason=failed[ref])
        for ref, series in points.items():
            folder = folders[ref.instance_id]
            if ref.signal is Signal.CPU:
                folder.add_cpu(series)
            elif ref.stat == "Maximum":
                folder.add_gpu_max(series)
            else:
                folder.add_gpu_avg(series)
        del points  # the answer is folded: its points go before the next call
        return [self._week(instance, folders[instance.instance_id].grid()) for instance in run]

    def _week(self, instance: Instance, grid: HourGrid) -> InstanceWeek:
        gpus = self.gpu.get(instance.instance_id, [])
        return InstanceWeek(
            instance.instance_id,
            instance.instance_type,
            self.region,
            instance.owner(self.owner_tag_key),
            instance.tags.get(self.team_tag_key, ""),
            len(gpus) or 1,
            self.prices.hourly(instance.instance_type, self.region).usd_per_hour,
            bool(gpus),
            instance.state,
            grid,
        )
