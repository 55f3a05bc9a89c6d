"""The organization's digest at the hub, its steps in order: gather the organization's week (every
hand-off on its figures queue is read, checked and kept, the newest per account, then the latest week of
each expected account is read back), then post it with its chart, once; a summary for the handler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.queues import BATCH, Letter, Mailbox
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics
from costguard.digest.chart import week_chart
from costguard.digest.handoff import AccountWeek, decode
from costguard.digest.organization.rules import OrganizationWeek, chart_days, organization_message
from costguard.digest.posting import DigestIncomplete, chart, post_with_files
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims
from costguard.state.handoffs import HandedWeeks

# Reading stops with this much of the run left: the digest is posted with what was gathered.
RESERVE_SECONDS = 120.0
TITLE = "GPU-hours a day across the organization, used and idle"


def organization_digest(
    mailbox: Mailbox,
    kept: HandedWeeks,
    expected: Sequence[str],
    *,
    notifier: SlackNotifier,
    claims: Claims,
    channel: str,
    now: datetime,
    time_left: Callable[[], float] = lambda: float("inf"),
) -> dict[str, Any]:
    """The week gathered and posted, once a week; what it said, for the handler to return."""
    org = gather(mailbox, kept, expected, now=now, time_left=time_left)
    week = f"{now:%G-W%V}"
    posted = post_with_files(
        notifier,
        claims,
        key=f"organization-digest:{week}",
        channel=channel,
        message=lambda: organization_message(org),
        attachments=[chart(lambda: week_chart(chart_days(org), TITLE), f"gpu-week-organization-{week}.png")],
        now=now,
    )
    metrics.add_metric(name="OrganizationAccountsMissing", unit=MetricUnit.Count, value=len(org.missing))
    if posted.missing:
        raise DigestIncomplete(f"the organization digest's {posted.missing}")
    return {
        "status": "posted" if posted.posted else "already-posted",
        "accounts": [w.account for w in org.fresh],
        "missing": [account for account, _ in org.missing],
        "refused": org.refused,
        "idle_gpu_hours": round(sum(w.idle_gpu_hours for w in org.fresh), 3),
        "waste_usd": round(sum(w.waste_usd for w in org.fresh), 2),
        "chart_file": (posted.files or [""])[0],
    }


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
