"""CloudWatch adapter: GPU series discovery, batched utilization reads, and the idle alarms.

Real CloudWatch returns nothing unless a query's dimension set matches a published one exactly, so
GPU series are discovered with ListMetrics (one walk per metric name for the whole region, not one
per instance) and queried with exactly the dimensions found. GetMetricData takes 500 queries a call.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.records import Instance
from costguard.settings import IdlePolicy
from costguard.utilization import FleetUtilization, Point, Series, Signal, Utilization

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

GPU_NAMESPACE = "CWAgent"
GPU_METRIC = "nvidia_smi_utilization_gpu"
MAX_QUERIES = 500  # GetMetricData's limit per call
ALARM_PREFIX = "costguard-idle-"
MAX_ALARM_GPUS = 8  # an alarm holds at most 10 metrics: 8 GPUs, the CPU and the expression
DELETE_BATCH = 100  # DeleteAlarms' limit

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


def align_down(moment: datetime, period_seconds: int) -> datetime:
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % period_seconds, moment.tzinfo)


class CloudWatchMetrics:
    def __init__(self, client: CloudWatchClient, policy: IdlePolicy) -> None:
        self.client = client
        self.policy = policy
        self.calls: defaultdict[str, int] = defaultdict(int)

    # ------------------------------------------------------------------ discovery
    def discover_gpu_series(
        self, instances: Sequence[Instance], *, one_instance: bool = False, recently_active: bool = True
    ) -> dict[str, list[Dimensions]]:
        """GPU series per instance id, from a ListMetrics walk of the metric (region-wide, deduplicated).

        Series carry `InstanceId` when the agent's append_dimensions sets it; otherwise they carry `host`,
        the instance's private DNS name, which is matched instead.
        """
        by_id = {i.instance_id: i for i in instances}
        by_host = {i.private_dns_name.split(".")[0]: i.instance_id for i in instances if i.private_dns_name}
        params: dict[str, Any] = {"Namespace": GPU_NAMESPACE, "MetricName": GPU_METRIC}
        if recently_active:  # the sweep wants running machines; the digest wants the whole fortnight
            params["RecentlyActive"] = "PT3H"
        if one_instance and len(instances) == 1:
            params["Dimensions"] = [{"Name": "InstanceId", "Value": instances[0].instance_id}]
        found: dict[str, set[Dimensions]] = defaultdict(set)
        for page in self.client.get_paginator("list_metrics").paginate(**params):
            self.calls["ListMetrics"] += 1
            for metric in page.get("Metrics", []):
                dims: Dimensions = tuple(sorted((d["Name"], d["Value"]) for d in metric.get("Dimensions", [])))
                named = dict(dims)
                instance_id = named.get("InstanceId") or by_host.get(named.get("host", "").split(".")[0], "")
                if instance_id in by_id:
                    found[instance_id].add(dims)  # moto lists one entry per datapoint: a set de-duplicates
        return {iid: sorted(_per_gpu(series), key=_gpu_order) for iid, series in found.items()}

    def refs(self, instances: Iterable[Instance], gpu_series: Mapping[str, Sequence[Dimensions]]) -> list[MetricRef]:
        refs: list[MetricRef] = []
        for instance in instances:
            iid = instance.instance_id
            for dims in gpu_series.get(iid, []):
                index = dict(dims).get("index")
                label = f"GPU {index}" if index is not None else "GPU"
                refs.append(MetricRef(iid, Signal.GPU, label, GPU_NAMESPACE, GPU_METRIC, dims, "Maximum"))
            ec2_dims: Dimensions = (("InstanceId", iid),)
            refs.append(MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", ec2_dims, "Maximum"))
            if self.policy.network_idle_bytes_per_second > 0:
                refs.append(MetricRef(iid, Signal.NETWORK_IN, "network in", "AWS/EC2", "NetworkIn", ec2_dims, "Sum"))
                refs.append(MetricRef(iid, Signal.NETWORK_OUT, "network out", "AWS/EC2", "NetworkOut", ec2_dims, "Sum"))
        return refs

    # ------------------------------------------------------------------ reading
    def fetch(
        self, refs: Sequence[MetricRef], start: datetime, end: datetime, *, period: int | None = None
    ) -> tuple[dict[MetricRef, list[Point]], dict[MetricRef, str]]:
        """Points per series, 500 queries a call; and the series CloudWatch could not answer, with why."""
        period = period or self.policy.period_seconds
        start = align_down(start, period)
        end = align_down(end, period) + timedelta(seconds=period)
        points: dict[MetricRef, list[Point]] = {ref: [] for ref in refs}
        failed: dict[MetricRef, str] = {}
        for offset in range(0, len(refs), MAX_QUERIES):
            batch = refs[offset : offset + MAX_QUERIES]
            by_id = {f"q{n}": ref for n, ref in enumerate(batch)}
            queries = [ref.query(qid, period) for qid, ref in by_id.items()]
            token: str | None = None
            while True:
                params: dict[str, Any] = {
                    "MetricDataQueries": queries,
                    "StartTime": start,
                    "EndTime": end,
                    "ScanBy": "TimestampAscending",
                }
                if token:
                    params["NextToken"] = token
                self.calls["GetMetricData"] += 1
                response = self.client.get_metric_data(**params)
                for result in response.get("MetricDataResults", []):
                    ref = by_id[result["Id"]]
                    if result.get("StatusCode") in ("InternalError", "Forbidden"):
                        failed[ref] = f"{result.get('StatusCode')} for {ref.label}"
                        continue
                    scale = 1.0 / period if ref.stat == "Sum" else 1.0  # network: bytes per period → per second
                    points[ref].extend(
                        (t, float(v) * scale)
                        for t, v in zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
                    )
                token = response.get("NextToken")
                if not token:
                    break
        for series in points.values():
            series.sort()
        return points, failed

    def chunks(
        self,
        instances: Sequence[Instance],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        start: datetime,
        end: datetime,
    ) -> Iterator[tuple[Sequence[Instance], FleetUtilization]]:
        """The instances in runs of at most one GetMetricData call's series, each with its utilization.

        A caller that judges a run and lets it go holds one answer's points at a time, not the fleet's
        (10,000 GPU instances are 36,000 series of 48 points: about 900 MB of Python objects at once).
        """
        run: list[Instance] = []
        refs: list[MetricRef] = []
        for instance in instances:
            mine = self.refs([instance], gpu_series)
            if run and len(refs) + len(mine) > MAX_QUERIES:
                yield run, self._read(run, refs, gpu_series, start, end)
                run, refs = [], []
            run.append(instance)
            refs += mine
        if run:
            yield run, self._read(run, refs, gpu_series, start, end)

    def _read(
        self,
        instances: Sequence[Instance],
        refs: Sequence[MetricRef],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        start: datetime,
        end: datetime,
    ) -> FleetUtilization:
        points, failed = self.fetch(refs, start, end)
        fleet = FleetUtilization()
        grouped: dict[str, list[Series]] = defaultdict(list)
        errors: dict[str, str] = {}
        for ref in refs:
            if ref in failed:
                errors[ref.instance_id] = failed[ref]
            grouped[ref.instance_id].append(Series(ref.signal, ref.label, tuple(points[ref])))
        for instance in instances:
            iid = instance.instance_id
            fleet.by_instance[iid] = Utilization(
                iid, tuple(grouped.get(iid, [])), gpu_telemetry=bool(gpu_series.get(iid)), error=errors.get(iid, "")
            )
        return fleet

    # ------------------------------------------------------------------ alarms
    def alarm_spec(self, instance_id: str, gpu_series: Sequence[Dimensions]) -> dict[str, Any]:
        """An alarm that goes to ALARM when every signal stayed idle for the window; missing data is not breaching.

        It only wakes the idle stopper early: the stop decision always re-reads all the data.
        """
        policy = self.policy
        period = policy.period_seconds
        periods = max(1, policy.window_minutes * 60 // period)
        gpus = list(gpu_series)[:MAX_ALARM_GPUS]
        metrics: list[dict[str, Any]] = []
        for n, dims in enumerate(gpus):
            ref = MetricRef(instance_id, Signal.GPU, "", GPU_NAMESPACE, GPU_METRIC, dims, "Maximum")
            metrics.append({**ref.query(f"g{n}", period), "ReturnData": False})
        cpu = MetricRef(
            instance_id, Signal.CPU, "", "AWS/EC2", "CPUUtilization", (("InstanceId", instance_id),), "Maximum"
        )
        metrics.append({**cpu.query("c", period), "ReturnData": False})
        condition = f"c < {policy.cpu_idle_percent:g}"
        if gpus:
            condition = (
                f"MAX([{', '.join(f'g{n}' for n in range(len(gpus)))}]) < {policy.gpu_idle_percent:g} AND {condition}"
            )
        metrics.append({"Id": "idle", "Expression": f"IF({condition}, 1, 0)", "Label": "idle", "ReturnData": True})
        return {
            "AlarmName": f"{ALARM_PREFIX}{instance_id}",
            "AlarmDescription": (
                f"costguard: {instance_id} idle (GPU < {policy.gpu_idle_percent:g}%, "
                f"CPU < {policy.cpu_idle_percent:g}%) for {policy.window_minutes} min. "
                "Wakes the idle stopper, which re-reads all data before acting."
            ),
            "Metrics": metrics,
            "Threshold": 1.0,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": periods,
            "DatapointsToAlarm": periods,
            "TreatMissingData": "notBreaching",
        }

    def existing_alarms(self) -> dict[str, str]:
        """Name → signature of every costguard idle alarm in the region."""
        out: dict[str, str] = {}
        pages = self.client.get_paginator("describe_alarms").paginate(
            AlarmNamePrefix=ALARM_PREFIX, AlarmTypes=["MetricAlarm"], PaginationConfig={"PageSize": 100}
        )
        for page in pages:
            self.calls["DescribeAlarms"] += 1
            for alarm in page.get("MetricAlarms", []):
                out[alarm["AlarmName"]] = alarm_signature(alarm)
        return out

    def put_alarm(self, spec: Mapping[str, Any]) -> None:
        self.calls["PutMetricAlarm"] += 1
        self.client.put_metric_alarm(**spec)

    def delete_alarms(self, names: Sequence[str]) -> None:
        for offset in range(0, len(names), DELETE_BATCH):
            self.calls["DeleteAlarms"] += 1
            self.client.delete_alarms(AlarmNames=list(names[offset : offset + DELETE_BATCH]))


def alarm_signature(alarm: Mapping[str, Any]) -> str:
    """What makes two idle alarms the same: their metrics, expression and evaluation settings."""
    metrics = []
    for metric in alarm.get("Metrics", []):
        stat = metric.get("MetricStat") or {}
        inner = stat.get("Metric") or {}
        dims = sorted((d["Name"], d["Value"]) for d in inner.get("Dimensions", []))
        metrics.append(
            [metric.get("Id"), metric.get("Expression", ""), inner.get("MetricName", ""), dims, stat.get("Stat", "")]
        )
    return json.dumps(
        [sorted(metrics), alarm.get("EvaluationPeriods"), alarm.get("DatapointsToAlarm"), alarm.get("Threshold")],
        sort_keys=True,
        default=str,
    )


def _per_gpu(series: set[Dimensions]) -> set[Dimensions]:
    """The per-GPU series when there are any: an aggregate the agent also publishes (its
    `aggregation_dimensions`, e.g. InstanceId alone) says nothing they do not, and would hide a gap in one GPU."""
    indexed = {dims for dims in series if "index" in dict(dims)}
    return indexed or series


def _gpu_order(dims: Dimensions) -> tuple[int, Dimensions]:
    index = dict(dims).get("index", "")
    return (int(index) if index.isdigit() else 1_000, dims)
