"""CloudWatch GPU series discovery: which series exist, with exactly the dimensions they carry.

Real CloudWatch returns nothing unless a query's dimension set matches a published one exactly, so
GPU series are discovered with ListMetrics (one walk per metric name for the whole region, not one
per instance) and queried with exactly the dimensions found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from costguard.core.records import Instance
from costguard.core.series import Signal

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

GPU_NAMESPACE = "CWAgent"
GPU_METRIC = "nvidia_smi_utilization_gpu"
# Each GPU's memory used, in MB (nvidia_gpu's `memory_used`), with the same dimensions as its utilization,
# where the agent's configuration collects it (docs/cloudwatch-agent.json does): a job that holds its GPU's
# memory while it waits on a queue shows 0 % utilization, and only this says it is there.
GPU_MEMORY_METRIC = "nvidia_smi_memory_used"
# The agent's per-core CPU (`cpu` with totalcpu false), rolled up by `aggregation_dimensions:
# [["InstanceId"]]`: every core's value lands in the one InstanceId series, so its Maximum is the
# busiest core. Its dimensions are known, so it is queried without a ListMetrics walk.
CORE_METRIC = "cpu_usage_active"

Dimensions = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class MetricRef:
    """One series to read: exactly the dimensions CloudWatch has for it."""

    instance_id: str
    signal: Signal
    label: str
    namespace: str
    name: str
    dimensions: Dimensions
    stat: str

    def query(self, query_id: str, period: int) -> dict[str, Any]:
        return {
            "Id": query_id,
            "MetricStat": {
                "Metric": {
                    "Namespace": self.namespace,
                    "MetricName": self.name,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in self.dimensions],
                },
                "Period": period,
                "Stat": self.stat,
            },
            "ReturnData": True,
        }


class GpuSeriesFinder:
    def __init__(self, client: CloudWatchClient) -> None:
        self.client = client

    def discover(
        self, instances: Sequence[Instance], *, one_instance: bool = False, name: str = GPU_METRIC
    ) -> dict[str, list[Dimensions]]:
        """GPU series per instance id, from a ListMetrics walk of the metric (region-wide, deduplicated): its
        utilization, or another of the agent's GPU metrics by `name` (its memory used).

        ListMetrics lists every series with data in the last two weeks: a machine whose agent has gone
        silent is still known to have GPUs, and is not judged without them. Series carry `InstanceId`
        when the agent's append_dimensions sets it; otherwise they carry `host`, the instance's private
        DNS name, which is matched instead.
        """
        by_id = {i.instance_id: i for i in instances}
        by_host = {i.private_dns_name.split(".")[0]: i.instance_id for i in instances if i.private_dns_name}
        params: dict[str, Any] = {"Namespace": GPU_NAMESPACE, "MetricName": name}
        if one_instance and len(instances) == 1:
            params["Dimensions"] = [{"Name": "InstanceId", "Value": instances[0].instance_id}]
        found: dict[str, set[Dimensions]] = defaultdict(set)
        pairs: dict[tuple[str, str], tuple[str, str]] = {}  # ("index", "0"), ("name", "NVIDIA A10G"): one of each
        for page in self.client.get_paginator("list_metrics").paginate(**params):
            for metric in page.get("Metrics", []):
                named = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
                instance_id = named.get("InstanceId") or by_host.get(named.get("host", "").split(".")[0], "")
                if instance_id not in by_id:
                    continue
                if "InstanceId" in named:
                    named["InstanceId"] = by_id[instance_id].instance_id  # the instance's own string, not a copy
                # A fleet's series are held until they are read: their repeated parts are shared.
                dims: Dimensions = tuple(sorted(pairs.setdefault(pair, pair) for pair in named.items()))
                found[instance_id].add(dims)  # moto lists one entry per datapoint: a set de-duplicates
        return {iid: sorted(_per_gpu(series), key=_gpu_order) for iid, series in found.items()}


def gpu_count(series: Iterable[Dimensions]) -> int:
    """The GPUs a machine's series stand for: one GPU may be listed under two dimension sets (an agent
    upgrade adds `arch`, and both are listed for 14 days), so they are counted by index."""
    return len({dict(dims).get("index", str(dims)) for dims in series})


def _per_gpu(series: set[Dimensions]) -> set[Dimensions]:
    """The per-GPU series when there are any: an aggregate the agent also publishes (its
    `aggregation_dimensions`, e.g. InstanceId alone) says nothing they do not, and would hide a gap in one GPU."""
    indexed = {dims for dims in series if "index" in dict(dims)}
    return indexed or series


def _gpu_order(dims: Dimensions) -> tuple[int, Dimensions]:
    index = dict(dims).get("index", "")
    return (int(index) if index.isdigit() else 1_000, dims)
