"""CloudWatch utilization reads: every series of many instances, as many a GetMetricData call as it
allows: 500 queries and 100,800 datapoints (AWS's quotas for GetMetricData), so two weeks of hourly
points are 299 series a call, not 500 that CloudWatch would answer in two pages."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from costguard.aws.cloudwatch.series import (
    CORE_METRIC,
    GPU_MEMORY_METRIC,
    GPU_METRIC,
    GPU_NAMESPACE,
    Dimensions,
    MetricRef,
)
from costguard.core.records import Instance
from costguard.core.series import FleetUtilization, Point, Series, Signal, Utilization
from costguard.core.settings import IdlePolicy

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient

MAX_QUERIES = 500  # GetMetricData's limit per call
MAX_DATAPOINTS = 100_800  # datapoints GetMetricData returns per call; more come back behind a NextToken


Columns = tuple[list[datetime], list[float]]  # a series' timestamps and values, in step


def series_per_call(start: datetime, end: datetime, period: int) -> int:
    """How many series of [start, end) at `period` one GetMetricData call answers whole."""
    points = int((align_down(end, period) - align_down(start, period)).total_seconds() // period) + 1
    return max(1, min(MAX_QUERIES, MAX_DATAPOINTS // points))


def align_down(moment: datetime, period_seconds: int) -> datetime:
    epoch = int(moment.timestamp())
    return datetime.fromtimestamp(epoch - epoch % period_seconds, moment.tzinfo)


class MetricReader:
    def __init__(self, client: CloudWatchClient, policy: IdlePolicy) -> None:
        self.client = client
        self.policy = policy

    def refs(
        self,
        instances: Iterable[Instance],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        memory_series: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> list[MetricRef]:
        """Every series of each instance: its GPUs, CPU, busiest core, network where it is a signal, and its
        GPUs' memory used where the agent publishes it (`memory_series`, discovered as the GPUs are)."""
        refs: list[MetricRef] = []
        for instance in instances:
            iid = instance.instance_id
            for dims in gpu_series.get(iid, []):
                index = dict(dims).get("index")
                label = f"GPU {index}" if index is not None else "GPU"
                refs.append(MetricRef(iid, Signal.GPU, label, GPU_NAMESPACE, GPU_METRIC, dims, "Maximum"))
            for dims in (memory_series or {}).get(iid, []):
                index = dict(dims).get("index")
                label = f"GPU {index} memory" if index is not None else "GPU memory"
                memory = MetricRef(iid, Signal.GPU_MEMORY, label, GPU_NAMESPACE, GPU_MEMORY_METRIC, dims, "Maximum")
                refs.append(memory)
            ec2_dims: Dimensions = (("InstanceId", iid),)
            refs.append(MetricRef(iid, Signal.CPU, "CPU", "AWS/EC2", "CPUUtilization", ec2_dims, "Maximum"))
            core = MetricRef(iid, Signal.BUSIEST_CORE, "busiest core", GPU_NAMESPACE, CORE_METRIC, ec2_dims, "Maximum")
            refs.append(core)
            if self.policy.network_idle_bytes_per_second > 0:
                refs.append(MetricRef(iid, Signal.NETWORK_IN, "network in", "AWS/EC2", "NetworkIn", ec2_dims, "Sum"))
                refs.append(MetricRef(iid, Signal.NETWORK_OUT, "network out", "AWS/EC2", "NetworkOut", ec2_dims, "Sum"))
        return refs

    def fetch(
        self, refs: Sequence[MetricRef], start: datetime, end: datetime, *, period: int | None = None
    ) -> tuple[dict[MetricRef, list[Point]], dict[MetricRef, str]]:
        """Points per series, 500 queries a call; and the series CloudWatch could not answer, with why."""
        period = period or self.policy.period_seconds
        points: dict[MetricRef, list[Point]] = {ref: [] for ref in refs}
        failed: dict[MetricRef, str] = {}
        for ref, result in self._results(refs, start, end, period):
            if result.get("StatusCode") in ("InternalError", "Forbidden"):
                failed[ref] = f"{result.get('StatusCode')} for {ref.label}"
                continue
            scale = 1.0 / period if ref.stat == "Sum" else 1.0  # network: bytes per period → per second
            points[ref].extend(
                (t, float(v) * scale)
                for t, v in zip(result.get("Timestamps", []), result.get("Values", []), strict=False)
            )
        for series in points.values():
            series.sort()
        return points, failed

    def fetch_columns(
        self, refs: Sequence[MetricRef], start: datetime, end: datetime, *, period: int
    ) -> tuple[dict[MetricRef, Columns], dict[MetricRef, str]]:
        """What `fetch` reads, as each series' timestamps and values as CloudWatch sent them (ascending,
        by ScanBy), without a tuple per datapoint: a fortnight of a fleet is millions of them."""
        columns: dict[MetricRef, Columns] = {}
        failed: dict[MetricRef, str] = {}
        for ref, result in self._results(refs, start, end, period):
            if result.get("StatusCode") in ("InternalError", "Forbidden"):
                failed[ref] = f"{result.get('StatusCode')} for {ref.label}"
                continue
            times, values = result.get("Timestamps", []), result.get("Values", [])
            if len(times) != len(values):
                size = min(len(times), len(values))
                times, values = times[:size], values[:size]
            if ref in columns:  # the rest of a series an earlier page cut (NextToken)
                columns[ref] = (columns[ref][0] + times, columns[ref][1] + values)
            else:
                columns[ref] = (times, values)
        return columns, failed

    def _results(
        self, refs: Sequence[MetricRef], start: datetime, end: datetime, period: int
    ) -> Iterator[tuple[MetricRef, Mapping[str, Any]]]:
        """Each series' result as the answers come, as many series a call as the quotas allow."""
        start = align_down(start, period)
        end = align_down(end, period) + timedelta(seconds=period)
        size = series_per_call(start, end - timedelta(seconds=period), period)
        for offset in range(0, len(refs), size):
            batch = refs[offset : offset + size]
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
                response = self.client.get_metric_data(**params)
                for result in response.get("MetricDataResults", []):
                    yield by_id[result["Id"]], result
                token = response.get("NextToken")
                if not token:
                    break

    def chunks(
        self,
        instances: Sequence[Instance],
        gpu_series: Mapping[str, Sequence[Dimensions]],
        start: datetime,
        end: datetime,
        memory_series: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> Iterator[tuple[Sequence[Instance], FleetUtilization]]:
        """The instances in runs of at most one GetMetricData call's series, each with its utilization.

        A caller that judges a run and lets it go holds one answer's points at a time, not the fleet's
        (10,000 GPU instances are 36,000 series of 48 points: about 900 MB of Python objects at once).
        """
        run: list[Instance] = []
        refs: list[MetricRef] = []
        for instance in instances:
            mine = self.refs([instance], gpu_series, memory_series)
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
                iid,
                tuple(grouped.get(iid, [])),
                gpu_telemetry=bool(gpu_series.get(iid)),
                error=errors.get(iid, ""),
                vcpus=instance.vcpu_count,
            )
        return fleet
