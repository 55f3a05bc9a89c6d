"""The idle alarms: one per running accelerated machine that costguard could ever stop, none for
anything else. They only wake the stopper early; a stop always re-reads the data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from costguard.aws.cloudwatch.alarms import IdleAlarms, alarm_signature
from costguard.aws.cloudwatch.series import Dimensions, GpuSeriesFinder
from costguard.aws.ec2 import Ec2
from costguard.core.names import ALARM_PREFIX
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.report import RegionReport

# CloudWatch allows few PutMetricAlarm calls a second: a first sweep over a large fleet creates its
# alarms over several sweeps instead of running into the function's timeout.
MAX_ALARM_PUTS_PER_SWEEP = 100
GONE_STATES = ("stopping", "stopped", "shutting-down", "terminated")


class AlarmKeeper:
    def __init__(self, *, ec2: Ec2, gpu_series: GpuSeriesFinder, alarms: IdleAlarms, policy: IdlePolicy) -> None:
        self.ec2 = ec2
        self.gpu_series = gpu_series
        self.alarms = alarms
        self.policy = policy

    def reconcile(
        self, candidates: Sequence[Instance], gpu: Mapping[str, Sequence[Dimensions]], report: RegionReport
    ) -> None:
        existing = self.alarms.existing()
        wanted: dict[str, dict[str, Any]] = {}
        for instance in candidates:
            if self.wants_alarm(instance):
                spec = self.alarms.spec(instance.instance_id, gpu.get(instance.instance_id, []))
                wanted[spec["AlarmName"]] = spec
        changed = [spec for name, spec in sorted(wanted.items()) if existing.get(name) != alarm_signature(spec)]
        for spec in changed[:MAX_ALARM_PUTS_PER_SWEEP]:
            self.alarms.put(spec)
            report.alarms_created += 1
        report.alarms_pending = max(0, len(changed) - MAX_ALARM_PUTS_PER_SWEEP)
        orphans = sorted(set(existing) - set(wanted))
        if orphans:
            self.alarms.delete(orphans)
            report.alarms_deleted = len(orphans)

    def on_state_change(self, instance_id: str, state: str, report: RegionReport) -> None:
        """Create the alarm when an instance starts running, delete it when it stops."""
        if state == "running":
            instances = [i for i in self.ec2.describe([instance_id]) if self.wants_alarm(i)]
            if instances:
                gpu = self.gpu_series.discover(instances, one_instance=True)
                self.alarms.put(self.alarms.spec(instance_id, gpu.get(instance_id, [])))
                report.alarms_created = 1
        elif state in GONE_STATES:
            self.alarms.delete([f"{ALARM_PREFIX}{instance_id}"])
            report.alarms_deleted = 1

    def wants_alarm(self, instance: Instance) -> bool:
        """Alarms only for machines costguard could ever stop (tags like exempt can change; these cannot)."""
        return (
            self.policy.is_accelerated(instance.instance_type)
            and not instance.auto_scaling_group
            and instance.root_device_type != "instance-store"
            and instance.lifecycle != "spot"
        )
