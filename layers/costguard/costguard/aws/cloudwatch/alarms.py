"""CloudWatch idle alarms: one metric-math alarm per machine that wakes the idle stopper early.

An alarm only wakes the stopper: the stop decision always re-reads all the data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from costguard.aws.cloudwatch.series import GPU_METRIC, GPU_NAMESPACE, Dimensions, MetricRef
from costguard.core.names import ALARM_PREFIX
from costguard.core.series import Signal
from costguard.core.settings import IdlePolicy

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient


MAX_ALARM_GPUS = 8  # an alarm holds at most 10 metrics: 8 GPUs, the CPU and the expression
DELETE_BATCH = 100  # DeleteAlarms' limit


class IdleAlarms:
    def __init__(self, client: CloudWatchClient, policy: IdlePolicy) -> None:
        self.client = client
        self.policy = policy

    def spec(self, instance_id: str, gpu_series: Sequence[Dimensions]) -> dict[str, Any]:
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

    def existing(self) -> dict[str, str]:
        """Name → signature of every costguard idle alarm in the region."""
        out: dict[str, str] = {}
        pages = self.client.get_paginator("describe_alarms").paginate(
            AlarmNamePrefix=ALARM_PREFIX, AlarmTypes=["MetricAlarm"], PaginationConfig={"PageSize": 100}
        )
        for page in pages:
            for alarm in page.get("MetricAlarms", []):
                out[alarm["AlarmName"]] = alarm_signature(alarm)
        return out

    def put(self, spec: Mapping[str, Any]) -> None:
        self.client.put_metric_alarm(**spec)

    def delete(self, names: Sequence[str]) -> None:
        for offset in range(0, len(names), DELETE_BATCH):
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
