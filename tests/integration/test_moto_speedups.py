"""The demo's and benchmarks' faster moto (testing/moto_fixes.index_metric_queries) answers as moto does:
ListMetrics in one pass lists the series moto lists, each once, by its newest datapoint."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto.cloudwatch.models import CloudWatchBackend, cloudwatch_backends

from testing import moto_fixes
from tests.integration.conftest import REGION

ACCOUNT = "123456789012"


def gpu(instance: str, index: int) -> list[dict[str, str]]:
    return [
        {"Name": "InstanceId", "Value": instance},
        {"Name": "index", "Value": str(index)},
        {"Name": "name", "Value": "NVIDIA A10G"},
    ]


def series(listed: list[Any]) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
    return [(d.namespace, d.name, tuple(sorted((x.name, x.value) for x in d.dimensions))) for d in listed]


@pytest.mark.usefixtures("aws")
def test_each_series_is_listed_once_by_its_newest_point_as_moto_lists_them() -> None:
    assert CloudWatchBackend.get_filtered_metrics is not moto_fixes.each_series_once  # moto's own, to compare with
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    now = datetime.now(UTC).replace(microsecond=0)
    hours = [now - timedelta(hours=h) for h in range(24, 0, -1)]
    for instance in ("i-0000000000000000a", "i-0000000000000000b"):
        data: list[Any] = [
            {"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": gpu(instance, i), "Timestamp": t, "Value": 1.0}
            for t in hours
            for i in (0, 1)
        ]
        data += [{"MetricName": "cpu_usage_active", "Dimensions": gpu(instance, 0)[:1], "Timestamp": now, "Value": 3.0}]
        cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=data)
    backend = cloudwatch_backends[ACCOUNT][REGION]

    for name, dimensions in (
        ("nvidia_smi_utilization_gpu", []),
        ("nvidia_smi_utilization_gpu", [{"Name": "InstanceId", "Value": "i-0000000000000000b"}]),
        ("cpu_usage_active", []),
        ("", []),
    ):
        slow = CloudWatchBackend.get_filtered_metrics(backend, name, "CWAgent", dimensions)
        fast = moto_fixes.each_series_once(backend, name, "CWAgent", dimensions)
        once = list(dict.fromkeys(series(slow)))
        assert series(fast) == once  # the same series, in moto's order, each once
        for datum in fast:
            points = [d.timestamp for d in slow if series([d]) == series([datum])]
            assert datum.timestamp == max(points)  # listed by its newest point
    gpu_series = moto_fixes.each_series_once(backend, "nvidia_smi_utilization_gpu", "CWAgent", [])
    assert len(gpu_series) == 4
    assert len(CloudWatchBackend.get_filtered_metrics(backend, "nvidia_smi_utilization_gpu", "CWAgent", [])) == 96


@pytest.mark.usefixtures("aws")
def test_metric_data_answered_a_few_periods_at_a_time_is_moto_s_own_answer() -> None:
    assert not getattr(CloudWatchBackend, "_costguard_at_scale", False)  # moto's own, to compare with
    own = CloudWatchBackend.get_metric_data
    cloudwatch = boto3.client("cloudwatch", region_name=REGION)
    start = datetime(2026, 11, 14, 6, 0, tzinfo=UTC)
    moments = [start + timedelta(minutes=5 * k + 1) for k in range(12 * 40)]  # 40 hours, off the periods' edges
    for n, instance in enumerate(("i-0000000000000000a", "i-0000000000000000b")):
        data: list[Any] = [
            {"MetricName": "nvidia_smi_utilization_gpu", "Dimensions": gpu(instance, 0), "Timestamp": t,
             "Value": float((k * 7 + n) % 100)}
            for k, t in enumerate(moments)
        ]  # fmt: skip
        data += [
            {"MetricName": "CPUUtilization", "Dimensions": gpu(instance, 0)[:1], "Timestamp": t, "Value": float(k % 9)}
            for k, t in enumerate(moments[::3])
        ]
        for first in range(0, len(data), 1000):
            cloudwatch.put_metric_data(Namespace="CWAgent", MetricData=data[first : first + 1000])
    notebook: list[Any] = [{"Name": "NotebookInstanceName", "Value": "alice-research"}]
    cloudwatch.put_metric_data(
        Namespace="costguard/SageMaker",
        MetricData=[{"MetricName": "KernelActivity", "Dimensions": notebook, "Timestamp": t, "Value": 1.0}
                    for t in moments[::12]],
    )  # fmt: skip

    def query(name: str, dims: list[dict[str, str]], period: int, stat: str, **more: Any) -> dict[str, Any]:
        metric = {"Namespace": "costguard/SageMaker" if name == "KernelActivity" else "CWAgent", "MetricName": name}
        return {"Id": f"q{period}{stat.lower()}", **more,
                "MetricStat": {"Metric": {**metric, "Dimensions": dims}, "Period": period, "Stat": stat}}  # fmt: skip

    naive = start.replace(tzinfo=None)  # what moto's backend is handed
    gpu_a, gpu_b = gpu("i-0000000000000000a", 0), gpu("i-0000000000000000b", 0)
    asked = [
        ([query("nvidia_smi_utilization_gpu", gpu_a, 300, "Average")], 41, "TimestampAscending"),
        ([query("nvidia_smi_utilization_gpu", gpu_b, 900, "Maximum"),
          query("CPUUtilization", gpu_b[:1], 3600, "Sum")], 40, "TimestampDescending"),
        ([query("CPUUtilization", gpu_a[:1], 86400, "SampleCount")], 48, "TimestampAscending"),
        ([query("nvidia_smi_utilization_gpu", gpu_a[:1], 300, "Average")], 40, "TimestampAscending"),
        ([query("KernelActivity", notebook, 3600, "Maximum"),
          query("nvidia_smi_utilization_gpu", gpu_a, 300, "Minimum", ReturnData=False)],
         40, "TimestampAscending"),
        ([query("nvidia_smi_utilization_gpu", gpu_a, 300, "Average")], 1, "TimestampAscending"),
    ]  # fmt: skip
    backend = cloudwatch_backends[ACCOUNT][REGION]
    slow = [own(backend, queries, naive, naive + timedelta(hours=hours, minutes=7), by) for queries, hours, by in asked]
    saved = {name: CloudWatchBackend.__dict__[name] for name in ("get_metric_data", "get_filtered_metrics")}
    moto_fixes.index_metric_queries()
    try:
        fast = [
            CloudWatchBackend.get_metric_data(backend, queries, naive, naive + timedelta(hours=hours, minutes=7), by)
            for queries, hours, by in asked
        ]
    finally:  # moto's own again, for the tests after this one
        for name, original in saved.items():
            setattr(CloudWatchBackend, name, original)
        delattr(CloudWatchBackend, "_costguard_at_scale")
    assert fast == slow
    assert len(slow[0][0]["values"]) == 12 * 40  # every period of 40 hours has its point
    assert slow[1][0]["timestamps"][0] > slow[1][0]["timestamps"][-1]  # descending, as asked
    assert slow[3][0]["values"] == []  # a subset of the published dimensions matches nothing in moto either
    assert [r["id"] for r in slow[4]] == ["q3600maximum"]  # ReturnData false: not returned
    assert len(slow[5][0]["values"]) == 14  # 67 minutes: 14 periods of 5 minutes have a point
