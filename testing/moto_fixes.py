"""Where moto differs from AWS in a way that would hide or fake costguard's behaviour, corrected here.

- EC2 filters: AWS accepts * and ? wildcards in filter values (`instance-type=p*`); moto matches
  them literally and returns nothing. Patched to match like AWS.
- ListMetrics: AWS lists a series only if it had data in the last two weeks (three hours with
  `RecentlyActive=PT3H`); moto lists every series it ever received. Patched to list like AWS.
- Launch times: moto launches every instance "now"; tests and the demo need machines that have
  been running for hours. `set_launch_time` moves one back (`set_sagemaker_time`, a notebook
  instance or an endpoint). AWS also sets LaunchTime again at each start; moto keeps the first one:
  `launch_time_at_start` (the demo's) makes StartInstances set it, from the caller's clock.
- ListMetrics' "last two weeks" are the wall clock's; `list_metrics_as_of` (the demo's) makes them a
  caller's clock's, for a story pinned to another moment.
- SageMaker Studio apps: moto has none, and answers DescribeApp with NotImplementedError; AWS answers
  an app that does not exist with ResourceNotFound. Patched to answer like AWS (every app is absent).
- DynamoDB transactions: moto backs a TransactWriteItems up by deep-copying the whole table, which
  fails ("dictionary changed size during iteration") when another thread writes meanwhile; DynamoDB
  serializes them itself. Writes to moto's tables are serialized here.

Used by the integration tests (in-process moto) and the demo (moto's server runs in this process).
`index_metric_queries` (demo and benchmarks only) makes moto's CloudWatch fast enough for a week of
hourly data or a thousand instances, without changing its answers.
"""

from __future__ import annotations

import fnmatch
import threading
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import moto.ec2.utils as ec2_utils
from moto.cloudwatch.models import CloudWatchBackend
from moto.cloudwatch.responses import CloudWatchResponse
from moto.dynamodb.models import DynamoDBBackend
from moto.ec2.models import ec2_backends
from moto.ec2.models.instances import Instance
from moto.sagemaker.exceptions import ResourceNotFound
from moto.sagemaker.models import sagemaker_backends
from moto.sagemaker.responses import SageMakerResponse

ACCOUNT = "123456789012"  # moto's default account


def apply() -> None:
    if getattr(ec2_utils, "_costguard_wildcards", False):
        return
    original = ec2_utils.instance_value_in_filter_values

    def with_wildcards(instance_value: Any, filter_values: Any) -> bool:
        if isinstance(instance_value, str) and any("*" in f or "?" in f for f in filter_values):
            return any(fnmatch.fnmatchcase(instance_value, f) for f in filter_values)
        return bool(original(instance_value, filter_values))

    ec2_utils.instance_value_in_filter_values = with_wildcards
    ec2_utils._costguard_wildcards = True  # type: ignore[attr-defined]
    _list_only_series_with_recent_data()
    _no_studio_apps()
    _serialize_dynamodb_writes()


def _no_studio_apps() -> None:
    def describe_app(self: Any) -> Any:
        raise ResourceNotFound(f"App {self._get_param('AppName')} does not exist")

    SageMakerResponse.describe_app = describe_app  # type: ignore[attr-defined]


