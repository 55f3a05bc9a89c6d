"""The weekly digest's run, its steps in order: collect the week (collection.py), add the other features'
parts (SageMaker's, built by the handler: a feature does not import another), keep the week and hand it
to the hub (with the owners' weeks, which the hub tells each person once), send the channel's post, its
thread and, without a hub, each owner's message (sending.py); a summary for the handler to return."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.queues import Mailbox
from costguard.core.observability import logger, metrics
from costguard.digest.posting import DigestIncomplete
from costguard.digest.weekly.collection import DigestCollector
from costguard.digest.weekly.savings import WEEK
from costguard.digest.weekly.sending import Owners, record_week, send_digest
from costguard.slack.blocks import Block
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims
from costguard.state.entries import Entry
from costguard.state.weeks import WeekRecords

# Another feature's part of the digest: (the week's ledger entries, its start, now) -> its blocks.
Section = Callable[[Sequence[Entry], datetime, datetime], list[Block]]


@dataclass(frozen=True)
class Account:
    """Who this digest is about, as the week kept and handed over names it."""

    account: str
    label: str
    regions: tuple[str, ...]


@dataclass(frozen=True)
class Recipients:
    """Where the digest goes: the channel, each owner with something to act on (every owner, or none, as the
    deployment says), and the alerts channel, for the permissions a read was refused."""

    channel: str
    email_domain: str
    owner_digests: bool
    owner_digests_always: bool = False
    alerts_channel: str = ""

    @property
    def owners(self) -> Owners:
        return Owners(self.owner_digests, self.owner_digests_always, self.email_domain)


@dataclass
class WeeklyDigest:
    collector: DigestCollector
    records: WeekRecords
    mailbox: Mailbox | None  # the hub's figures queue; None when no hub collects this account's week
    notifier: SlackNotifier
    claims: Claims
    account: Account
    recipients: Recipients
    sections: Sequence[Section] = ()
    time_left: Callable[[], float] = lambda: float("inf")

    def run(self, now: datetime) -> dict[str, Any]:
        data = self.collector.collect(now, last_ended=self._last_ended(now))
        data.sections = [block for section in self.sections for block in section(data.entries, data.start, now)]
        kept = record_week(
            data,
            self.records,
            self.mailbox,
            account=self.account.account,
            label=self.account.label,
            regions=self.account.regions,
            owners=self.recipients.owners,
        )
        report = send_digest(
            data,
            notifier=self.notifier,
            claims=self.claims,
            channel=self.recipients.channel,
            owners=self.recipients.owners,
            alerts_channel=self.recipients.alerts_channel,
            hub=self.mailbox is not None,  # the hub tells each person once, with every account's part
            now=now,
            time_left=self.time_left,
        )
        if report.posted:
            self._posted(data.start, data.end)
        if kept.unsent:
            raise DigestIncomplete(f"{kept.unsent}")  # the digest went out; the retry keeps and hands it over again
        fleet = data.this_week.fleet
        metrics.add_metric(name="DigestIdleGpuHours", unit=MetricUnit.Count, value=fleet.idle_gpu_hours)
        return {
            "status": "posted" if report.posted else "already-posted",
            "instances": fleet.instances,
            "idle_gpu_hours": fleet.idle_gpu_hours,
            "waste_usd": round(fleet.waste_usd, 2),
            "chart_file": report.chart_file,
            "owners_told": report.owners_told,
            "owners_quiet": report.owners_quiet,
            "owners_unreachable": report.owners_unreachable,
            "owners_handed": kept.owners_handed,  # to the hub, which tells each person once
            "owner_parts": kept.owner_parts,
            "replies": report.replies,
            "dashboards": data.dashboards,
            "handed_over": self.mailbox is not None,
            "errors": data.errors,
        }

    def _last_ended(self, now: datetime) -> datetime | None:
        """Where the digest before this one ended, from the week it kept (None when it cannot be read: the
        saving then counts the seven days to now, and the log says so)."""
        try:
            return self.records.ended_before(self.account.account, now - WEEK)
        except (ClientError, BotoCoreError, ValueError) as exc:  # refused, timed out, or an end not a time
            logger.warning("the digest before not read: the saving counts the seven days to now", error=str(exc))
            return None

    def _posted(self, start: datetime, end: datetime) -> None:
        """Where the posted digest counted to, for the next one (not written: the next counts seven days, logged)."""
        try:
            self.records.posted(self.account.account, start, end)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("where this digest ended not kept: the next counts the seven days to it", error=str(exc))
