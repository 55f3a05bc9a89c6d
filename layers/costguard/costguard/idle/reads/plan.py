"""Reading the fleet and its first verdicts (the pipeline's rule 1, rules/pipeline.py): what the sweep will do
to each machine, judged one GetMetricData answer at a time so that the sweep holds one answer's points, not
the fleet's; the warnings and stops then go through the rest of the pipeline (reads/facts.py reads for it).

Where the activity check runs, the answers kept for machines whose GPUs are quiet are read with each
answer's machines (BatchGetItem): CPU points they attribute to the system's services are not work, and
a machine idle for the shorter window of certain idleness is a candidate for an early warning, which
the sweep confirms with a fresh check. Machines with quiet GPUs and a quiet CPU are watched: asked for
their check every sweep, so that the answers exist before the next spike, or for the whole window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import GPU_MEMORY_METRIC, Dimensions, GpuSeriesFinder
from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.series import Utilization
from costguard.core.settings import IdlePolicy
from costguard.idle.report import RegionReport
from costguard.idle.rules.decision import Action, Decision, decide, early_warnings
from costguard.idle.rules.evidence import Answer, alive_in, excused, excuses
from costguard.idle.rules.judgement import (
    Excused,
    Judgement,
    Verdict,
    judge,
    quiet_cpu,
    quiet_gpus,
    system_bursts,
)
from costguard.idle.rules.pipeline import verdict
from costguard.state.checklog import CheckLog

HISTORY = timedelta(hours=2)  # read this much before the window, to say how long a machine has been idle
# Decisions whose machines are asked for their check for the evidence alone (warnings and stops are anyway).
WATCHED = (Action.NONE, Action.WAIT)
MAX_LOOKBACK = timedelta(hours=24)
ANSWERED_LATELY = timedelta(minutes=20)  # a sweep's answer, and the minutes a sweep may start late


@dataclass(frozen=True)
class Planned:
    instance: Instance
    decision: Decision
    gpu_telemetry: bool
    watch: bool = False  # asked for its activity check this sweep whatever the decision, for the evidence
    answers: tuple[Answer, ...] = ()  # its activity check's answers kept from earlier sweeps


@dataclass
class SweepPlan:
    gpu_series: Mapping[str, Sequence[Dimensions]]
    decisions: Iterator[Planned]
    memory_series: Mapping[str, Sequence[Dimensions]] = field(default_factory=dict)  # GPU memory used, where published


def live_warning(instance: Instance) -> datetime | None:
    """When this run of the instance was warned with a stop time; None for none, or one from before a restart."""
    warned_at = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    if warned_at is None or warned_at < instance.launch_time or tags.STOP_AFTER not in instance.tags:
        return None
    return warned_at


def unattributed(bursts: frozenset[datetime], answers: Sequence[Answer], policy: IdlePolicy) -> frozenset[datetime]:
    """The system bursts' points no kept answer can speak for: those whose period ended before the first answer
    (all of them where none was kept). After it, the check's own counts say whose the CPU was (`excused`); before
    it, a short burst on a machine at rest is the system's timers', in this sweep as in the one before its first
    answer (a burst excused there and not here withdrew the warning it let be given, to give it again later)."""
    first = min((a.at for a in answers), default=None)
    if first is None:
        return bursts
    period = timedelta(seconds=policy.period_seconds)
    return frozenset(t for t in bursts if t + period <= first)


def answered(answers: Sequence[Answer], now: datetime, policy: IdlePolicy) -> datetime | None:
    """When the machine's check last answered, if in the last sweep or two and it saw nothing alive: no input in the
    idle window, no process busy on a core, no notebook kernel, no job's process holding GPU memory, nothing it could
    not look at, no keep-alive hook saying keep (None: not lately, never, or it saw something alive, which the CPU
    since is likely to be). The next answer is due the next sweep."""
    last = max(answers, key=lambda a: a.at, default=None)
    if last is None or last.at < now - ANSWERED_LATELY:
        return None
    window = timedelta(minutes=policy.window_minutes)
    seen = alive_in(last, since=last.at - window, busy_core_percent=policy.busiest_core_percent)
    return None if seen else last.at


def awaiting(system_made: Excused, last: datetime, policy: IdlePolicy) -> Excused:
    """`system_made`, and the CPU points no answer can speak for yet: their period ends after the last answer."""
    period = timedelta(seconds=policy.period_seconds)
    return lambda t: system_made(t) or t + period > last


class SweepPlanner:
    def __init__(
        self,
        *,
        ec2: Ec2,
        gpu_series: GpuSeriesFinder,
        metrics: MetricReader,
        autoscaling: AutoScaling,
        policy: IdlePolicy,
        checklog: CheckLog | None = None,
    ) -> None:
        self.ec2 = ec2
        self.gpu_series = gpu_series
        self.metrics = metrics
        self.autoscaling = autoscaling
        self.policy = policy
        self.checklog = checklog  # None: no activity check, so no evidence either

    def plan(self, candidates: Sequence[Instance], now: datetime, *, one_instance: bool) -> SweepPlan:
        spot_types = self.ec2.spot_request_types(
            [i.spot_request_id for i in candidates if i.lifecycle == "spot" and i.spot_request_id]
        )
        protected = self.autoscaling.protection(i.auto_scaling_group for i in candidates if i.auto_scaling_group)
        warned = [t for i in candidates if (t := live_warning(i))]
        start = now - timedelta(minutes=self.policy.window_minutes) - HISTORY
        if warned:
            start = max(min([start, *warned]), now - MAX_LOOKBACK)
        gpu = self.gpu_series.discover(candidates, one_instance=one_instance)
        # Memory held is read where the agent publishes it: one more ListMetrics walk, no query where it does not.
        memory = self.gpu_series.discover(candidates, one_instance=one_instance, name=GPU_MEMORY_METRIC)
        decisions = self._decide(candidates, gpu, start, now, spot_types=spot_types, protected=protected, memory=memory)
        return SweepPlan(gpu, decisions, memory)

    def _decide(
        self,
        candidates: Sequence[Instance],
        gpu: Mapping[str, Sequence[Dimensions]],
        start: datetime,
        now: datetime,
        *,
        spot_types: Mapping[str, str],
        protected: Mapping[str, bool],
        memory: Mapping[str, Sequence[Dimensions]] | None = None,
    ) -> Iterator[Planned]:
        policy = self.policy
        for run, fleet in self.metrics.chunks(candidates, gpu, start, now, memory):
            # GPUs quiet for the shorter window (or the last quarter hour): worth the evidence.
            recent = now - timedelta(minutes=policy.certain_idle_minutes or 15)
            quiet = [i.instance_id for i in run if quiet_gpus(fleet.get(i.instance_id), policy, recent)]
            logs = self.checklog.read(quiet) if self.checklog is not None and quiet else {}
            for instance in run:
                utilization = fleet.get(instance.instance_id)
                answers = tuple(a for raw in logs.get(instance.instance_id, []) if (a := Answer.from_json(raw)))
                stretches = excused(answers, policy.busiest_core_percent)
                warned_at = live_warning(instance)
                bursts = unattributed(system_bursts(utilization, policy, before=warned_at), answers, policy)

                def system_made(
                    t: datetime,
                    s: tuple[tuple[datetime, datetime], ...] = stretches,
                    b: frozenset[datetime] = bursts,
                    period: int = policy.period_seconds,
                ) -> bool:
                    return t in b or excuses(s, t, period)

                # Judged since the warning, as far back as the data read goes (the decision checks it).
                since = max(warned_at, start) if warned_at else None
                judgement = judge(utilization, policy, now, since=since, excused=system_made)
                shorter = unanswered = None
                evidence = self.checklog is not None and instance.instance_id in quiet
                if evidence and judgement.verdict is not Verdict.IDLE and early_warnings(instance, policy):
                    shorter = self._shorter_window(utilization, now, warned_at, system_made)
                if (
                    evidence
                    and warned_at
                    and judgement.verdict is Verdict.BUSY
                    and (last := answered(answers, now, policy))
                ):
                    pending = awaiting(system_made, last, policy)
                    unanswered = judge(utilization, policy, now, since=since, excused=pending)
                decision = verdict(
                    decide(
                        instance,
                        judgement,
                        policy,
                        now,
                        spot_request_type=spot_types.get(instance.spot_request_id, ""),
                        protected_from_scale_in=protected.get(instance.instance_id),
                        gpu_telemetry=utilization.gpu_telemetry,
                        shorter=shorter,
                        gpus_from_check=evidence,
                        unanswered=unanswered,
                    )
                )
                waiting = decision.action is Action.WAIT and unanswered is not None  # its next answer is wanted
                watch = evidence and decision.action in WATCHED and (waiting or quiet_cpu(utilization, policy))
                yield Planned(instance, decision, utilization.gpu_telemetry, watch, answers)

    def _shorter_window(
        self, utilization: Utilization, now: datetime, warned_at: datetime | None, system_made: Excused
    ) -> Judgement:
        """The judgement over the shorter window (from that long before the warning, for a warned machine)."""
        minutes = self.policy.certain_idle_minutes
        since = warned_at - timedelta(minutes=minutes) if warned_at else None
        return judge(utilization, self.policy, now, since=since, excused=system_made, window_minutes=minutes)


@dataclass
class Sorted:
    watched: list[Instance] = field(default_factory=list)  # asked for their check, for the answers alone
    answers: dict[str, tuple[Answer, ...]] = field(default_factory=dict)  # kept from earlier sweeps


def sort_out(
    plan: SweepPlan,
    report: RegionReport,
    act: Callable[[Instance, Decision], None],
    to_check: list[tuple[Instance, Decision]],
    protection_changes: dict[tuple[str, bool], list[Instance]],
) -> Sorted:
    """Each planned decision to where it goes: acted on now; warnings and stops to the activity check,
    asked all at once after the last judgement; scale-in protection, grouped. Watched machines are
    asked too, for the answers alone."""
    out = Sorted()
    for planned in plan.decisions:
        instance, decision = planned.instance, planned.decision
        if not planned.gpu_telemetry:
            report.no_gpu_telemetry.append(instance.instance_id)
        if planned.answers:
            out.answers[instance.instance_id] = planned.answers
        if decision.action in (Action.PROTECT, Action.UNPROTECT):
            protect = decision.action is Action.PROTECT
            protection_changes[(instance.auto_scaling_group, protect)].append(instance)
        elif decision.action in (Action.WARN, Action.STOP):
            to_check.append((instance, decision))
        else:
            if planned.watch:
                out.watched.append(instance)
            act(instance, decision)
    return out
