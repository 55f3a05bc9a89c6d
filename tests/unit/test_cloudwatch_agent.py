"""docs/cloudwatch-agent.json, the one agent configuration the docs give, publishes every series costguard
reads: the sweep and the digest run against what an agent with that file would publish, and every
CloudWatch agent series they query must be among it.

The agent is modelled from its source (aws/amazon-cloudwatch-agent):
- `cpu` collects per core only when `resources` holds "*" (translator/.../cpu/rulePerCpu.go), and the
  all-core total unless `totalcpu` is false (ruleTotalCpu.go, default true); the tag `cpu` is cpu0…
  or cpu-total; the metric is `cpu_` + the measurement (`usage_active` or `cpu_usage_active`).
- `nvidia_gpu` publishes `nvidia_smi_<measurement>` per GPU with the tags index, name, arch (agent
  1.300034+) and host.
- `append_dimensions` at the metrics level replaces `host` with the instance's dimensions.
- the CloudWatch output's `ProcessRollup` (plugins/outputs/cloudwatch/cloudwatch.go) sends each datum
  with its own dimensions and once more per `aggregation_dimensions` set that is smaller than its own
  and all of whose keys it has; `drop_original_metrics` drops the datum with its own dimensions (index 0)
  of the metrics it names, keeping the rolled-up ones (`IsDropping`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GPU_MEMORY_METRIC, GPU_METRIC, GPU_NAMESPACE, GpuSeriesFinder
from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.dashboards import dashboard_body
from costguard.digest.weekly.hours import iter_hours
from costguard.digest.weekly.rules.figures import InstanceWeek

CONFIG = Path(__file__).resolve().parents[2] / "docs" / "cloudwatch-agent.json"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
MACHINE = Instance(
    "i-0123456789abcdef0",
    "us-east-1",
    "g5.12xlarge",
    "running",
    NOW - timedelta(days=3),
    tags={"Owner": "ada@example.com"},
    vcpus=48,
)
GPUS = 4

Series = tuple[str, str, tuple[tuple[str, str], ...]]  # namespace, metric name, sorted dimensions

# The two configurations the README gave before this page: the idle rules' (per-core CPU without
# `resources`) and the deploy steps' (no CPU at all).
README_IDLE_SECTION = {
    "metrics": {
        "namespace": "CWAgent",
        "append_dimensions": {"InstanceId": "${aws:InstanceId}"},
        "aggregation_dimensions": [["InstanceId"]],
        "metrics_collected": {
            "nvidia_gpu": {"measurement": ["utilization_gpu"], "metrics_collection_interval": 60},
            "cpu": {"measurement": ["cpu_usage_active"], "totalcpu": False, "metrics_collection_interval": 60},
        },
    }
}
README_DEPLOY_STEP = {
    "metrics": {
        "namespace": "CWAgent",
        "append_dimensions": {"InstanceId": "${aws:InstanceId}"},
        "metrics_collected": {
            "nvidia_gpu": {
                "measurement": ["utilization_gpu", "utilization_memory", "memory_used", "memory_total"],
                "metrics_collection_interval": 60,
            }
        },
    }
}


def _measurements(section: Mapping[str, Any]) -> Iterator[tuple[str, str | None]]:
    for measurement in section.get("measurement", []):
        if isinstance(measurement, dict):
            yield measurement["name"], measurement.get("rename")
        else:
            yield measurement, None


def _points(plugin: str, section: Mapping[str, Any], cores: int) -> Iterator[tuple[str, dict[str, str]]]:
    """(field, tags) of one collection by the plugin on this machine."""
    if plugin == "nvidia_gpu":
        for index in range(GPUS):
            yield "", {"index": str(index), "name": "NVIDIA A10G", "arch": "Ampere", "host": "ip-10-0-0-1"}
    elif plugin == "cpu":
        if "*" in section.get("resources", []):
            for core in range(cores):
                yield "", {"cpu": f"cpu{core}", "host": "ip-10-0-0-1"}
        if section.get("totalcpu", True):
            yield "", {"cpu": "cpu-total", "host": "ip-10-0-0-1"}


PREFIX = {"nvidia_gpu": "nvidia_smi", "cpu": "cpu"}


def _metric_name(plugin: str, measurement: str, rename: str | None) -> str:
    prefix = PREFIX[plugin]
    return rename or f"{prefix}_{measurement.removeprefix(prefix + '_')}"


def published(config: Mapping[str, Any], instance: Instance, cores: int) -> set[Series]:
    """Every series an agent with this configuration sends CloudWatch from this machine."""
    metrics = config["metrics"]
    namespace = metrics.get("namespace", "CWAgent")
    append = {
        k: v.replace("${aws:InstanceId}", instance.instance_id) for k, v in metrics.get("append_dimensions", {}).items()
    }
    rollups = metrics.get("aggregation_dimensions", [])
    out: set[Series] = set()
    for plugin, section in metrics["metrics_collected"].items():
        if plugin not in PREFIX:
            continue  # a plugin costguard reads nothing of
        names = dict(_measurements(section))
        dropped = {_metric_name(plugin, m, names.get(m)) for m in section.get("drop_original_metrics", [])}
        for measurement, rename in _measurements(section):
            name = _metric_name(plugin, measurement, rename)
            for _, tags in _points(plugin, section, cores):
                dims = dict(tags)
                if append:
                    dims.pop("host")
                    dims.update(append)
                sets = [dims] + [
                    {key: dims[key] for key in target}
                    for target in rollups
                    if len(target) < len(dims) and all(key in dims for key in target)
                ]
                for index, dimensions in enumerate(sets):
                    if index == 0 and name in dropped:
                        continue
                    out.add((namespace, name, tuple(sorted(dimensions.items()))))
    return out


class AgentCloudWatch:
    """CloudWatch holding what the agent published; it records every series costguard queries."""

    def __init__(self, series: set[Series]) -> None:
        self.series = series
        self.queried: list[Series] = []

    def get_paginator(self, operation: str) -> AgentCloudWatch:
        assert operation == "list_metrics"
        return self

    def paginate(self, Namespace: str, MetricName: str, Dimensions: Any = ()) -> Iterator[dict[str, Any]]:
        wanted = {(d["Name"], d["Value"]) for d in Dimensions}
        yield {
            "Metrics": [
                {"Namespace": ns, "MetricName": name, "Dimensions": [{"Name": k, "Value": v} for k, v in dims]}
                for ns, name, dims in sorted(self.series)
                if ns == Namespace and name == MetricName and wanted <= set(dims)
            ]
        }

    def get_metric_data(self, MetricDataQueries: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        for query in MetricDataQueries:
            metric = query["MetricStat"]["Metric"]
            dims = tuple(sorted((d["Name"], d["Value"]) for d in metric["Dimensions"]))
            self.queried.append((metric["Namespace"], metric["MetricName"], dims))
        return {"MetricDataResults": [{"Id": q["Id"], "StatusCode": "Complete"} for q in MetricDataQueries]}


def series_costguard_reads(config: Mapping[str, Any], cores: int = 48) -> tuple[list[Series], set[Series]]:
    """The agent's series the idle sweep and the weekly digest query on this machine, and what it published."""
    sent = published(config, MACHINE, cores)
    cloudwatch = AgentCloudWatch(sent)
    finder = GpuSeriesFinder(cloudwatch)  # type: ignore[arg-type]
    reader = MetricReader(cloudwatch, IdlePolicy())  # type: ignore[arg-type]
    memory = finder.discover([MACHINE], name=GPU_MEMORY_METRIC)
    for _ in reader.chunks([MACHINE], finder.discover([MACHINE]), NOW - timedelta(hours=2), NOW, memory):
        pass
    list(
        iter_hours(
            "us-east-1",
            [MACHINE],
            NOW - timedelta(days=14),
            NOW,
            gpu_series=finder,
            metrics=reader,
            prices=PriceBook(None),
            owner_tag_key="Owner",
            team_tag_key="Team",
        )
    )
    agent_reads = [series for series in cloudwatch.queried if series[0] == GPU_NAMESPACE]
    return agent_reads, sent


