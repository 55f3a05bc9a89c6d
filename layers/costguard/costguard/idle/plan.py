"""Reading the fleet and deciding: what the sweep will do to each machine, judged one GetMetricData
answer at a time so that the sweep holds one answer's points, not the fleet's."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import Dimensions, GpuSeriesFinder
from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.decision import Decision, decide
from costguard.idle.judgement import judge

HISTORY = timedelta(hours=2)  # read this much before the window, to say how long a machine has been idle
MAX_LOOKBACK = timedelta(hours=24)


@dataclass(frozen=True)
class Planned:
    instance: Instance
    decision: Decision
    gpu_telemetry: bool


@dataclass
class Plan:
    gpu_series: Mapping[str, Sequence[Dimensions]]
    decisions: Iterator[Planned]


def live_warning(instance: Instance) -> datetime | None:
    """When this run of the instance was warned with a stop time; None for none, or one from before a restart."""
    warned_at = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    if warned_at is None or warned_at < instance.launch_time or tags.STOP_AFTER not in instance.tags:
        return None
    return warned_at


class SweepPlanner:
    def __init__(
        self,
        *,
        ec2: Ec2,
        gpu_series: GpuSeriesFinder,
        metrics: MetricReader,
        autoscaling: AutoScaling,
        policy: IdlePolicy,
    ) -> None:
        self.ec2 = ec2
        self.gpu_series = gpu_series
        self.metrics = metrics
        self.autoscaling = autoscaling
        self.policy = policy

    def plan(self, candidates: Sequence[Instance], now: datetime, *, one_instance: bool) -> Plan:
        spot_types = self.ec2.spot_request_types(
            [i.spot_request_id for i in candidates if i.lifecycle == "spot" and i.spot_request_id]
        )
        protected = self.autoscaling.protection(i.auto_scaling_group for i in candidates if i.auto_scaling_group)
        warned = [t for i in candidates if (t := live_warning(i))]
        start = now - timedelta(minutes=self.policy.window_minutes) - HISTORY
        if warned:
            start = max(min([start, *warned]), now - MAX_LOOKBACK)
        gpu = self.gpu_series.discover(candidates, one_instance=one_instance)
        return Plan(gpu, self._decide(candidates, gpu, start, now, spot_types=spot_types, protected=protected))

    def _decide(
        self,
        candidates: Sequence[Instance],
        gpu: Mapping[str, Sequence[Dimensions]],
        start: datetime,
        now: datetime,
        *,
        spot_types: Mapping[str, str],
        protected: Mapping[str, bool],
    ) -> Iterator[Planned]:
        for run, fleet in self.metrics.chunks(candidates, gpu, start, now):
            for instance in run:
                utilization = fleet.get(instance.instance_id)
                warned_at = live_warning(instance)
                # Judged since the warning, as far back as the data read goes (the decision checks it).
                since = max(warned_at, start) if warned_at else None
                judgement = judge(utilization, self.policy, now, since=since)
                decision = decide(
                    instance,
                    judgement,
                    self.policy,
                    now,
                    spot_request_type=spot_types.get(instance.spot_request_id, ""),
                    protected_from_scale_in=protected.get(instance.instance_id),
                    gpu_telemetry=utilization.gpu_telemetry,
                )
                yield Planned(instance, decision, utilization.gpu_telemetry)
