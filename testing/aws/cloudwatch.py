"""CloudWatch over a world's metrics, where moto is too slow or too lenient: ListMetrics, GetMetricData,
GetMetricStatistics and PutDashboard, in the low-level shape of the wire (times in epoch seconds; the
in-process client converts datetimes), at least as strict as CloudWatch about what it is sent.

Kept as CloudWatch keeps them: ListMetrics 500 a page (NextToken), filtered by namespace, name and
dimensions (a series is listed when it has every dimension asked), RecentlyActive PT3H only;
GetMetricData 1 to 500 MetricStat queries a call with distinct ids that start with a lower-case letter,
periods of whole minutes, at most 100,800 datapoints an answer (the rest behind a NextToken that names
where it stopped), start times rounded down to the minute; a query's dimension set must equal a published
series' exactly (a subset or a superset of one matches nothing, as in CloudWatch: series are discovered,
not guessed). GetMetricStatistics at most 1,440 datapoints. Metric math, SEARCH and Metrics Insights are
refused (the stand-in cannot answer them), never answered empty.

The world is a `MetricSource`: the series it publishes, and one series' points at a period and statistic.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from testing.aws import inprocess
from testing.aws.errors import ApiError, unsupported

MAX_QUERIES = 500
MAX_POINTS_PER_CALL = 100_800
MAX_STATISTICS_POINTS = 1_440
LIST_PAGE = 500
MAX_DIMENSIONS = 30
STATISTICS = ("Maximum", "Minimum", "Average", "Sum", "SampleCount")
_QUERY_ID = re.compile(r"^[a-z][a-zA-Z0-9_]*$")

# (namespace, metric name, dimension set): one published series.
SeriesKey = tuple[str, str, frozenset[tuple[str, str]]]
# The same as ListMetrics lists it: its dimensions in the order the publisher gave them.
Listed = tuple[str, str, Sequence[tuple[str, str]]]
Points = tuple[Sequence[float], Sequence[float]]  # epoch seconds (ascending) and values


class MetricSource(Protocol):
    def listed(self, recently_active: bool) -> Iterable[Listed]:
        """The series ListMetrics lists (those with data in two weeks, or in three hours), in a stable order."""
        ...

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        """One series' points in [start, end) at `period` seconds and `stat`; None when it is not published."""
        ...


def series_key(metric: Mapping[str, Any]) -> SeriesKey:
    dims = metric.get("Dimensions") or []
    if len(dims) > MAX_DIMENSIONS:
        raise ApiError("InvalidParameterValue", f"{len(dims)} dimensions: at most {MAX_DIMENSIONS}")
    named = frozenset((d["Name"], d["Value"]) for d in dims)
    if len(named) != len(dims):
        raise ApiError("InvalidParameterValue", "a dimension is given twice")
    return str(metric.get("Namespace", "")), str(metric.get("MetricName", "")), named


def statistic(stat: str, values: Sequence[float]) -> float:
    if stat == "Maximum":
        return max(values)
    if stat == "Minimum":
        return min(values)
    if stat == "Average":
        return sum(values) / len(values)
    if stat == "Sum":
        return float(sum(values))
    if stat == "SampleCount":
        return float(len(values))
    raise ApiError("InvalidParameterValue", f"the statistic {stat!r} is not one of {', '.join(STATISTICS)}")


def _minute(epoch: float) -> float:
    """CloudWatch rounds a start time down to the whole minute."""
    return epoch - epoch % 60


