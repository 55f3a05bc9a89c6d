"""The idle stopper in one region: the one module that wires the steps and orders them (numbered below,
as docs/architecture.md draws them). Three ways in:

- `sweep`: every running accelerated instance (the 15-minute schedule), and alarm reconciliation;
- `evaluate`: one instance on fresh data (its idle alarm went to ALARM);
- `on_state_change`: create the idle alarm when an instance starts running, delete it when it stops, and
  keep the start or stop for the working hours a warning may offer.

`idle_stopper` builds a region's stopper from a handler's runtime; `run` carries out one event.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cache, partial
from typing import Any, Protocol

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.billing import BillingReader
from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.cloudwatch.alarms import IdleAlarms
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import Dimensions, GpuSeriesFinder, gpu_count
from costguard.aws.ec2 import Ec2
from costguard.aws.pricing import PriceBook
from costguard.aws.ssm import Ssm
from costguard.core.clock import forever
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.regions import each_region
from costguard.core.settings import IdlePolicy, Settings
from costguard.idle.acts.alarms import AlarmKeeper
from costguard.idle.acts.daily import KeepOffers
from costguard.idle.acts.delivery import NOTIFY_WORKERS
from costguard.idle.acts.kept import Promises, keep_answers, remember
from costguard.idle.acts.notices import SweepNotices
from costguard.idle.acts.outbox import Effects, Recovered, Recovery
from costguard.idle.acts.protection import scale_in_protection
from costguard.idle.acts.refused import RefusedStarts
from costguard.idle.acts.starts import DueStarts, hours_offer
from costguard.idle.acts.worth import reprice_stopped
from costguard.idle.acts.writes import PendingWrites, SweepWriter
from costguard.idle.events import AlarmFired, StateChanged, Sweep
from costguard.idle.reads.bill import SweepBill, kept_stopped
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.facts import OwnerZones, SweepFacts
from costguard.idle.reads.fortnights import Learner
from costguard.idle.reads.plan import Sorted, SweepPlan, SweepPlanner, sort_out
from costguard.idle.report import Outcome, RegionReport, Status
from costguard.idle.rules import pipeline
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.pipeline import tells
from costguard.slack.notifier import SlackNotifier
from costguard.state.capacity import CapacityLog
from costguard.state.checklog import CheckLog
from costguard.state.claims import Claims
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger
from costguard.state.outbox import Outbox
from costguard.state.scarcity import Capacity, SweepCapacity
from costguard.state.spill import SpillLog
from costguard.state.startlog import StartLog
from costguard.state.worth import WorthLog

TOLD = (Action.WARN, Action.STOP, Action.CANCEL_STOP)
REPRICE_SECONDS = 30  # time left a sweep needs to price the machines it keeps stopped again
Decided = tuple[Instance, Decision]


@dataclass(frozen=True)
class Aws:
    """What the sweep reads and changes in AWS, in one region."""

    region: str
    ec2: Ec2
    gpu_series: GpuSeriesFinder
    metrics: MetricReader
    alarms: IdleAlarms
    autoscaling: AutoScaling
    prices: PriceBook
    checker: ActivityChecker | None = None  # the activity check on the machine (None: metrics alone)
    bill: BillingReader | None = None  # the bill a stop is priced on (None: every stop priced on demand, unsaid)
    trail: CloudTrail | None = None  # the failed starts that tell scarce capacity (None: costguard's own alone)


@dataclass(frozen=True)
class State:
    """What costguard keeps in its table: the ledger, once-only claims, the outbox of effects and notices,
    the activity checks' answers, the machines' starts and stops, and the learned starts."""

    ledger: Ledger
    claims: Claims
    outbox: Outbox
    checklog: CheckLog
    history: MachineHistory
    starts: StartLog
    capacity: CapacityLog | None = None  # the starts EC2 refused for capacity (None: no scarcity is known)
    worth: WorthLog | None = None  # what the machines costguard keeps stopped save, sweep by sweep (None: not kept)
    spill: SpillLog | None = None  # what the plans and RIs leave on demand by quarter-hour (None: priced on the hour)


@dataclass(frozen=True)
class Terms:
    """The deployment's settings and idle policy, and the invocation's time left."""

    settings: Settings
    policy: IdlePolicy
    time_left: Callable[[], float] = forever


class IdleStopper:
    def __init__(self, *, aws: Aws, state: State, notifier: Callable[[], SlackNotifier], terms: Terms) -> None:
        settings, policy, mode = terms.settings, terms.policy, terms.settings.mode
        ec2, autoscaling, outbox = aws.ec2, aws.autoscaling, state.outbox
        self.region, self.ec2, self.autoscaling, self.history = aws.region, ec2, autoscaling, state.history
        self.settings, self.policy, self.bill_reader, self.prices = settings, policy, aws.bill, aws.prices
        self.capacity = capacity_of(aws, state, terms)  # the region's scarcity evidence, for one sweep
        self.worth, self.time_left = (state.worth if mode.mutates else None), terms.time_left
        self.spill = state.spill if mode.mutates else None
        # Alarm state changes reach EventBridge in the alarm's region: only the home region has the rule.
        self.manage_alarms = aws.region == settings.home_region and policy.idle_alarms and mode.mutates
        # The activity check runs a (read-only) script on the machine: never in dry-run.
        checker = aws.checker if mode.mutates and policy.activity_check_document else None
        kept = state.checklog if checker is not None else None  # no check, no answers to keep
        self.checker, self.checklog, self.learner = checker, kept, learner(aws, state, terms)
        self.promises = promises(state, terms)
        self.planner = SweepPlanner(
            ec2=ec2,
            gpu_series=aws.gpu_series,
            metrics=aws.metrics,
            autoscaling=autoscaling,
            policy=policy,
            checklog=kept,  # the answers kept: evidence for the judgement
        )
        self.notices = sweep_notices(aws, state, notifier, terms)
        self.offers = keep_offers(self.learner, self.notices, terms)
        self.decided: list[Decided] = []  # the sweep's decisions through the pipeline: what its offers are made of
        self.writer = sweep_writer(aws, state, terms)
        self.effects = Effects(outbox=outbox, ec2=ec2, autoscaling=autoscaling, time_left=terms.time_left)
        self.due_starts = due_starts(ec2, state, terms, self.effects, self.notices)
        self.recovery = Recovery(
            ec2=ec2, outbox=outbox, notifier=notifier, mode=mode, writer=self.writer, effects=self.effects
        )
        self.alarms = AlarmKeeper(ec2=ec2, gpu_series=aws.gpu_series, alarms=aws.alarms, policy=policy)

    def sweep(self, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        capacity = self.capacity(now=now)
        self.decided = []
        try:  # 1. first: a machine due to start for its work or its hours cannot wait for the rest to succeed
            self.due_starts.run(now, report, capacity)
        finally:
            # 2. Server-side filters narrow the page count; this check is the one the decision relies on.
            candidates = accelerated(self.ec2, self.policy)
            report.candidates = len(candidates)
            self.due_starts.settle_running(candidates, report, capacity)  # 3. learned starts not yet recorded
            recovered = self._recover(now)  # 4.
            gpu = self._act_on(candidates, now, report, one_instance=False, recovered=recovered, capacity=capacity)
        try:  # a weekday morning: exemptions after a stop offered back as keeps (a nicety: never the sweep's end)
            self.offers.run(candidates, gpu, now)
            self.offers.hooks(self.decided, now)  # ... and keep-alive hooks that hold idle machines
            self.offers.unseen(self.decided, now)  # ... and the owners of machines held because nothing sees in
        except Exception:
            logger.exception("keep offers not made", region=self.region)
        self.notices.shown.stale()  # the messages whose edit Slack did not take before, as they stand now
        if self.manage_alarms:  # 16.
            self.alarms.reconcile(candidates, gpu, report)
        return report

    def evaluate(self, instance_id: str, now: datetime) -> RegionReport:
        report = RegionReport(self.region)
        candidates = [i for i in self.ec2.describe([instance_id]) if i.state == "running"]
        report.candidates = len(candidates)
        if candidates:
            recovered = self._recover(now)
            capacity = self.capacity(now=now)
            self._act_on(candidates, now, report, one_instance=True, recovered=recovered, capacity=capacity)
        return report

    def _recover(self, now: datetime) -> Recovered:
        """4. What a dead attempt left; the owners of the starts it made told, as they would have been."""
        recovered = self.recovery.run(now)
        self.due_starts.notes(recovered.started)
        return recovered

    def on_state_change(self, instance_id: str, state: str, at: datetime) -> RegionReport:
        report = RegionReport(self.region)
        if self.manage_alarms:
            self.alarms.on_state_change(instance_id, state, report)
        if state == "running" and self.settings.mode.mutates:
            self.due_starts.started(instance_id, self.capacity(now=at))
        if state in ("running", "stopped"):
            remember(self.history, instance_id, state, at)
        self.notices.shown.state_changed(instance_id, state, at)  # its latest message says so (best effort)
        return report

    def _decide(  # noqa: PLR0917 (the sweep's steps so far, each its own)
        self,
        to_check: Sequence[Decided],
        sorted_out: Sorted,
        plan: SweepPlan,
        report: RegionReport,
        capacity: Capacity,
        bill: SweepBill,
        now: datetime,
    ) -> list[Decided]:
        """7. The warnings and stops through the rest of the rules, in their one order (rules/pipeline.py), on
        the facts read for them; then what the reading found kept: the checks' answers, the starts judged."""
        facts = SweepFacts(
            checker=self.checker,
            learner=self.learner,
            capacity=capacity,
            bill=bill,
            gpu_series=plan.gpu_series,
            memory_series=plan.memory_series,  # a blind machine's nights read with its GPUs' memory held
            earlier=sorted_out.answers,
            report=report,
            watched=frozenset(i.instance_id for i in sorted_out.watched),
            owner_zone=OwnerZones(self.notices.notifier, self.settings),
        )
        try:
            final = pipeline.decide(to_check, facts, self.promises, self.policy, now, watched=sorted_out.watched)
        finally:  # the answers are evidence for the sweeps to come, whatever became of this one's reads
            if self.checklog is not None:
                keep_answers(self.checklog, facts.checked, sorted_out.answers, now)
        for instance, found in facts.judged:
            self.promises.judged(instance, found, now)
        self.decided = final  # each offer's own rule (rules/offers.py) says which of them it is made about
        return final

    def _act_on(
        self,
        candidates: Sequence[Instance],
        now: datetime,
        report: RegionReport,
        *,
        one_instance: bool,
        recovered: Recovered,
        capacity: Capacity,
    ) -> Mapping[str, Sequence[Dimensions]]:
        plan = self.planner.plan(candidates, now, one_instance=one_instance)  # 5. read, judge, decide (lazily)
        writes = PendingWrites()
        decided: list[tuple[Instance, Decision, Future[Outcome]]] = []
        to_check: list[tuple[Instance, Decision]] = []
        protection_changes: dict[tuple[str, bool], list[Instance]] = defaultdict(list)
        pool = ThreadPoolExecutor(max_workers=NOTIFY_WORKERS, thread_name_prefix="notify")
        self.notices.expect(candidates)  # their owners' Slack ids are resolved before the first message
        running = (lambda: accelerated(self.ec2, self.policy)) if one_instance else (lambda: candidates)  # RI pools
        # the stops still in force: asked where a profile prices a stop, and by step 15, read once (a failed read
        # is not kept: asked again)
        stopped = cache(lambda: kept_stopped(self.ec2, self.policy))
        bill = SweepBill(
            self.bill_reader,
            self.prices,
            running,
            now,
            self.region,
            policy=self.policy,
            profile=self.spill,
            stopped=stopped,
        )

        def act(instance: Instance, decision: Decision) -> None:  # 8. told and written by notices.act, queued
            bill.note(instance, decision)  # a stop coming: priced before this sweep's own
            if decision.action in TOLD or tells(decision):  # a message: made ready here, not in threads
                self.notices.prepare(instance)
            if decision.action is Action.STOP and decision.start_at is not None:
                gpus = gpu_count(plan.gpu_series.get(instance.instance_id, ()))
                writes.start_again(instance.instance_id, decision.start_at, gpus)
            future = pool.submit(self.notices.act, instance, decision, now, writes, recovered)
            decided.append((instance, decision, future))

        try:
            sorted_out = sort_out(plan, report, act, to_check, protection_changes)  # 6.
            final = self._decide(to_check, sorted_out, plan, report, capacity, bill, now)  # 7.
            for instance, decision in final:  # 8.
                act(instance, decision)
            settled = [(instance, decision, future.result()) for instance, decision, future in decided]
        finally:
            pool.shutdown(wait=True)
        # The warnings first (each delivered and recorded before its tags are queued); then the EC2 writes of
        # the whole sweep, a few calls for the fleet instead of one or two per instance; then each stop AWS
        # took (and each a dead attempt left) is told to its owner.
        told = self.notices.send(now)  # 9.
        written = self.writer.apply(writes, now)  # 10.
        # the warnings of machines kept or at work again say so, in place: those whose tags came off
        self.notices.shown.edit_queued(now, uncleared=written.uncleared)
        reported = self.notices.report_refused(written.refused, now)  # 11.
        stops_told = self.notices.tell_stops(written.stopped, now, left=recovered.stops)  # 12.
        outcomes = [  # 13. each outcome as the steps that carried it out left it
            outcome.settled(told.get(iid), written.results.get(iid), reported.get(iid), stops_told.get(iid))
            for iid, outcome in ((i.instance_id, o) for i, _, o in settled)
        ]
        outcomes += scale_in_protection(  # 14.
            self.autoscaling,
            self.effects,
            protection_changes,
            owner_tag_key=self.settings.owner_tag_key,
            mode=self.settings.mode,
            now=now,
        )
        report.outcomes += outcomes
        report.retryable_errors += [f"{o.instance_id}: {o.detail}" for o in outcomes if o.status is Status.RETRY]
        if not one_instance and self.worth is not None and self.time_left() > REPRICE_SECONDS:  # 15.
            reprice_stopped(self.ec2, self.policy, self.worth, bill, now, read=stopped)
        return plan.gpu_series