def missing_series(config: Mapping[str, Any], cores: int = 48) -> list[str]:
    """What costguard would read that the agent does not send: empty when the configuration is complete."""
    reads, sent = series_costguard_reads(config, cores)
    problems = [
        f"{name} {dict(dims)} is read but not published"
        for _, name, dims in dict.fromkeys(reads)  # the sweep and the digest read the same series: once each
        if (GPU_NAMESPACE, name, dims) not in sent
    ]
    per_gpu = {dict(dims).get("index") for _, name, dims in reads if name == GPU_METRIC}
    if per_gpu != {str(i) for i in range(GPUS)}:
        problems.append(f"the GPUs read are {sorted(i or '' for i in per_gpu)}, not each of the {GPUS}")
    return problems


def test_the_docs_agent_configuration_publishes_every_series_costguard_reads() -> None:
    config = json.loads(CONFIG.read_text())

    assert missing_series(config) == []


def test_the_sweep_reads_each_gpu_and_the_busiest_core_from_the_docs_configuration() -> None:
    reads, _ = series_costguard_reads(json.loads(CONFIG.read_text()))

    read = {(name, dims) for _, name, dims in reads}
    assert ("cpu_usage_active", (("InstanceId", MACHINE.instance_id),)) in read
    assert {dict(dims)["index"] for name, dims in read if name == GPU_METRIC} == {"0", "1", "2", "3"}


