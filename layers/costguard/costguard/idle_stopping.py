"""The idle stopper in one region: read the fleet, judge, decide, act, tell. Three ways in:

- `sweep`: every running accelerated instance (the 15-minute schedule), and alarm reconciliation;
- `evaluate`: one instance on fresh data (its idle alarm went to ALARM);
- `on_state_change`: create the idle alarm when an instance starts running, delete it when it stops.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard import tags
from costguard.autoscaling import AutoScaling
from costguard.aws import error_code
from costguard.cloudwatch import ALARM_PREFIX, CloudWatchMetrics, alarm_signature
from costguard.ec2 import TAG_BATCH, Ec2
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
from costguard.utilization import FleetUtilization, Utilization, judge

# Stop failures that no retry will fix: reported once, not retried every sweep.
PERMANENT_STOP_ERRORS = {
    "OperationNotPermitted",
    "UnsupportedOperation",
    "IncorrectInstanceState",
    "InvalidInstanceID.NotFound",
    "UnsupportedHibernationConfiguration",
}
# Slack messages of a sweep go out this many at a time: a sweep that stops 1,000 machines sends
# 1,000 messages, and Slack answers in 100-300 ms from AWS, too slow one by one for the timeout.
NOTIFY_WORKERS = 8
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
class _Batch:
    """The EC2 writes a sweep has decided, applied together once every instance is judged."""

    decided: list[tuple[Instance, Decision, Future[Outcome]]] = field(default_factory=list)
    stops: defaultdict[bool, list[tuple[Instance, Outcome]]] = field(default_factory=lambda: defaultdict(list))
    tags: defaultdict[tuple[tuple[str, str], ...], list[tuple[Instance, Outcome]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    clears: list[tuple[Instance, Outcome]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)  # the notifying threads queue here


def _chunks(items: Sequence[tuple[Instance, Outcome]]) -> list[Sequence[tuple[Instance, Outcome]]]:
    """Runs of TAG_BATCH instances, in instance-id order (the notifying threads queue in any order)."""
    ordered = sorted(items, key=lambda pair: pair[0].instance_id)
    return [ordered[n : n + TAG_BATCH] for n in range(0, len(ordered), TAG_BATCH)]


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
        gpu_series = self.cloudwatch.discover_gpu_series(candidates, one_instance=one_instance)
        ledger_actions: list[LedgerAction] = []
        protection_changes: dict[tuple[str, bool], list[Instance]] = defaultdict(list)
        batch = _Batch()
        pool = ThreadPoolExecutor(max_workers=NOTIFY_WORKERS, thread_name_prefix="notify")
        try:
            for instance, utilization in self._utilization(candidates, gpu_series, start, now):
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
                if decision.action in (Action.WARN, Action.STOP):
                    # Made here, once, not by racing threads: the price lookup and the Slack client.
                    self.prices.hourly(instance.instance_type, instance.region)
                    self.notifier()
                batch.decided.append((instance, decision, pool.submit(self._act, instance, decision, now, batch)))
            decided = [(instance, decision, future.result()) for instance, decision, future in batch.decided]
            # The EC2 writes of the whole sweep, a few calls for the fleet instead of one or two per instance.
            self._apply(batch, now)
            for instance, decision, outcome in decided:
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
            pool.shutdown(wait=True)
            self.ledger.record_many(ledger_actions)
        return FleetUtilization(gpu_series=gpu_series)

    def _utilization(
        self, candidates: Sequence[Instance], gpu_series: Mapping[str, Any], start: datetime, now: datetime
    ) -> Iterator[tuple[Instance, Utilization]]:
        """Each candidate with its utilization, read one GetMetricData call's worth at a time."""
        for run, fleet in self.cloudwatch.chunks(candidates, gpu_series, start, now):
            for instance in run:
                yield instance, fleet.get(instance.instance_id)

    # ------------------------------------------------------------------ acting
    def _act(self, instance: Instance, decision: Decision, now: datetime, batch: _Batch) -> Outcome:
        """Tell Slack now; queue the EC2 write for `_apply`. The outcome is settled there."""
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
                self._warn(instance, decision, outcome, now, batch)
            elif decision.action is Action.STOP:
                self._stop(instance, decision, outcome, now, batch)
            elif decision.action is Action.CLEAR_WARNING:
                # Back at work, or kept: the warning tags go, and nothing more is said.
                with batch.lock:
                    batch.clears.append((instance, outcome))
        except SlackDeliveryError as exc:
            outcome.applied, outcome.detail = False, f"retry: Slack: {exc}"
        except (ClientError, BotoCoreError) as exc:
            outcome.applied, outcome.detail = False, f"retry: {exc}"
        return outcome

    def _warn(self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, batch: _Batch) -> None:
        price = self.prices.hourly(instance.instance_type, instance.region)
        if self.mode is Mode.DRY_RUN:
            # No tags in dry-run, so no state: say it once a day per instance instead of every sweep.
            key = f"dry-run:warn:{instance.instance_id}:{now:%Y-%m-%d}"
            posted = self._post_once(key, dry_run_notice(instance, decision, price, outcome.owner), now)
            outcome.applied, outcome.detail = False, "" if posted else "reported already"
            return
        # The warning is delivered first; only a delivered warning is recorded on the instance, so a
        # machine is never stopped on a warning nobody received.
        owner = outcome.owner
        email = owner_email(owner, self.settings.email_domain) if owner else None
        message = idle_warning(instance, decision, price, owner, now)
        self.notifier().send_to_owner(email, message, fallback_channel=self.settings.alerts_channel, owner=owner)
        state = {tags.IDLE_WARNED_AT: tags.format_time(now)}
        if decision.stop_after is not None:
            state[tags.STOP_AFTER] = tags.format_time(decision.stop_after)
        with batch.lock:
            batch.tags[tuple(sorted(state.items()))].append((instance, outcome))

    def _stop(self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, batch: _Batch) -> None:
        owner = outcome.owner
        if self.mode is not Mode.ENFORCE:
            key = f"{self.mode.value}:stop:{instance.instance_id}:{instance.tags.get(tags.IDLE_WARNED_AT, '')}"
            posted = self._post_once(key, not_stopped_notice(instance, decision, self.mode.value, owner), now)
            outcome.applied, outcome.detail = False, "" if posted else "reported already"
            return
        price = self.prices.hourly(instance.instance_type, instance.region)
        email = owner_email(owner, self.settings.email_domain) if owner else None
        # Told first, then stopped: a failed message stops nothing, and is retried next sweep.
        self.notifier().send_to_owner(
            email,
            stop_notice(instance, decision, price, owner, now),
            fallback_channel=self.settings.alerts_channel,
            owner=owner,
        )
        with batch.lock:
            batch.stops[decision.hibernate].append((instance, outcome))

    def _apply(self, batch: _Batch, now: datetime) -> None:
        """Stops, then the record of them, warnings and clears: a call per 500 instances that share the
        write, and one call per instance only for a batch AWS refused (so one refusal costs no one else)."""
        stopped: list[tuple[Instance, Outcome]] = []
        for hibernate, queued in batch.stops.items():
            for chunk in _chunks(queued):
                try:
                    self.ec2.stop([i.instance_id for i, _ in chunk], hibernate=hibernate)
                    stopped += chunk
                except (ClientError, BotoCoreError):
                    stopped += [(i, o) for i, o in chunk if self._stop_one(i, o, hibernate, now)]
        # The warning tags stay as the record of what happened; after a restart they are older than the
        # instance's LaunchTime and are ignored, so no call is spent removing them.
        record = {
            tags.STOPPED_AT: tags.format_time(now),
            tags.STOP_REASON: tags.clip(
                f"idle: GPU < {self.policy.gpu_idle_percent:g}%, CPU < {self.policy.cpu_idle_percent:g}% "
                f"for {self.policy.window_minutes} min"
            ),
        }
        self._each_or_all(stopped, partial(self.ec2.create_tags, tags=record), settles=False)
        for state, queued in batch.tags.items():
            self._each_or_all(queued, partial(self.ec2.create_tags, tags=dict(state)))
        self._each_or_all(batch.clears, partial(self.ec2.delete_tags, keys=tags.WARNING_TAGS))

    def _stop_one(self, instance: Instance, outcome: Outcome, hibernate: bool, now: datetime) -> bool:
        """One instance of a refused batch, alone; True if it stopped. Settles the outcome if not."""
        warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "")
        try:
            try:
                self.ec2.stop([instance.instance_id], hibernate=hibernate)
            except ClientError as exc:
                code = error_code(exc)
                if hibernate and code in ("UnsupportedHibernationConfiguration", "UnsupportedOperation"):
                    self.ec2.stop([instance.instance_id], hibernate=False)
                elif code in PERMANENT_STOP_ERRORS:
                    self._post_once(
                        f"stop-failed:{instance.instance_id}:{warned_at}",
                        stop_failed_notice(instance, code, outcome.owner),
                        now,
                    )
                    outcome.applied, outcome.detail = False, f"stop refused: {code}"
                    return False
                else:
                    raise
        except (ClientError, BotoCoreError, SlackDeliveryError) as exc:
            outcome.applied, outcome.detail = False, f"retry: {exc}"
            return False
        return True

    def _each_or_all(
        self, queued: Sequence[tuple[Instance, Outcome]], write: Callable[[list[str]], bool], *, settles: bool = True
    ) -> None:
        """One write for all the instances; if AWS refuses it, one write each. `settles`: the write's
        result is the action's outcome (a warning's or a clear's tags); else a failure is only logged (a
        stop's record: the stop happened, and is in the ledger)."""
        for chunk in _chunks(queued):
            try:
                applied = write([i.instance_id for i, _ in chunk])
                results: list[tuple[Outcome, bool, str]] = [(o, applied, "") for _, o in chunk]
            except (ClientError, BotoCoreError):
                results = []
                for instance, outcome in chunk:
                    try:
                        results.append((outcome, write([instance.instance_id]), ""))
                    except (ClientError, BotoCoreError) as exc:
                        results.append((outcome, False, f"retry: {exc}"))
            for outcome, applied, detail in results:
                if settles:
                    outcome.applied, outcome.detail = applied, detail
                elif detail:
                    logger.warning("stop not recorded on the instance", instance_id=outcome.instance_id, error=detail)

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