def capacity_of(aws: Aws, state: State, terms: Terms) -> Callable[..., SweepCapacity]:
    """A sweep's scarcity evidence (`now=`), read when first asked."""
    return partial(
        SweepCapacity, log=state.capacity, trail=aws.trail, ec2=aws.ec2, region=aws.region, time_left=terms.time_left
    )


def sweep_writer(aws: Aws, state: State, terms: Terms) -> SweepWriter:
    return SweepWriter(
        ec2=aws.ec2,
        outbox=state.outbox,
        ledger=state.ledger,
        prices=aws.prices,
        policy=terms.policy,
        mode=terms.settings.mode,
        starts=state.starts,
    )


def sweep_notices(aws: Aws, state: State, notifier: Callable[[], SlackNotifier], terms: Terms) -> SweepNotices:
    """What the sweep tells, and how: warnings and stops, on the team's clock, the hours a warning offers."""
    return SweepNotices(
        claims=state.claims,
        outbox=state.outbox,
        notifier=notifier,
        prices=aws.prices,
        settings=terms.settings,
        zone=terms.policy.team_timezone,
        time_left=terms.time_left,
        hours_for=hours_offer(state.history),
    )


def due_starts(ec2: Ec2, state: State, terms: Terms, effects: Effects, notices: SweepNotices) -> DueStarts:
    """The starts for working hours and learned work, the refused ones told (the morning note optional)."""
    settings, policy = terms.settings, terms.policy
    return DueStarts(
        ec2=ec2,
        ledger=state.ledger,
        effects=effects,
        policy=policy,
        settings=settings,
        refusals=RefusedStarts(
            ledger=state.ledger,
            claims=state.claims,
            tell=notices.tell,
            settings=settings,
            who=notices.person,
            zone=policy.team_timezone,
        ),
        starts=state.starts,
        tell=notices.tell if policy.morning_note else None,
        who=notices.person,
    )


