"""The idle stopper in one region: plan (read, judge, decide), notify, apply, record. Three ways in:

- `sweep`: every running accelerated instance (the 15-minute schedule), and alarm reconciliation;
- `evaluate`: one instance on fresh data (its idle alarm went to ALARM);
- `on_state_change`: create the idle alarm when an instance starts running, delete it when it stops.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.cloudwatch.alarms import IdleAlarms
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import Dimensions, GpuSeriesFinder, gpu_count
from costguard.aws.ec2 import Ec2
from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode, Settings
from costguard.idle.acts.alarms import AlarmKeeper
from costguard.idle.acts.delivery import AWS_ERRORS, NOTIFY_WORKERS
from costguard.idle.acts.effects import Effects, effect_record
from costguard.idle.acts.notices import Recovered, SweepNotices, tells_schedule
from costguard.idle.acts.recovery import Recovery
from costguard.idle.acts.starts import MorningStarts
from costguard.idle.acts.writes import PendingWrites, SweepWriter
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.consult import Consultation, sort_out
from costguard.idle.reads.fortnights import Learner
from costguard.idle.reads.plan import SweepPlanner
from costguard.idle.report import Outcome, RegionReport, Settled, Status, ledger_entry
from costguard.idle.rules.decision import Action, Decision
from costguard.slack.notifier import SlackNotifier
from costguard.state.checklog import CheckLog
from costguard.state.claims import Claims
from costguard.state.ledger import Ledger
from costguard.state.outbox import PROTECT, UNPROTECT, Outbox

TOLD = (Action.WARN, Action.STOP, Action.CANCEL_STOP)


def _forever() -> float:
    return float("inf")


class IdleStopper:
    def __init__(
        self,
        *,
        region: str,
        ec2: Ec2,
        gpu_series: GpuSeriesFinder,
        metrics: MetricReader,
        alarms: IdleAlarms,
        autoscaling: AutoScaling,
        ledger: Ledger,
        claims: Claims,
        outbox: Outbox,
        notifier: Callable[[], SlackNotifier],
        prices: PriceBook,
        settings: Settings,
        policy: IdlePolicy,
        manage_alarms: bool,
        checker: ActivityChecker | None = None,
        time_left: Callable[[], float] | None = None,
        checklog: CheckLog | None = None,
        learner: Learner | None = None,
        hours_for: Callable[[Instance, datetime], str | None] | None = None,
    ) -> None:
        self.region = region
        self.ec2 = ec2
        self.autoscaling = autoscaling
        self.ledger = ledger
        self.prices = prices
        self.settings = settings
        self.policy = policy
        self.manage_alarms = manage_alarms and policy.idle_alarms and settings.mode.mutates
        # The activity check runs a (read-only) script on the machine: never in dry-run.
        self.checker = checker if settings.mode.mutates and policy.activity_check_document else None
        time_left = time_left or _forever
        starts = learner.starts if learner is not None else None
        kept = checklog if self.checker is not None else None  # no check, no answers to keep
        self.consult = Consultation(checker=self.checker, checklog=kept, learner=learner, policy=policy)
        self.planner = SweepPlanner(
            ec2=ec2,
            gpu_series=gpu_series,
            metrics=metrics,
            autoscaling=autoscaling,
            policy=policy,
            checklog=kept,  # the answers kept: evidence for the judgement
        )
        self.notices = SweepNotices(
            claims=claims,
            outbox=outbox,
            notifier=notifier,
            prices=prices,
            settings=settings,
            time_left=time_left,
            **({"hours_for": hours_for} if hours_for is not None else {}),
        )
        self.writer = SweepWriter(
            ec2=ec2, outbox=outbox, ledger=ledger, prices=prices, policy=policy, mode=settings.mode, starts=starts
        )
        self.effects = Effects(outbox=outbox, ec2=ec2, autoscaling=autoscaling, time_left=time_left)
        self.mornings = MorningStarts(
            ec2=ec2,
            ledger=ledger,
            effects=self.effects,
            policy=policy,
            settings=settings,
            starts=starts,
            tell=self.notices.tell if policy.morning_note else None,  # the optional morning note
        )
        self.recovery = Recovery(ec2=ec2, outbox=outbox, notices=self.notices, writer=self.writer, effects=self.effects)
        self.alarms = AlarmKeeper(ec2=ec2, gpu_series=gpu_series, alarms=alarms, policy=policy)

    def sweep(self, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        try:  # first: a machine due to start for its work or its hours cannot wait for the rest to succeed
            self.mornings.run(now, report)
        finally:
            candidates = list(self.ec2.iter_instances(candidate_filters(self.policy)))
            # Server-side filters narrow the page count; this check is the one the decision relies on.
            candidates = [i for i in candidates if self.policy.is_accelerated(i.instance_type)]
            report.candidates = len(candidates)
            self.mornings.settle_running(candidates, report)  # learned starts not yet recorded
            gpu = self._act_on(candidates, now, report, one_instance=False, recovered=self._recover(now))
        if self.manage_alarms:
            self.alarms.reconcile(candidates, gpu, report)
        return report

    def evaluate(self, instance_id: str, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        candidates = [i for i in self.ec2.describe([instance_id]) if i.state == "running"]
        report.candidates = len(candidates)
        if candidates:
            self._act_on(candidates, now, report, one_instance=True, recovered=self._recover(now))
        return report

    def _recover(self, now: datetime) -> Recovered:
        """What a dead attempt left; the owners of the starts it made told, as they would have been."""
        recovered = self.recovery.run(now)
        self.mornings.notes(recovered.started)
        return recovered

    def on_state_change(self, instance_id: str, state: str) -> RegionReport:
        report = RegionReport(self.region)
        if self.manage_alarms:
            self.alarms.on_state_change(instance_id, state, report)
        if state == "running" and self.settings.mode.mutates:
            self.mornings.started(instance_id)
        return report

    def _act_on(
        self,
        candidates: Sequence[Instance],
        now: datetime,
        report: RegionReport,
        *,
        one_instance: bool,
        recovered: Recovered,
    ) -> Mapping[str, Sequence[Dimensions]]:
        plan = self.planner.plan(candidates, now, one_instance=one_instance)
        writes = PendingWrites()
        decided: list[tuple[Instance, Decision, Future[Outcome]]] = []
        to_check: list[tuple[Instance, Decision]] = []
        protection_changes: dict[tuple[str, bool], list[Instance]] = defaultdict(list)
        pool = ThreadPoolExecutor(max_workers=NOTIFY_WORKERS, thread_name_prefix="notify")
        self.notices.expect(candidates)  # their owners' Slack ids are resolved before the first message

        def act(instance: Instance, decision: Decision) -> None:
            if decision.action in TOLD or tells_schedule(decision):  # a message: made ready here, not in threads
                self.notices.prepare(instance)
            if decision.action is Action.STOP and decision.start_at is not None:
                gpus = gpu_count(plan.gpu_series.get(instance.instance_id, ()))
                writes.start_again(instance.instance_id, decision.start_at, gpus)
            future = pool.submit(self.notices.act, instance, decision, now, writes, recovered)
            decided.append((instance, decision, future))

        try:
            sorted_out = sort_out(plan, report, act, to_check, protection_changes)
            final = self.consult.decide(to_check, sorted_out, plan.gpu_series, report, now)
            for instance, decision in final:
                act(instance, decision)
            settled = [(instance, decision, future.result()) for instance, decision, future in decided]
        finally:
            pool.shutdown(wait=True)
        # The warnings first (each delivered and recorded before its tags are queued); then the EC2 writes of
        # the whole sweep, a few calls for the fleet instead of one or two per instance; then each stop AWS
        # took (and each a dead attempt left) is told to its owner.
        told = self.notices.send(now)
        written = self.writer.apply(writes, now)
        reported = self.notices.report_refused(written.refused, now)
        stops_told = self.notices.tell_stops(written.stopped, now, left=recovered.stops)
        outcomes = [
            outcome.settled(told.get(iid), written.results.get(iid), reported.get(iid), stops_told.get(iid))
            for iid, outcome in ((i.instance_id, o) for i, _, o in settled)
        ]
        outcomes += scale_in_protection(
            self.autoscaling,
            self.effects,
            protection_changes,
            owner_tag_key=self.settings.owner_tag_key,
            mode=self.settings.mode,
            now=now,
        )
        report.outcomes += outcomes
        report.retryable_errors += [f"{o.instance_id}: {o.detail}" for o in outcomes if o.status is Status.RETRY]
        return plan.gpu_series


def candidate_filters(policy: IdlePolicy) -> list[Any]:
    return [
        {"Name": "instance-state-name", "Values": ["running"]},
        {"Name": "instance-type", "Values": list(policy.accelerator_families)},
    ]


def scale_in_protection(
    autoscaling: AutoScaling,
    effects: Effects,
    changes: Mapping[tuple[str, bool], Sequence[Instance]],
    *,
    owner_tag_key: str,
    mode: Mode,
    now: datetime,
) -> list[Outcome]:
    """Busy Auto Scaling members protected from scale-in, idle ones released: one call per group and way,
    each member's change kept in the outbox before the call and recorded with its ledger entry after it."""
    out: list[Outcome] = []
    for (group, protect), members in changes.items():
        action = Action.PROTECT if protect else Action.UNPROTECT
        reason = f"{'protected from' if protect else 'released for'} scale-in of {group}"
        outcomes = [
            Outcome(m.instance_id, m.instance_type, m.owner(owner_tag_key), action, reason, mode.mutates)
            for m in members
        ]
        kind = PROTECT if protect else UNPROTECT
        records = [
            effect_record(kind, m, m.launch_time, ledger_entry(m, o, now, mode=mode), now=now, group=group)
            for m, o in zip(members, outcomes, strict=True)
        ]
        try:
            held = effects.before(records, now)
        except AWS_ERRORS as exc:  # no record, no change: the next sweep decides again
            out += [o.settled(Settled.retry(f"outbox: {exc}")) for o in outcomes]
            continue
        try:
            autoscaling.set_protection(group, [m.instance_id for m in members], protect)
        except (ClientError, BotoCoreError) as exc:
            effects.drop(held)
            out += [o.settled(Settled.retry(exc)) for o in outcomes]
            continue
        effects.after(held)
        out += outcomes
    return out
