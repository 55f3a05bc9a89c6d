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
