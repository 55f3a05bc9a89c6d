"""The hub gathers the organization's week: every hand-off on its figures queue is read, checked and
kept (the newest per account), then the latest week of each expected account is read back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.queues import BATCH, Letter, Mailbox
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics
from costguard.digest.handoff import AccountWeek, decode
from costguard.digest.organization.rules import OrganizationWeek
from costguard.state.handoffs import HandedWeeks

# Reading stops with this much of the run left: the digest is posted with what was gathered.
RESERVE_SECONDS = 120.0


def gather(
    mailbox: Mailbox,
    kept: HandedWeeks,
    expected: Sequence[str],
    *,
    now: datetime,
    time_left: Callable[[], float] = lambda: float("inf"),
) -> OrganizationWeek:
    refused = 0
    read: list[Letter] = []  # kept, to delete: 10 a call, each after what it says is kept
    for letter in mailbox.letters(time_left=time_left, reserve=RESERVE_SECONDS):
        try:
            week = decode(letter.body)
            if week.account not in expected:
                raise EventValidationError(f"a hand-off from account {week.account}, which this hub does not expect")
        except EventValidationError as exc:
            # Left on the queue: SQS moves it to the dead-letter queue after its third receive.
            logger.warning("hand-off refused", reason=str(exc)[:300], receives=letter.receives)
            metrics.add_metric(name="HandoffsRefused", unit=MetricUnit.Count, value=1)
            refused += 1
            continue
        if not kept.keep(week.account, week.end, letter.body):
            logger.info("older hand-off dropped", account=week.account, end=week.end.isoformat())
        read.append(letter)
        if len(read) == BATCH:
            _delete(mailbox, read)
            read = []
    _delete(mailbox, read)
    reported: dict[str, AccountWeek] = {}
    for account, body in kept.latest(list(expected)).items():
        try:
            reported[account] = decode(body)
        except EventValidationError as exc:  # kept by an older costguard, or changed by hand
            logger.warning("kept hand-off unreadable", account=account, reason=str(exc)[:300])
    return OrganizationWeek(now=now, expected=list(expected), reported=reported, refused=refused)


def _delete(mailbox: Mailbox, letters: list[Letter]) -> None:
    if not letters:
        return
    for letter in mailbox.delete_all(letters):  # read again later, and kept again: a week is kept once
        logger.warning("kept hand-off not deleted", receives=letter.receives)
