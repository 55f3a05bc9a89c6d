"""The idle stopper in one region: read the fleet, judge, decide, act, tell. Three ways in:

- `sweep`: every running accelerated instance (the 15-minute schedule), and alarm reconciliation;
- `evaluate`: one instance on fresh data (its idle alarm went to ALARM);
- `on_state_change`: create the idle alarm when an instance starts running, delete it when it stops.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard import tags
from costguard.autoscaling import AutoScaling
from costguard.aws import error_code
from costguard.cloudwatch import ALARM_PREFIX, CloudWatchMetrics, alarm_signature
from costguard.ec2 import Ec2
from costguard.errors import SlackDeliveryError
from costguard.idle import Action, Decision, decide, is_accelerated
from costguard.idle_messages import dry_run_notice, idle_warning, not_stopped_notice, stop_failed_notice, stop_notice
from costguard.ledger import Action as LedgerAction
from costguard.ledger import Ledger
from costguard.notices import post_once
from costguard.observability import logger
from costguard.ownership import owner_email
from costguard.pricing import PriceBook
from costguard.records import Instance
from costguard.settings import IdlePolicy, Mode, Settings
from costguard.slack.blocks import Message
from costguard.slack.notifier import SlackNotifier
from costguard.utilization import FleetUtilization, judge

# Stop failures that no retry will fix: reported once, not retried every sweep.
PERMANENT_STOP_ERRORS = {
    "OperationNotPermitted",
    "UnsupportedOperation",
    "IncorrectInstanceState",
    "InvalidInstanceID.NotFound",
    "UnsupportedHibernationConfiguration",
}
# CloudWatch allows few PutMetricAlarm calls a second: a first sweep over a large fleet creates its
# alarms over several sweeps instead of running into the function's timeout.
MAX_ALARM_PUTS_PER_SWEEP = 100
HISTORY = timedelta(hours=2)  # read this much before the window, to say how long a machine has been idle
MAX_LOOKBACK = timedelta(hours=24)


@dataclass
class Outcome:
    instance_id: str
    instance_type: str
    owner: str
    action: Action
    reason: str
    applied: bool = True
    detail: str = ""


@dataclass
class RegionReport:
    region: str
    candidates: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    no_gpu_telemetry: list[str] = field(default_factory=list)
    alarms_created: int = 0
    alarms_deleted: int = 0
    alarms_pending: int = 0  # left for the next sweep
    retryable_errors: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        counts = Counter(o.action.value for o in self.outcomes)
        return {
            "candidates": self.candidates,
            "actions": dict(sorted(counts.items())),
            "stopped": [o.instance_id for o in self.outcomes if o.action is Action.STOP and o.applied],
            "warned": [o.instance_id for o in self.outcomes if o.action is Action.WARN and o.applied],
            "skipped": {o.instance_id: o.reason for o in self.outcomes if o.action is Action.SKIP},
            "no_gpu_telemetry": self.no_gpu_telemetry,
            "decisions": [
                {"instance_id": o.instance_id, "action": o.action.value, "reason": o.reason, "applied": o.applied}
                for o in self.outcomes
                if o.action is not Action.NONE
            ],
            "alarms_created": self.alarms_created,
            "alarms_deleted": self.alarms_deleted,
            "alarms_pending": self.alarms_pending,
            "errors": self.retryable_errors,
        }


class IdleStopper:
    def __init__(
        self,
        *,
        region: str,
        ec2: Ec2,
        cloudwatch: CloudWatchMetrics,
        autoscaling: AutoScaling,
        ledger: Ledger,
        notifier: Callable[[], SlackNotifier],
        prices: PriceBook,
        settings: Settings,
        policy: IdlePolicy,
        manage_alarms: bool,
    ) -> None:
        self.region = region
        self.ec2 = ec2
        self.cloudwatch = cloudwatch
        self.autoscaling = autoscaling
        self.ledger = ledger
        self.notifier = notifier
        self.prices = prices
        self.settings = settings
        self.policy = policy
        self.mode = settings.mode
        self.manage_alarms = manage_alarms and policy.idle_alarms and settings.mode.mutates

    # ------------------------------------------------------------------ entry points
    def sweep(self, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        candidates = list(self.ec2.iter_instances(self.candidate_filters()))
        # Server-side filters narrow the page count; this check is the one the decision relies on.
        candidates = [i for i in candidates if is_accelerated(i.instance_type, self.policy)]
        report.candidates = len(candidates)
        fleet = self._act_on(candidates, now, report, one_instance=False)
        if self.manage_alarms:
            self._reconcile_alarms(candidates, fleet, report)
        return report

    def evaluate(self, instance_id: str, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        candidates = [i for i in self.ec2.describe([instance_id]) if i.state == "running"]
        report.candidates = len(candidates)
        if candidates:
            self._act_on(candidates, now, report, one_instance=True)
        return report

    def on_state_change(self, instance_id: str, state: str) -> RegionReport:
        report = RegionReport(self.region)
        if not self.manage_alarms:
            return report
        if state == "running":
            instances = [i for i in self.ec2.describe([instance_id]) if self._wants_alarm(i)]
            if instances:
                gpu = self.cloudwatch.discover_gpu_series(instances, one_instance=True)
                self.cloudwatch.put_alarm(self.cloudwatch.alarm_spec(instance_id, gpu.get(instance_id, [])))
                report.alarms_created = 1
        elif state in ("stopping", "stopped", "shutting-down", "terminated"):
            self.cloudwatch.delete_alarms([f"{ALARM_PREFIX}{instance_id}"])
            report.alarms_deleted = 1
        return report

    def candidate_filters(self) -> list[Any]:
        return [
            {"Name": "instance-state-name", "Values": ["running"]},
            {"Name": "instance-type", "Values": list(self.policy.accelerator_families)},
        ]

    # ------------------------------------------------------------------ judging and deciding
    def _act_on(
        self, candidates: Sequence[Instance], now: datetime, report: RegionReport, *, one_instance: bool
    ) -> FleetUtilization:
        spot_types = self.ec2.spot_request_types(
            [i.spot_request_id for i in candidates if i.lifecycle == "spot" and i.spot_request_id]
        )
        protected = self.autoscaling.protection(i.auto_scaling_group for i in candidates if i.auto_scaling_group)
        warned = [t for i in candidates if (t := self._live_warning(i))]
        start = now - timedelta(minutes=self.policy.window_minutes) - HISTORY
        if warned:
            start = max(min([start, *warned]), now - MAX_LOOKBACK)
        fleet = self.cloudwatch.utilization(candidates, start, now, one_instance=one_instance)
        ledger_actions: list[LedgerAction] = []
        protection_changes: dict[tuple[str, bool], list[Instance]] = defaultdict(list)
        try:
            for instance in candidates:
                utilization = fleet.get(instance.instance_id)
                if not utilization.gpu_telemetry:
                    report.no_gpu_telemetry.append(instance.instance_id)
                warned_at = self._live_warning(instance)
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
                if decision.action in (Action.PROTECT, Action.UNPROTECT):
                    protection_changes[(instance.auto_scaling_group, decision.action is Action.PROTECT)].append(
                        instance
                    )
                    continue
                outcome = self._act(instance, decision, now)
                report.outcomes.append(outcome)
                if outcome.detail.startswith("retry:"):
                    report.retryable_errors.append(f"{instance.instance_id}: {outcome.detail[6:]}")
                elif decision.action in (Action.WARN, Action.STOP, Action.CLEAR_WARNING) and not outcome.detail:
                    ledger_actions.append(self._ledger_action(instance, decision, outcome, now))
            for (group, protect), members in protection_changes.items():
                applied = self.autoscaling.set_protection(group, [m.instance_id for m in members], protect)
                action = Action.PROTECT if protect else Action.UNPROTECT
                for member in members:
                    reason = f"{'protected from' if protect else 'released for'} scale-in of {group}"
                    outcome = Outcome(
                        member.instance_id, member.instance_type, self._owner(member), action, reason, applied
                    )
                    report.outcomes.append(outcome)
                    ledger_actions.append(
                        self._ledger_action(member, Decision(member.instance_id, action, reason), outcome, now)
                    )
        finally:
            self.ledger.record_many(ledger_actions)
        return fleet

    # ------------------------------------------------------------------ acting
    def _act(self, instance: Instance, decision: Decision, now: datetime) -> Outcome:
        owner = self._owner(instance)
        outcome = Outcome(instance.instance_id, instance.instance_type, owner, decision.action, decision.reason)
        logger.info(
            "idle decision",
            instance_id=instance.instance_id,
            action=decision.action.value,
            reason=decision.reason,
            mode=self.mode.value,
        )
        try:
            if decision.action is Action.WARN:
                outcome.applied, outcome.detail = self._warn(instance, decision, owner, now)
            elif decision.action is Action.STOP:
                outcome.applied, outcome.detail = self._stop(instance, decision, owner, now)
            elif decision.action is Action.CLEAR_WARNING:
                # Back at work, or kept: the warning tags go, and nothing more is said.
                outcome.applied = self.ec2.delete_tags([instance.instance_id], tags.WARNING_TAGS)
        except SlackDeliveryError as exc:
            outcome.applied, outcome.detail = False, f"retry: Slack: {exc}"
        except (ClientError, BotoCoreError) as exc:
            outcome.applied, outcome.detail = False, f"retry: {exc}"
        return outcome

    def _warn(self, instance: Instance, decision: Decision, owner: str, now: datetime) -> tuple[bool, str]:
        price = self.prices.hourly(instance.instance_type, instance.region)
        if self.mode is Mode.DRY_RUN:
            # No tags in dry-run, so no state: say it once a day per instance instead of every sweep.
            key = f"dry-run:warn:{instance.instance_id}:{now:%Y-%m-%d}"
            posted = self._post_once(key, dry_run_notice(instance, decision, price, owner), now)
            return False, "" if posted else "reported already"
        # The warning is delivered first; only a delivered warning is recorded on the instance, so a
        # machine is never stopped on a warning nobody received.
        email = owner_email(owner, self.settings.email_domain) if owner else None
        message = idle_warning(instance, decision, price, owner, now)
        self.notifier().send_to_owner(email, message, fallback_channel=self.settings.alerts_channel, owner=owner)
        state = {tags.IDLE_WARNED_AT: tags.format_time(now)}
        if decision.stop_after is not None:
            state[tags.STOP_AFTER] = tags.format_time(decision.stop_after)
        return self.ec2.create_tags([instance.instance_id], state), ""

    def _stop(self, instance: Instance, decision: Decision, owner: str, now: datetime) -> tuple[bool, str]:
        warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "")
        if self.mode is not Mode.ENFORCE:
            key = f"{self.mode.value}:stop:{instance.instance_id}:{warned_at}"
            posted = self._post_once(key, not_stopped_notice(instance, decision, self.mode.value, owner), now)
            return False, "" if posted else "reported already"
        price = self.prices.hourly(instance.instance_type, instance.region)
        email = owner_email(owner, self.settings.email_domain) if owner else None
        # Told first, then stopped: a failed message stops nothing, and is retried next sweep.
        self.notifier().send_to_owner(
            email,
            stop_notice(instance, decision, price, owner, now),
            fallback_channel=self.settings.alerts_channel,
            owner=owner,
        )
        try:
            self.ec2.stop(instance.instance_id, hibernate=decision.hibernate)
        except ClientError as exc:
            code = error_code(exc)
            if decision.hibernate and code in ("UnsupportedHibernationConfiguration", "UnsupportedOperation"):
                self.ec2.stop(instance.instance_id, hibernate=False)
            elif code in PERMANENT_STOP_ERRORS:
                self._post_once(
                    f"stop-failed:{instance.instance_id}:{warned_at}", stop_failed_notice(instance, code, owner), now
                )
                return False, f"stop refused: {code}"
            else:
                raise
        # The warning tags stay as the record of what happened; after a restart they are older than the
        # instance's LaunchTime and are ignored, so no extra call is spent removing them.
        self.ec2.create_tags(
            [instance.instance_id],
            {tags.STOPPED_AT: tags.format_time(now), tags.STOP_REASON: tags.clip(decision.reason)},
        )
        return True, ""

    def _post_once(self, key: str, message: Message, now: datetime) -> bool:
        """Post to the alerts channel unless this key was posted before; True if posted now."""
        channel = self.settings.alerts_channel
        posted = post_once(
            self.ledger, self.notifier(), channel, key=key, message=message, now=now, ttl=timedelta(days=2)
        )
        return posted is not None

    # ------------------------------------------------------------------ alarms
    def _reconcile_alarms(self, candidates: Sequence[Instance], fleet: FleetUtilization, report: RegionReport) -> None:
        """One idle alarm per running accelerated instance that could be stopped; none for anything else."""
        existing = self.cloudwatch.existing_alarms()
        wanted: dict[str, dict[str, Any]] = {}
        for instance in candidates:
            if not self._wants_alarm(instance):
                continue
            spec = self.cloudwatch.alarm_spec(instance.instance_id, fleet.gpu_series.get(instance.instance_id, []))
            wanted[spec["AlarmName"]] = spec
        changed = [spec for name, spec in sorted(wanted.items()) if existing.get(name) != alarm_signature(spec)]
        for spec in changed[:MAX_ALARM_PUTS_PER_SWEEP]:
            self.cloudwatch.put_alarm(spec)
            report.alarms_created += 1
        report.alarms_pending = max(0, len(changed) - MAX_ALARM_PUTS_PER_SWEEP)
        orphans = sorted(set(existing) - set(wanted))
        if orphans:
            self.cloudwatch.delete_alarms(orphans)
            report.alarms_deleted = len(orphans)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _live_warning(instance: Instance) -> datetime | None:
        """When this run of the instance was warned with a stop time; None for none, or one from before a restart."""
        warned_at = tags.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
        if warned_at is None or warned_at < instance.launch_time or tags.STOP_AFTER not in instance.tags:
            return None
        return warned_at

    def _wants_alarm(self, instance: Instance) -> bool:
        """Alarms only for machines costguard could ever stop (tags like exempt can change; these cannot)."""
        return (
            is_accelerated(instance.instance_type, self.policy)
            and not instance.auto_scaling_group
            and instance.root_device_type != "instance-store"
            and instance.lifecycle != "spot"
        )

    def _owner(self, instance: Instance) -> str:
        return instance.owner(self.settings.owner_tag_key)

    def _ledger_action(self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime) -> LedgerAction:
        judgement = decision.judgement
        price = self.prices.hourly(instance.instance_type, instance.region) if decision.action is Action.STOP else None
        return LedgerAction(
            at=now,
            kind=decision.action.value,
            instance_id=instance.instance_id,
            region=instance.region,
            mode=self.mode.value,
            applied=outcome.applied,
            owner=outcome.owner,
            instance_type=instance.instance_type,
            reason=decision.reason,
            idle_hours=round(judgement.idle_minutes(now) / 60, 2) if judgement else 0.0,
            hourly_saving=(price.usd_per_hour or 0.0) if price else 0.0,
        )