def keep_offers(learner: Learner, notices: SweepNotices, terms: Terms) -> KeepOffers:
    """The mornings' offers of a keep for its runs, each machine's runs read as a blind one's are (its nights too)."""

    def past(decided: Sequence[tuple[Instance, Decision]], series: Mapping[str, Any], now: datetime) -> Any:
        return learner.past(decided, series, now, blind={i.instance_id for i, _ in decided})

    return KeepOffers(notices=notices, past=past, zone=terms.policy.team_timezone)


def learner(aws: Aws, state: State, terms: Terms) -> Learner:
    """The recurring work of the machines about to be stopped: their fortnights, starts and stops, learned starts."""
    return Learner(
        metrics=aws.metrics,
        history=state.history,
        starts=state.starts,
        policy=terms.policy,
        list_price=lambda i: aws.prices.hourly(i.instance_type, i.region).usd_per_hour,
    )


def promises(state: State, terms: Terms) -> Promises:
    """The start log's promises, and the learned starts judged, kept."""
    settings = terms.settings
    return Promises(starts=state.starts, ledger=state.ledger, mode=settings.mode, owner_tag_key=settings.owner_tag_key)


def accelerated(ec2: Ec2, policy: IdlePolicy) -> list[Instance]:
    """The region's running accelerated machines (server-side filters, then the check decisions rely on)."""
    return [i for i in ec2.iter_instances(candidate_filters(policy)) if policy.is_accelerated(i.instance_type)]


