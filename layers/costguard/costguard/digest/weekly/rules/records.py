"""The weekly digest's records: what the week's collection found, and what the sending did. Pure records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from costguard.core.records import Instance
from costguard.digest.commitments import CommitmentUse
from costguard.digest.gaps import Gap
from costguard.digest.owners import RefusedStart
from costguard.digest.weekly.rules.advice import Advice
from costguard.digest.weekly.rules.bill import PaidIdle
from costguard.digest.weekly.rules.exempt import ExemptIdle
from costguard.digest.weekly.rules.figures import InstanceWeek, Week
from costguard.digest.weekly.rules.keeps import OutlivedKeep
from costguard.setup.reach import Unanswered
from costguard.slack.blocks import Block
from costguard.state.entries import Entry, EntryKind


@dataclass
class DigestData:
    start: datetime
    end: datetime
    instances: list[InstanceWeek]
    raw: dict[str, Instance]
    this_week: Week
    last_week: Week
    entries: list[Entry]
    saved_hours: float
    saved_usd: float
    commitments: CommitmentUse
    spend_this_week: float | None
    spend_last_week: float | None
    dashboards: dict[str, str]  # team -> console URL
    errors: list[str]
    owner_tag_key: str
    outlived_keeps: list[OutlivedKeep] = field(default_factory=list)
    no_activity_check: list[str] = field(default_factory=list)  # running, but no SSM agent answers for them
    advice: list[Advice] = field(default_factory=list)  # right-sizing and Spot, the largest savings first
    sections: list[Block] = field(default_factory=list)  # other features' parts of the digest (SageMaker's)
    saved_list_usd: float = 0.0  # the stops' hours at the on-demand price, beside saved_usd (on the bill)
    saved_unknown: int = 0  # stops whose machine ran again at a time nothing recorded: not in saved_hours
    basis: str = ""  # the one line that names the price basis (rules/bill.py)
    paid_idle: list[PaidIdle] = field(default_factory=list)  # idle hours already paid, by what pays them
    failed_starts: list[RefusedStart] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)  # the reads that failed (errors, as the digest says them)
    bill_gaps: list[Gap] = field(default_factory=list)  # the bill's reads that failed (the basis line says them)
    exempt_idle: list[ExemptIdle] = field(default_factory=list)  # exempt machines that idled, the costliest first
    unanswered: list[Unanswered] = field(default_factory=list)  # running, the check cannot reach them: why, the fix

    @property
    def no_owner(self) -> list[Instance]:
        return [i for i in self.raw.values() if not i.owner(self.owner_tag_key)]

    def count(self, *kinds: EntryKind) -> int:
        return sum(1 for e in self.entries if e.kind in kinds and e.applied)

    def warnings_to(self, owner: str) -> int:
        """The idle warnings this owner received this week (one a machine, however many messages)."""
        return sum(1 for e in self.entries if e.kind is EntryKind.WARN and e.applied and e.owner == owner)


@dataclass
class DigestReport:
    posted: bool
    chart_file: str = ""
    owners_told: list[str] = field(default_factory=list)
    owners_unreachable: list[str] = field(default_factory=list)
    owners_quiet: list[str] = field(default_factory=list)  # nothing to act on: no message
    replies: int = 0  # the replies in the post's thread posted in this run
