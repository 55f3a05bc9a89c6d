"""Two patches that let the benchmark run a 1,000-instance sweep in moto. Benchmark only.

- Speed: moto's GetMetricData rescans every datapoint for every period of every query (quadratic in
  fleet size: a 1,000-instance sweep did not finish in 17 minutes). Here each query is answered by
  moto's own code over just the datapoints of its namespace, metric and InstanceId, indexed once per
  call. Same answers, since every costguard query names its InstanceId.
- Fidelity: moto's ListMetrics returns one entry per datapoint; AWS returns one per series. With
  this patch the ListMetrics page count is the one AWS would need. (The tests keep moto's behaviour,
  so costguard's de-duplication stays exercised.)
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from moto.cloudwatch.models import CloudWatchBackend


def apply() -> None:
    if getattr(CloudWatchBackend, "_costguard_at_scale", False):
        return
    original_get = CloudWatchBackend.get_metric_data
    original_filtered = CloudWatchBackend.get_filtered_metrics

    def get_metric_data(
        self: Any, queries: list[dict[str, Any]], start_time: Any, end_time: Any, scan_by: str = "TimestampAscending"
    ) -> Any:
        if any("MetricStat" not in q for q in queries):
            return original_get(self, queries, start_time, end_time, scan_by)
        index: dict[tuple[str, str, Any], list[Any]] = defaultdict(list)
        everything = CloudWatchBackend.get_all_metrics(self)
        for datum in everything:
            if start_time <= datum.timestamp < end_time:
                instance = next((d.value for d in datum.dimensions if d.name == "InstanceId"), "")
                index[(datum.namespace, datum.name, instance)].append(datum)
        results: list[Any] = []
        try:
            for query in queries:
                metric = query["MetricStat"]["Metric"]
                instance = next((d["Value"] for d in metric.get("Dimensions", []) if d["Name"] == "InstanceId"), None)
                subset = (
                    index.get((metric["Namespace"], metric["MetricName"], instance), []) if instance else everything
                )
                self.get_all_metrics = lambda subset=subset: subset
                results += original_get(self, [query], start_time, end_time, scan_by)
        finally:
            self.__dict__.pop("get_all_metrics", None)
        return results

    def get_filtered_metrics(self: Any, metric_name: str, namespace: str, dimensions: list[dict[str, str]]) -> Any:
        seen: set[Any] = set()
        unique = []
        for datum in original_filtered(self, metric_name, namespace, dimensions):
            key = (datum.namespace, datum.name, tuple(sorted((d.name, d.value) for d in datum.dimensions)))
            if key not in seen:
                seen.add(key)
                unique.append(datum)
        return unique

    CloudWatchBackend.get_metric_data = get_metric_data  # type: ignore[method-assign]
    CloudWatchBackend.get_filtered_metrics = get_filtered_metrics  # type: ignore[method-assign]
    CloudWatchBackend._costguard_at_scale = True  # type: ignore[attr-defined]