def candidate_filters(policy: IdlePolicy) -> list[Any]:
    return [
        {"Name": "instance-state-name", "Values": ["running"]},
        {"Name": "instance-type", "Values": list(policy.accelerator_families)},
    ]


class Wiring(Protocol):
    """What a handler's runtime gives the stopper: settings, clients, the state table's stores, Slack."""

    @property
    def settings(self) -> Settings: ...
    @property
    def ledger(self) -> Ledger: ...
    @property
    def claims(self) -> Claims: ...
    @property
    def prices(self) -> PriceBook: ...
    @property
    def notifier(self) -> SlackNotifier: ...
    def client(self, service: str, region: str | None = None, *, quick: bool = False) -> Any: ...
    def time_left(self) -> float: ...
    def sleep(self, seconds: float) -> None: ...
    def monotonic(self) -> float: ...


def idle_stopper(runtime: Wiring, policy: IdlePolicy, region: str) -> IdleStopper:
    """The stopper of one region, its adapters built on the runtime's clients."""
    settings = runtime.settings
    cloudwatch = runtime.client("cloudwatch", region)
    dynamodb = runtime.client("dynamodb")
    ec2 = Ec2(runtime.client("ec2", region), region, settings.mode)
    checker = ActivityChecker(
        ssm=Ssm(runtime.client("ssm", region)),
        ec2=ec2,
        document=policy.activity_check_document,
        wait_seconds=policy.activity_check_seconds,
        time_left=runtime.time_left,
        sleep=runtime.sleep,
        clock=runtime.monotonic,
    )
    aws = Aws(
        region=region,
        ec2=ec2,
        gpu_series=GpuSeriesFinder(cloudwatch),
        metrics=MetricReader(cloudwatch, policy),
        alarms=IdleAlarms(cloudwatch, policy),
        autoscaling=AutoScaling(runtime.client("autoscaling", region), settings.mode),
        prices=runtime.prices,
        checker=checker,
        bill=BillingReader(
            ec2=runtime.client("ec2", region),
            savingsplans=runtime.client("savingsplans", GLOBAL_ENDPOINT_REGION),
            ce=runtime.client("ce", GLOBAL_ENDPOINT_REGION),
            region=region,
        ),
        trail=CloudTrail(runtime.client("cloudtrail", region)),
    )
    state = State(
        ledger=runtime.ledger,
        claims=runtime.claims,
        outbox=Outbox(dynamodb, settings.state_table, region, runtime.ledger),
        checklog=CheckLog(dynamodb, settings.state_table),
        history=MachineHistory(dynamodb, settings.state_table),
        starts=StartLog(dynamodb, settings.state_table),
        capacity=CapacityLog(dynamodb, settings.state_table),
        worth=WorthLog(dynamodb, settings.state_table),
        spill=SpillLog(dynamodb, settings.state_table),
    )
    terms = Terms(settings=settings, policy=policy, time_left=runtime.time_left)
    return IdleStopper(aws=aws, state=state, notifier=lambda: runtime.notifier, terms=terms)


def run(
    what: Sweep | AlarmFired | StateChanged,
    stopper: Callable[[str], IdleStopper],
    regions: Sequence[str],
    now: datetime,
) -> tuple[dict[str, RegionReport], list[str]]:
    """One event carried out: every governed region swept, or one machine judged, or its change of state
    kept. The reports by region, and the regions that could not be swept at all."""
    if isinstance(what, AlarmFired):
        return {what.region: stopper(what.region).evaluate(what.instance_id, now)}, []
    if isinstance(what, StateChanged):
        return {what.region: stopper(what.region).on_state_change(what.instance_id, what.state, what.at or now)}, []
    return each_region(regions, lambda region: stopper(region).sweep(now), failed="sweep failed")