def _serialize_dynamodb_writes() -> None:
    lock = threading.RLock()

    def serialized(method: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            with lock:
                return method(self, *args, **kwargs)

        return write

    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        setattr(DynamoDBBackend, name, serialized(getattr(DynamoDBBackend, name)))


def _wall_clock() -> datetime:
    return datetime.now(UTC)


_LISTING_CLOCK: list[Callable[[], datetime]] = [_wall_clock]


def list_metrics_as_of(clock: Callable[[], datetime]) -> None:
    """ListMetrics lists the series with data in the two weeks (or three hours) before `clock()`, not before
    the wall clock's now: for a story pinned to its own moment (the demo's), whenever it runs."""
    _LISTING_CLOCK[0] = clock


def _list_only_series_with_recent_data() -> None:
    original_list = CloudWatchResponse.list_metrics

    def list_metrics(self: Any) -> Any:
        recently = self._get_param("RecentlyActive")
        horizon = _LISTING_CLOCK[0]().astimezone(UTC).replace(tzinfo=None) - (
            timedelta(hours=3) if recently == "PT3H" else timedelta(days=14)
        )
        backend = self.cloudwatch_backend
        filtered = backend.get_filtered_metrics  # moto keeps naive UTC timestamps
        backend.get_filtered_metrics = lambda *args: [m for m in filtered(*args) if m.timestamp >= horizon]
        try:
            return original_list(self)
        finally:
            backend.__dict__.pop("get_filtered_metrics", None)

    CloudWatchResponse.list_metrics = list_metrics  # type: ignore[method-assign]


def set_launch_time(instance_id: str, region: str, when: datetime, account: str = ACCOUNT) -> None:
    instance = ec2_backends[account][region].get_instance(instance_id)
    instance.launch_time = when.astimezone(UTC).replace(tzinfo=None)


def launch_time_at_start(clock: Callable[[], datetime]) -> None:
    """StartInstances sets the instance's LaunchTime to `clock()`, as AWS does at every start (moto keeps
    the first launch's). Without it a machine started again looks as if it had run all along: costguard
    would take it for one that has run a whole window, still warned from before its stop ("a restart
    resets the story" reads LaunchTime), and stop it again at once."""
    original = getattr(Instance, "_costguard_original_start", Instance.start)

    def start(self: Any) -> Any:
        previous = original(self)
        self.launch_time = clock().astimezone(UTC).replace(tzinfo=None)
        return previous

    Instance._costguard_original_start = original  # type: ignore[attr-defined]
    Instance.start = start  # type: ignore[method-assign]


def set_sagemaker_time(kind: str, name: str, region: str, when: datetime, account: str = ACCOUNT) -> None:
    """moto makes every notebook instance and endpoint "now": move one back (InService since `when`)."""
    backend = sagemaker_backends[account][region]
    found = backend.notebook_instances[name] if kind == "notebook" else backend.endpoints[name]
    found.creation_time = found.last_modified_time = when.astimezone(UTC).replace(tzinfo=None)


# Periods of a query answered by one pass of moto's own code (see `index_metric_queries`).
PERIODS_A_PASS = 16


def index_metric_queries() -> None:
    """moto's GetMetricData rescans every datapoint for every period of every query (quadratic in fleet
    size and in the periods asked for). Each query is answered here by moto's own code over just the
    datapoints of its metric (and InstanceId, when it names one: every costguard query of an instance
    does), indexed once per call, and over a few periods at a time (`PERIODS_A_PASS`), each pass given the
    datapoints of its periods: the same answers. Also makes ListMetrics list each series once, as AWS does
    (the tests do not use this, so costguard's own de-duplication stays exercised). Used by the demo and
    the benchmarks."""
    if getattr(CloudWatchBackend, "_costguard_at_scale", False):
        return
    original_get = CloudWatchBackend.get_metric_data

    def get_metric_data(
        self: Any, queries: list[dict[str, Any]], start_time: Any, end_time: Any, scan_by: str = "TimestampAscending"
    ) -> Any:
        if any("MetricStat" not in q for q in queries):
            return original_get(self, queries, start_time, end_time, scan_by)
        by_instance: dict[tuple[str, str, Any], list[Any]] = defaultdict(list)
        by_name: dict[str, list[Any]] = defaultdict(list)  # moto matches a query's name in every case
        for datum in CloudWatchBackend.get_all_metrics(self):
            if start_time <= datum.timestamp < end_time:
                instance = next((d.value for d in datum.dimensions if d.name == "InstanceId"), "")
                by_instance[(datum.namespace, datum.name, instance)].append(datum)
                by_name[datum.name].append(datum)
        results: list[Any] = []
        try:
            for query in queries:
                metric = query["MetricStat"]["Metric"]
                instance = next((d["Value"] for d in metric.get("Dimensions", []) if d["Name"] == "InstanceId"), None)
                if instance:
                    subset = by_instance.get((metric["Namespace"], metric["MetricName"], instance), [])
                else:
                    subset = by_name.get(metric["MetricName"], [])
                results += _in_passes(self, original_get, query, subset, start_time, end_time, scan_by)
        finally:
            self.__dict__.pop("get_all_metrics", None)
        return results

    CloudWatchBackend.get_metric_data = get_metric_data  # type: ignore[method-assign]
    CloudWatchBackend.get_filtered_metrics = each_series_once  # type: ignore[method-assign]
    CloudWatchBackend._costguard_at_scale = True  # type: ignore[attr-defined]


def _in_passes(
    backend: Any, original_get: Any, query: dict[str, Any], subset: list[Any], start: Any, end: Any, scan_by: str
) -> list[Any]:
    """One query's answer from moto's own code, `PERIODS_A_PASS` periods at a time: each pass starts on a
    period of the query's own (so its periods and their timestamps are the query's) and sees only the
    datapoints of its periods. moto's loop also opens a period at a pass's end, which holds no datapoint of
    the pass: it adds nothing. The passes' values and timestamps, joined, in the order asked for."""
    period = timedelta(seconds=int(query["MetricStat"]["Period"]))
    span = period * PERIODS_A_PASS
    passes: dict[int, list[Any]] = defaultdict(list)
    for datum in subset:
        passes[(datum.timestamp - start) // span].append(datum)
    answer: dict[str, Any] | None = None
    for number in sorted(passes):
        backend.get_all_metrics = lambda points=passes[number]: points
        first = start + span * number
        found = original_get(backend, [query], first, first + span, "TimestampAscending")
        if not found:  # ReturnData false: moto returns nothing for it
            return []
        if answer is None:
            answer = {**found[0], "values": [], "timestamps": []}
        answer["values"] += found[0]["values"]
        answer["timestamps"] += found[0]["timestamps"]
    if answer is None:  # no datapoint: moto's own answer (every period empty, so cheap)
        backend.get_all_metrics = list
        return list(original_get(backend, [query], start, end, scan_by))
    if scan_by == "TimestampDescending":
        answer["values"].reverse()
        answer["timestamps"].reverse()
    return [answer]


def each_series_once(self: Any, metric_name: str, namespace: str, dimensions: list[dict[str, str]]) -> Any:
    """ListMetrics' series in one pass. moto compares each datapoint with every series already listed
    (quadratic: a week of hourly data made one ListMetrics take ~0.7 s in the demo) and lists a series of
    2+ dimensions once per datapoint. Here moto's own filter is applied to each datapoint, and each series
    is listed once, in moto's order, by its newest datapoint: the listing then keeps a series that had data
    recently (AWS lists those of the last two weeks), whatever its oldest."""
    newest: dict[Any, Any] = {}
    for datum in CloudWatchBackend.get_all_metrics(self):
        if datum.filter(namespace=namespace, name=metric_name, dimensions=dimensions):
            key = (datum.namespace, datum.name, tuple(sorted((d.name, d.value) for d in datum.dimensions)))
            if key not in newest or datum.timestamp > newest[key].timestamp:
                newest[key] = datum
    return list(newest.values())
