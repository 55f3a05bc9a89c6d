"""A morning or learned start EC2 refused for want of capacity: evidence that the type is scarce in its
zone from now on, a `start-failed` ledger entry for the digest (one per start it was for, the latest
refusal its reason), and the owner told at once, once per start, what costguard will do. Other refusals
are only logged, as before. Neither a failed write nor Slack keeps the start from being tried again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.core import formatting
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger, metrics
from costguard.core.records import Instance
from costguard.core.scarcity import CAPACITY_ERRORS
from costguard.core.settings import Settings
from costguard.idle.report import machine_entry
from costguard.idle.words.capacity import start_failed_notice
from costguard.slack.blocks import Message, Mrkdwn, person
from costguard.state.claims import Claims, ClaimState
from costguard.state.entries import EntryKind
from costguard.state.ledger import Ledger, LedgerWriteError, StateTableBusy
from costguard.state.scarcity import Capacity

TOLD_FOR = timedelta(days=2)
# EC2's passing refusals: the start is tried again at the next sweep, as after one for capacity.
PASSING = frozenset({"RequestLimitExceeded", "InternalError", "ServiceUnavailable", "Unavailable"})
RETRY_EVIDENCE = timedelta(hours=2)  # a refusal this long before the start's due time was for it
WRITE_ERRORS = (ClientError, BotoCoreError, StateTableBusy, LedgerWriteError)


class RefusedStarts:
    def __init__(
        self,
        *,
        ledger: Ledger,
        claims: Claims,
        tell: Callable[[str, Message], None],
        settings: Settings,
        who: Callable[[str], Mrkdwn] = person,
        zone: str = "UTC",
    ) -> None:
        self.ledger, self.claims, self.tell = ledger, claims, tell
        self.mode, self.owner_tag_key = settings.mode, settings.owner_tag_key
        self.who, self.zone = who, zone  # an owner as a message names them; the team's clock, for fallbacks

    def refused(  # noqa: PLR0917 (a refusal is all of these)
        self, instance: Instance, due: datetime, until: datetime, now: datetime, exc: Exception, capacity: Capacity
    ) -> None:
        """`due`: the time the start was for; `until`: when costguard stops trying. A refusal for capacity
        (or a passing one: throttled, EC2's own error) is recorded and the start tried again; only one for
        capacity is evidence of scarcity, and told."""
        code = error_code(exc)
        if code not in CAPACITY_ERRORS and code not in PASSING:
            return
        scarce = code in CAPACITY_ERRORS
        if scarce:
            capacity.refused(instance, now)
            metrics.add_metric(name="StartsRefusedForCapacity", unit=MetricUnit.Count, value=1)
        why = f"{code.removeprefix('Server.')} in {instance.zone or instance.region}"
        entry = machine_entry(
            instance,
            EntryKind.START_FAILED,
            due,  # one entry per start it was for: each refusal writes it again
            mode=self.mode,
            owner_tag_key=self.owner_tag_key,
            reason=f"{why}, last at {now:%H:%M} UTC",
            applied=self.mode.mutates,
        )
        try:
            self.ledger.record(replace(entry, until=formatting.format_time(until)))
        except WRITE_ERRORS as exc_write:
            logger.warning("refused start not recorded", instance_id=instance.instance_id, error=str(exc_write)[:200])
        if scarce:
            self._tell(instance, due, why, until, now)

    def refused_before(self, instance: Instance, due: datetime, capacity: Capacity) -> bool:
        """Whether costguard's start for `due` was refused (so a start now is its retry): in this sweep's
        evidence, or in the ledger's record of it. A ledger that would not answer says no."""
        own = capacity.failed_at(instance.instance_id)
        if own is not None and own >= due - RETRY_EVIDENCE:
            return True
        try:
            return self.ledger.has(EntryKind.START_FAILED, instance.instance_id, due)
        except WRITE_ERRORS as exc:
            logger.warning("refused start unread", instance_id=instance.instance_id, error=str(exc)[:200])
            return False

    def _tell(self, instance: Instance, due: datetime, why: str, until: datetime, now: datetime) -> None:
        iid = instance.instance_id
        try:
            claim = self.claims.claim(f"start-failed:{iid}:{formatting.format_time(due)}", now, ttl=TOLD_FOR)
        except WRITE_ERRORS as exc:
            logger.warning("refused start not told: no claim", instance_id=iid, error=str(exc)[:200])
            return  # told by the next refusal's sweep
        if claim.state is not ClaimState.TAKEN:
            return
        owner = instance.owner(self.owner_tag_key)
        try:
            self.tell(owner, start_failed_notice(instance, due, why, until, self.who(owner), zone=self.zone))
        except SlackDeliveryError as exc:
            self.claims.release(claim)  # the next sweep's refusal tells it
            logger.warning("refused start not told", instance_id=iid, error=str(exc)[:200])
            metrics.add_metric(name="RefusedStartsUntold", unit=MetricUnit.Count, value=1)
            return
        self.claims.done(claim)