class CloudWatch:
    def __init__(self, source: MetricSource) -> None:
        self.source = source
        self.dashboards: dict[str, str] = {}
        self._lock = threading.Lock()

    def list_metrics(self, params: Mapping[str, Any]) -> dict[str, Any]:
        recent = params.get("RecentlyActive")
        if recent not in (None, "PT3H"):
            raise ApiError("InvalidParameterValue", f"RecentlyActive {recent!r}: only PT3H")
        wanted = [(d["Name"], d.get("Value")) for d in params.get("Dimensions") or []]
        namespace, name = params.get("Namespace"), params.get("MetricName")

        def keep(key: Listed) -> bool:
            if namespace not in (None, key[0]) or name not in (None, key[1]):
                return False
            named = dict(key[2])
            return all(n in named and v in (None, named[n]) for n, v in wanted)

        matched = [k for k in self.source.listed(recent == "PT3H") if keep(k)]
        start = _token(params.get("NextToken"), len(matched) + 1)
        out: dict[str, Any] = {
            "Metrics": [
                {"Namespace": k[0], "MetricName": k[1], "Dimensions": [{"Name": n, "Value": v} for n, v in k[2]]}
                for k in matched[start : start + LIST_PAGE]
            ]
        }
        if start + LIST_PAGE < len(matched):
            out["NextToken"] = str(start + LIST_PAGE)
        return out

    def get_metric_data(self, params: Mapping[str, Any]) -> dict[str, Any]:
        queries = params.get("MetricDataQueries") or []
        if not 1 <= len(queries) <= MAX_QUERIES:
            raise ApiError(
                "ValidationError",
                f"The collection MetricDataQueries must not have a size greater than {MAX_QUERIES} ({len(queries)})",
            )
        ids = [q.get("Id", "") for q in queries]
        if len(set(ids)) != len(ids) or not all(_QUERY_ID.match(i) for i in ids):
            raise ApiError("ValidationError", "query ids must be distinct and start with a lower-case letter")
        start, end = _minute(float(params["StartTime"])), float(params["EndTime"])
        if start >= end:
            raise ApiError("ValidationError", "The parameter StartTime must be less than the parameter EndTime")
        ascending = params.get("ScanBy", "TimestampDescending") == "TimestampAscending"
        results = []
        for query in queries:
            if "Expression" in query or "MetricStat" not in query:
                raise unsupported("GetMetricData expressions (metric math, SEARCH, Metrics Insights)")
            stat = query["MetricStat"]
            period = int(stat["Period"])
            if period < 60 or period % 60:
                raise ApiError("ValidationError", f"Period {period}: a whole number of minutes")
            if stat["Stat"] not in STATISTICS:
                raise unsupported(f"the statistic {stat['Stat']!r}")
            found = self.source.points(series_key(stat["Metric"]), start, end, period, stat["Stat"])
            times, values = found if found is not None else ([], [])
            if not ascending:
                times, values = times[::-1], values[::-1]
            label = query.get("Label") or stat["Metric"].get("MetricName", "")
            results.append((query["Id"], label, times, values))
        # Pages of datapoints: NextToken names the query and the point where the previous answer stopped.
        skip_query, skip_point = _points_token(params.get("NextToken"), len(results))
        out: list[dict[str, Any]] = []
        budget, token = MAX_POINTS_PER_CALL, ""
        for q in range(skip_query, len(results)):
            qid, label, times, values = results[q]
            first = skip_point if q == skip_query else 0
            take = list(times[first : first + budget])
            out.append(
                {
                    "Id": qid,
                    "Label": label,
                    "Timestamps": take,
                    "Values": list(values[first : first + len(take)]),
                    "StatusCode": "Complete",
                }
            )
            budget -= len(take)
            if first + len(take) < len(times):
                out[-1]["StatusCode"] = "PartialData"
                token = f"{q}:{first + len(take)}"
                break
        answer: dict[str, Any] = {"MetricDataResults": out, "Messages": []}
        if token:
            answer["NextToken"] = token
        return answer

    def get_metric_statistics(self, params: Mapping[str, Any]) -> dict[str, Any]:
        start, end, period = _minute(float(params["StartTime"])), float(params["EndTime"]), int(params["Period"])
        if (end - start) / period > MAX_STATISTICS_POINTS:
            raise ApiError("InvalidParameterCombination", "You have requested up to 1,440 datapoints")
        stats = params.get("Statistics") or []
        if not stats or params.get("ExtendedStatistics"):
            raise unsupported("GetMetricStatistics without Statistics, or with ExtendedStatistics")
        key = series_key(params)
        by_time: dict[float, dict[str, Any]] = {}
        for stat in stats:
            found = self.source.points(key, start, end, period, stat)
            for at, value in zip(*(found or ([], [])), strict=True):
                by_time.setdefault(at, {"Timestamp": at, "Unit": "Percent"})[stat] = value
        return {"Label": params.get("MetricName", ""), "Datapoints": list(by_time.values())}

    def put_dashboard(self, params: Mapping[str, Any]) -> dict[str, Any]:
        try:
            json.loads(params["DashboardBody"])
        except ValueError:
            raise ApiError("InvalidParameterInput", "The dashboard body is not JSON") from None
        with self._lock:
            self.dashboards[params["DashboardName"]] = params["DashboardBody"]
        return {"DashboardValidationMessages": []}


def _token(token: str | None, limit: int) -> int:
    if not token:
        return 0
    if not token.isdigit() or int(token) >= limit:
        raise ApiError("InvalidNextToken", "The service found NextToken to be invalid")
    return int(token)


def _points_token(token: str | None, queries: int) -> tuple[int, int]:
    if not token:
        return 0, 0
    found = re.fullmatch(r"(\d+):(\d+)", token)
    if found is None or int(found.group(1)) >= queries:
        raise ApiError("InvalidNextToken", "The service found NextToken to be invalid")
    return int(found.group(1)), int(found.group(2))


def bucketed(points: Iterable[tuple[float, float]], start: float, period: int, stat: str) -> Points:
    """Raw (time, value) points rolled up into periods from `start` at `stat`: ascending."""
    buckets: dict[float, list[float]] = {}
    for at, value in points:
        buckets.setdefault(start + (at - start) // period * period, []).append(value)
    times = sorted(buckets)
    return times, [statistic(stat, buckets[t]) for t in times]


class CloudWatchClient:
    """The stand-in as boto3's CloudWatch client, in process (the digest's reads at 10,000 machines would
    spend their time in HTTP): ListMetrics through its paginator, GetMetricData, each call counted by
    operation and answered after `latency` seconds; datetimes in and out, refusals as ClientError."""

    def __init__(self, source: MetricSource, latency: float = 0.0) -> None:
        self.cloudwatch = CloudWatch(source)
        self.latency = latency
        self.calls: Counter[str] = Counter()
        self.exceptions = inprocess.Exceptions()

    def _call(self, operation: str) -> None:
        self.calls[operation] += 1
        if self.latency:
            time.sleep(self.latency)

    def get_paginator(self, name: str) -> Any:
        if name != "list_metrics":
            raise unsupported(f"CloudWatch's {name} paginator")
        client = self

        class Paginator:
            def paginate(self, **params: Any) -> Iterator[dict[str, Any]]:
                return inprocess.paginate(client.list_metrics, params)

        return Paginator()

    def list_metrics(self, **params: Any) -> dict[str, Any]:
        self._call("ListMetrics")
        return inprocess.calling("ListMetrics", self.cloudwatch.list_metrics)(**params)  # type: ignore[no-any-return]

    def get_metric_data(self, **params: Any) -> dict[str, Any]:
        self._call("GetMetricData")
        call = inprocess.calling("GetMetricData", self.cloudwatch.get_metric_data)
        return inprocess.metric_data_out(call(**inprocess.cloudwatch_in(params)))
