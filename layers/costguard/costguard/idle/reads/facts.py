"""The facts the idle stopper's rules ask for (`rules/pipeline.Facts`), read for one sweep of one region, each
when first asked and only for the machines asked about: the machines' own checks, their last two weeks, the
region's scarce capacity and its bill. Nothing is written here: what the sweep keeps of these facts (the
checks' answers, the learned starts judged) is kept by acts/kept.py from `checked` and `judged`."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from costguard.aws.cloudwatch.series import Dimensions
from costguard.core.people import owner_email
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import Settings
from costguard.idle.reads.bill import SweepBill
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.fortnights import Learner
from costguard.idle.report import RegionReport
from costguard.idle.rules.activity import ActivityCheck, CheckState
from costguard.idle.rules.evidence import Answer
from costguard.idle.rules.pipeline import Decided, Past
from costguard.idle.rules.recurring import Learned
from costguard.slack.notifier import SlackNotifier
from costguard.state.scarcity import Capacity


@dataclass(frozen=True)
class OwnerZones:
    """A machine's owner's own time zone, as they set it in Slack (users.info `tz`); "" where Slack does not know
    them or say it (the team's is read then). The clock of the nights of a machine that cannot answer its check."""

    notifier: Callable[[], SlackNotifier]
    settings: Settings
    seen: dict[str, str] = field(default_factory=dict)  # by owner, this sweep: Slack asked once, even in an outage

    def __call__(self, instance: Instance) -> str:
        owner = instance.owner(self.settings.owner_tag_key)
        email = owner_email(owner, self.settings.email_domain) if owner else None
        if not email:
            return ""
        if email not in self.seen:
            user = self.notifier().user_id_for(email)
            self.seen[email] = self.notifier().zone_of(user) if user else ""
        return self.seen[email]


@dataclass(kw_only=True, eq=False)
class SweepFacts:
    checker: ActivityChecker | None  # None: no activity check (dry-run, or off): every machine NOT_ASKED
    learner: Learner | None  # None: learned starts are off
    capacity: Capacity
    bill: SweepBill
    gpu_series: Mapping[str, Sequence[Dimensions]]
    earlier: Mapping[str, Sequence[Answer]]  # the answers kept from earlier sweeps, by machine
    report: RegionReport
    watched: frozenset[str] = frozenset()  # asked for their check for the evidence alone
    owner_zone: Callable[[Instance], str] | None = None  # an owner's own zone ("" unknown; None: never asked)
    # its GPUs' memory series where the agent publishes them: the nights of a machine that cannot answer read with it
    memory_series: Mapping[str, Sequence[Dimensions]] = field(default_factory=dict)
    checked: dict[str, ActivityCheck] = field(init=False, default_factory=dict)  # this sweep's answers
    judged: list[tuple[Instance, Learned]] = field(init=False, default_factory=list)  # learned starts judged

    def checks(self, asked: Sequence[Instance], now: datetime) -> Mapping[str, ActivityCheck]:
        checked = self.checker.check(asked, now) if self.checker is not None and asked else {}
        self.checked |= checked
        no_agent = {iid for iid, c in checked.items() if c.state is CheckState.NO_AGENT}
        self.report.no_activity_check += [
            i.instance_id for i in asked if i.instance_id in no_agent and i.instance_id not in self.watched
        ]
        return checked

    def answers(self, instance_id: str) -> Sequence[Answer]:
        return self.earlier.get(instance_id, ())

    def past(
        self,
        decided: Sequence[Decided],
        now: datetime,
        *,
        blind: Collection[str] = (),
        clocks: Mapping[str, str] | None = None,
    ) -> Mapping[str, Past]:
        if self.learner is None:
            return {}
        zones = {}  # the nights of a machine that cannot answer are read on its owner's clock, where Slack says it
        if self.owner_zone is not None and blind:
            zones = {i.instance_id: z for i, _ in decided if i.instance_id in blind and (z := self.owner_zone(i))}
        memory = self.memory_series
        found = self.learner.past(
            decided, self.gpu_series, now, blind=blind, clocks=clocks, zones=zones, memory_series=memory
        )
        self.judged += [
            (i, learned)
            for i, _ in decided
            if (p := found.get(i.instance_id)) is not None
            and (learned := p.learned) is not None
            and (learned.outcomes or learned.broken)
        ]
        return found

    def zone_of(self, instance: Instance) -> str:
        return self.owner_zone(instance) if self.owner_zone is not None else ""

    def scarcity(self, instance: Instance) -> Scarcity | None:
        return self.capacity.scarcity(instance)

    @property
    def scarcity_unread(self) -> bool:
        return self.capacity.unread

    def priced(self, decided: Sequence[Decided]) -> list[Decided]:
        return self.bill.priced(decided)
