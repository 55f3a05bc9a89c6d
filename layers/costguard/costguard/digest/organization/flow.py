"""The organization's digest at the hub, its steps in order: gather the organization's week (every
hand-off on its figures queue is read, checked and kept, the newest per account and the newest of each part
of its owners' weeks, then the latest week of each expected account is read back with its owners' parts),
post it with its chart, once, then tell each person their week once, every account's part in one
message; a summary for the handler."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.queues import BATCH, Letter, Mailbox
from costguard.core.errors import EventValidationError
from costguard.core.observability import ignored, logger, metrics
from costguard.digest.chart import week_chart
from costguard.digest.handoff import OWNERS_KIND, AccountWeek, OwnersPart, decode, decode_owners, kind_of
from costguard.digest.organization.rules import OrganizationWeek, chart_days, chart_source, organization_message
from costguard.digest.organization.stacksets import failure_message, read_instance_failure
from costguard.digest.organization.units import Accounts, remember
from costguard.digest.owners import OwnerWeek
from costguard.digest.posting import DigestIncomplete, chart, post_with_files, tell_owners
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, post_once
from costguard.state.handoffs import HandedWeeks

# Reading stops with this much of the run left: the digest is posted with what was gathered.
RESERVE_SECONDS = 120.0
TITLE = "GPU-hours a day across the organization, used and idle, and the idle hours' cost"


@dataclass
class People:
    """Who the hub tells of their week, and what became of it."""

    weeks: list[OwnerWeek] = field(default_factory=list)  # every fresh account's owners' weeks, as handed over
    incomplete: list[str] = field(default_factory=list)  # accounts whose owners' parts did not all arrive


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
    any_account: bool = False,
    units: Accounts | None = None,
) -> dict[str, Any]:
    """The week gathered and posted, once a week, and each person told once; what it said, for the handler.
    `any_account`: an organization's hub, whose figures queue only its organization may send to, takes the week
    of an account it was not told of (one created since), after the expected ones. `units`: what the hub read of
    the chosen units (why an account may have no figures, which accounts have gone); the accounts covered are then
    kept for the next digest to tell which have gone."""
    org = gather(mailbox, kept, expected, now=now, time_left=time_left, any_account=any_account)
    if units is not None:
        org.why, org.left, org.moved = units.why, units.left, units.moved
    week = f"{now:%G-W%V}"
    posted = post_with_files(
        notifier,
        claims,
        key=f"organization-digest:{week}",
        channel=channel,
        message=lambda: organization_message(org),
        attachments=[
            chart(
                lambda: week_chart(chart_days(org), TITLE, source=chart_source(org)),
                f"gpu-week-organization-{week}.png",
            )
        ],
        now=now,
    )
    metrics.add_metric(name="OrganizationAccountsMissing", unit=MetricUnit.Count, value=len(org.missing))
    if units is not None:
        remember(kept, org.expected, now)
    people = owners_of(org, kept)
    told = tell_owners(
        notifier,
        claims,
        people.weeks,
        key=f"organization-digest:{week}:owner",
        basis={w.account: w.basis for w in org.fresh},
        now=now,
        time_left=time_left,
    )
    missing = posted.missing + told.missing
    if missing:
        raise DigestIncomplete(f"the organization digest's {missing[:3]}")
    return {
        "status": "posted" if posted.posted else "already-posted",
        "accounts": [w.account for w in org.fresh],
        "missing": [account for account, _ in org.missing],
        "why": {account: org.why[account] for account, _ in org.missing if account in org.why},
        "left": list(org.left),
        "moved": list(org.moved),
        "refused": org.refused,
        "idle_gpu_hours": round(sum(w.idle_gpu_hours for w in org.fresh), 3),
        "waste_usd": round(sum(w.waste_usd for w in org.fresh), 2),
        "chart_file": (posted.files or [""])[0],
        "owners_told": sorted(told.told),
        "owners_unreachable": sorted(told.unreachable),
        "owners_incomplete": people.incomplete,
    }


def owners_of(org: OrganizationWeek, kept: HandedWeeks) -> People:
    """The owners' weeks each fresh account handed over with its week (its `owner_parts`), read back; an
    account whose parts did not all arrive (a member's retry sends them again) is told from those that did."""
    people = People()
    wanted = {w.account: w for w in org.fresh if w.owner_parts}
    keys = [owners_key(a, k) for a, w in wanted.items() for k in range(w.owner_parts or 0)]
    found: dict[str, list[OwnersPart]] = {}
    for key, body in kept.latest(keys).items() if keys else ():
        try:
            part = decode_owners(body)
        except EventValidationError as exc:  # kept by an older costguard, or changed by hand
            logger.warning("kept owners' part unreadable", key=key, reason=str(exc)[:300])
            continue
        if part.start == wanted[part.account].start:  # this week's, not an earlier week's part k
            found.setdefault(part.account, []).append(part)
    for account, week in wanted.items():
        parts = sorted(found.get(account, []), key=lambda p: p.part)
        if len(parts) != week.owner_parts:
            logger.warning("owners' parts missing", account=account, found=len(parts), expected=week.owner_parts)
            people.incomplete.append(account)
        people.weeks += [o for p in parts for o in p.owners]
    return people


def owners_key(account: str, part: int) -> str:
    """Where the hub keeps part k of an account's owners' weeks (beside the account's week)."""
    return f"{account}#owners#{part}"


def gather(
    mailbox: Mailbox,
    kept: HandedWeeks,
    expected: Sequence[str],
    *,
    now: datetime,
    time_left: Callable[[], float] = lambda: float("inf"),
    any_account: bool = False,
) -> OrganizationWeek:
    refused = 0
    accounts = list(expected)
    read: list[Letter] = []  # kept, to delete: 10 a call, each after what it says is kept
    for letter in mailbox.letters(time_left=time_left, reserve=RESERVE_SECONDS):
        try:
            week: AccountWeek | OwnersPart = (
                decode_owners(letter.body) if kind_of(letter.body) == OWNERS_KIND else decode(letter.body)
            )
            if week.account not in accounts and not any_account:
                raise EventValidationError(f"a hand-off from account {week.account}, which this hub does not expect")
            if week.account not in accounts:
                accounts.append(week.account)
        except EventValidationError as exc:
            # Left on the queue: SQS moves it to the dead-letter queue after its third receive.
            logger.warning("hand-off refused", reason=str(exc)[:300], receives=letter.receives)
            metrics.add_metric(name="HandoffsRefused", unit=MetricUnit.Count, value=1)
            refused += 1
            continue
        where = owners_key(week.account, week.part) if isinstance(week, OwnersPart) else week.account
        if not kept.keep(where, week.end, letter.body):
            logger.info("older hand-off dropped", account=week.account, end=week.end.isoformat())
        read.append(letter)
        if len(read) == BATCH:
            _delete(mailbox, read)
            read = []
    _delete(mailbox, read)
    reported: dict[str, AccountWeek] = {}
    for account, body in kept.latest(accounts).items():
        try:
            reported[account] = decode(body)
        except EventValidationError as exc:  # kept by an older costguard, or changed by hand
            logger.warning("kept hand-off unreadable", account=account, reason=str(exc)[:300])
    return OrganizationWeek(now=now, expected=accounts, reported=reported, refused=refused)


def _delete(mailbox: Mailbox, letters: list[Letter]) -> None:
    if not letters:
        return
    for letter in mailbox.delete_all(letters):  # read again later, and kept again: a week is kept once
        logger.warning("kept hand-off not deleted", receives=letter.receives)


# EventBridge may deliver an event twice; each is told once. A week covers any redelivery.
FAILURE_TTL = timedelta(days=7)


def tell_stackset_failure(
    event: Any, *, notifier: SlackNotifier, claims: Claims, channel: str, now: datetime, admin_region: str
) -> dict[str, Any]:
    """The alerts channel told, once per event, that the members' StackSet failed in an account and region."""
    failure = read_instance_failure(event)
    if failure is None:
        return ignored("a StackSet instance status that is not a failure")
    logger.warning(
        "stackset failed in an account",
        stack_set=failure.stack_set,
        account=failure.account,
        region=failure.region,
        status=failure.status,
        action=failure.action,
    )
    metrics.add_metric(name="StackSetInstanceFailures", unit=MetricUnit.Count, value=1)
    posted = post_once(
        claims,
        notifier,
        channel,
        key=f"stackset-failure#{failure.event_id}",
        message=failure_message(failure, admin_region),
        now=now,
        ttl=FAILURE_TTL,
    )
    return {
        "stackset_failure": {
            "account": failure.account,
            "region": failure.region,
            "status": failure.status,
            "told": posted is not None,
        }
    }
