"""The facts the idle stopper's rules ask for (`rules/pipeline.Facts`), read for one sweep of one region, each
when first asked and only for the machines asked about: the machines' own checks (their answers kept in the
check log), their last two weeks, the start log's promises, the region's scarce capacity and its bill."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.aws.cloudwatch.series import Dimensions
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.idle.reads.bill import SweepBill
from costguard.idle.reads.capacity import Capacity
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.fortnights import Learner
from costguard.idle.reads.plan import log_answers
from costguard.idle.report import RegionReport
from costguard.idle.rules.activity import ActivityCheck, CheckState
from costguard.idle.rules.decision import Decision
from costguard.idle.rules.evidence import Answer
from costguard.idle.rules.pipeline import Decided, Past
from costguard.state.checklog import CheckLog


@dataclass(kw_only=True, eq=False)
class SweepFacts:
    checker: ActivityChecker | None  # None: no activity check (dry-run, or off): every machine NOT_ASKED
    checklog: CheckLog | None  # where the check's answers are kept (None: not kept)
    learner: Learner | None  # None: learned starts are off
    capacity: Capacity
    bill: SweepBill
    gpu_series: Mapping[str, Sequence[Dimensions]]
    earlier: Mapping[str, Sequence[Answer]]  # the answers kept from earlier sweeps, by machine
    report: RegionReport
    watched: frozenset[str] = frozenset()  # asked for their check for the evidence alone

    def checks(self, asked: Sequence[Instance], now: datetime) -> Mapping[str, ActivityCheck]:
        checked = self.checker.check(asked, now) if self.checker is not None and asked else {}
        if self.checklog is not None:
            log_answers(self.checklog, checked, self.earlier, now)
        no_agent = {iid for iid, c in checked.items() if c.state is CheckState.NO_AGENT}
        self.report.no_activity_check += [
            i.instance_id for i in asked if i.instance_id in no_agent and i.instance_id not in self.watched
        ]
        return checked

    def answers(self, instance_id: str) -> Sequence[Answer]:
        return self.earlier.get(instance_id, ())

    def past(self, decided: Sequence[Decided], now: datetime) -> Mapping[str, Past]:
        return self.learner.past(decided, self.gpu_series, now) if self.learner is not None else {}

    def keep_promise(self, instance: Instance, decision: Decision, now: datetime, *, job: bool) -> bool:
        return self.learner is None or self.learner.keep_promise(instance, decision, now, job=job)

    def scarcity(self, instance: Instance) -> Scarcity | None:
        return self.capacity.scarcity(instance)

    @property
    def scarcity_unread(self) -> bool:
        return self.capacity.unread

    def priced(self, decided: Sequence[Decided]) -> list[Decided]:
        return self.bill.priced(decided)
