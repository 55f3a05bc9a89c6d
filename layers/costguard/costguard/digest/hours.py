"""The fleet's fortnight at one-hour resolution: CPU and per-GPU maximum and average, folded into
each instance's hours. Read with the same batched GetMetricData code as the sweep."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GPU_METRIC, GPU_NAMESPACE, GpuSeriesFinder, MetricRef
from costguard.aws.pricing import PriceBook
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.series import Signal
from costguard.digest.figures import InstanceWeek, hours_from_points

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
    """Two weeks at one-hour resolution, with the same batched GetMetricData code as the sweep."""
    if not instances:
        return []
    gpu = gpu_series.discover(instances)
    refs: list[MetricRef] = []
    for instance in instances:
        iid = instance.instance_id
        refs.append(MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", (("InstanceId", iid),), "Maximum"))
        for dims in gpu.get(iid, []):
            for stat in ("Maximum", "Average"):
                refs.append(MetricRef(iid, Signal.GPU, stat, GPU_NAMESPACE, GPU_METRIC, dims, stat))
    points, failed = metrics.fetch(refs, start, end, period=HOUR)
    for ref in failed:
        logger.warning("digest series unreadable", instance_id=ref.instance_id, reason=failed[ref])
    by_instance: dict[str, dict[str, list[Any]]] = defaultdict(lambda: {"cpu": [], "Maximum": [], "Average": []})
    for ref, series in points.items():
        slot = by_instance[ref.instance_id]
        if ref.signal is Signal.CPU:
            slot["cpu"] = series
        else:
            slot[ref.stat].append(series)
    out = []
    for instance in instances:
        slot = by_instance[instance.instance_id]
        count = len(gpu.get(instance.instance_id, [])) or 1
        out.append(
            InstanceWeek(
                instance.instance_id,
                instance.instance_type,
                region,
                instance.owner(owner_tag_key),
                instance.tags.get(team_tag_key, ""),
                count,
                prices.hourly(instance.instance_type, region).usd_per_hour,
                bool(gpu.get(instance.instance_id)),
                instance.state,
                hours_from_points(slot["cpu"], slot["Maximum"], slot["Average"]),
            )
        )
    return out