def test_the_sweep_reads_each_gpus_memory_used_from_the_docs_configuration() -> None:
    reads, _ = series_costguard_reads(json.loads(CONFIG.read_text()))

    memory = [dims for _, name, dims in reads if name == GPU_MEMORY_METRIC]
    assert sorted(dict(dims)["index"] for dims in memory) == ["0", "1", "2", "3"]  # each GPU once, no rollup


def test_a_configuration_without_gpu_memory_has_no_memory_series_read() -> None:
    reads, _ = series_costguard_reads(README_IDLE_SECTION)

    assert [dims for _, name, dims in reads if name == GPU_MEMORY_METRIC] == []


def test_the_docs_configuration_sends_the_busiest_core_rollup_and_no_per_core_series() -> None:
    sent = published(json.loads(CONFIG.read_text()), MACHINE, cores=192)

    cpu = [dims for _, name, dims in sent if name == "cpu_usage_active"]
    assert cpu == [(("InstanceId", MACHINE.instance_id),)]  # not 192 more custom metrics, billed per month


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        (README_IDLE_SECTION, "cpu_usage_active {'InstanceId': 'i-0123456789abcdef0'} is read but not published"),
        (README_DEPLOY_STEP, "cpu_usage_active {'InstanceId': 'i-0123456789abcdef0'} is read but not published"),
    ],
    ids=["idle-section-without-resources", "deploy-step-without-cpu"],
)
def test_the_configurations_the_readme_gave_before_miss_the_busiest_core(config: dict[str, Any], problem: str) -> None:
    assert missing_series(config) == [problem]


def test_a_configuration_without_the_instance_id_leaves_every_gpu_unread() -> None:
    config = json.loads(CONFIG.read_text())
    del config["metrics"]["append_dimensions"]

    problems = missing_series(config)

    assert "the GPUs read are [], not each of the 4" in problems


def test_the_weekly_dashboards_find_the_per_gpu_series_the_docs_configuration_sends() -> None:
    week = InstanceWeek(
        MACHINE.instance_id, MACHINE.instance_type, "us-east-1", "ada", "", GPUS, 5.672, True, "running"
    )
    body = json.dumps(dashboard_body([week], "us-east-1"))
    schema = re.search(r"\{(" + GPU_NAMESPACE + r",[^}]*)\}", body)
    assert schema is not None
    namespace, *keys = schema.group(1).split(",")

    sent = published(json.loads(CONFIG.read_text()), MACHINE, cores=48)

    per_gpu = [dims for ns, name, dims in sent if ns == namespace and name == GPU_METRIC and len(dims) > 1]
    assert len(per_gpu) == GPUS
    assert all({key for key, _ in dims} == set(keys) for dims in per_gpu)  # SEARCH matches this exact set
