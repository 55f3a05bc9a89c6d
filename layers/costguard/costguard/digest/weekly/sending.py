"""Sending the weekly digest: once per week to the channel (the headline, its chart and its thread, through
digest/posting.py), to each person with something to act on (or to the hub, which tells each person once
across the organization's accounts), and to the alerts channel the reads AWS refused, with the permission
to grant; each part on its own, so that a retry sends only what did not go out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.queues import Mailbox
from costguard.core.errors import SlackDeliveryError
from costguard.core.formatting import plural
from costguard.core.observability import logger
from costguard.digest.chart import week_chart
from costguard.digest.gaps import permission_alert
from costguard.digest.handoff import encode, encode_owners
from costguard.digest.owners import OwnerWeek
from costguard.digest.posting import TTL, DigestIncomplete, chart, post_with_files, tell_owners
from costguard.digest.weekly.rules.messages import chart_days, chart_source, digest_message, digest_thread
from costguard.digest.weekly.rules.records import DigestData, DigestReport
from costguard.digest.weekly.rules.summary import account_week, owner_weeks
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import ClaimHeld, Claims, post_once
from costguard.state.weeks import WeekRecords


@dataclass(frozen=True)
class Owners:
    """Who hears of their own week: nobody (`tell` off), those with something to act on, or everyone."""

    tell: bool = True
    everyone: bool = False
    email_domain: str = ""

    def chosen(self, data: DigestData, *, account: str = "", name: str = "") -> tuple[list[OwnerWeek], list[str]]:
        """The owners to tell, and those with nothing to act on this week (not told)."""
        if not self.tell:
            return [], []
        weeks = owner_weeks(data, email_domain=self.email_domain, account=account, name=name)
        told = [w for w in weeks if self.everyone or w.to_act_on]
        return told, sorted(w.owner for w in weeks if not (self.everyone or w.to_act_on))


def send_digest(
    data: DigestData,
    *,
    notifier: SlackNotifier,
    claims: Claims,
    channel: str,
    owners: Owners,
    now: datetime,
    alerts_channel: str = "",
    hub: bool = False,
    time_left: Callable[[], float] = lambda: float("inf"),
) -> DigestReport:
    """The channel post, its chart and thread, each owner's message (unless `hub`: the hub sends them) and the
    permissions to grant, each delivered and recorded on its own."""
    week = f"{data.start:%G-W%V}"
    report = DigestReport(posted=False)
    posted = post_with_files(
        notifier,
        claims,
        key=f"digest:{week}",
        channel=channel,
        message=lambda: digest_message(data),
        attachments=[chart(lambda: week_chart(chart_days(data), source=chart_source(data)), f"gpu-week-{week}.png")],
        replies=lambda: digest_thread(data),
        now=now,
    )
    report.posted, report.chart_file, missing = posted.posted, (posted.files or [""])[0], posted.missing
    report.replies = posted.replies
    chosen, report.owners_quiet = owners.chosen(data)
    if not hub and chosen:
        told = tell_owners(
            notifier, claims, chosen, key=f"digest:{week}", basis={"": data.basis}, now=now, time_left=time_left
        )
        report.owners_told, report.owners_unreachable = sorted(told.told), sorted(told.unreachable)
        missing += told.missing
    missing += _permissions(data, notifier, claims, alerts_channel, week=week, now=now)
    if missing:
        raise DigestIncomplete(f"{plural(len(missing), 'part')} of the digest to send again: {missing[:3]}")
    return report


def _permissions(
    data: DigestData, notifier: SlackNotifier, claims: Claims, channel: str, *, week: str, now: datetime
) -> list[str]:
    """The reads AWS refused this week, said once to the alerts channel with the actions to grant."""
    alert = permission_alert([*data.gaps, *data.bill_gaps], who="weekly digest", week=week)
    if alert is None or not channel:
        return []
    try:
        post_once(claims, notifier, channel, key=f"digest:{week}:permissions", message=alert, now=now, ttl=TTL)
    except (SlackDeliveryError, ClaimHeld) as exc:
        logger.warning("permissions to grant not said", error=str(exc))
        return [f"permissions to grant: {exc}"]
    return []


def record_week(
    data: DigestData,
    records: WeekRecords,
    mailbox: Mailbox | None,
    *,
    account: str,
    label: str,
    regions: tuple[str, ...],
    owners: Owners = Owners(tell=False),
) -> Kept:
    """The week kept in the state table (for the quarterly deep dive) and handed to the hub's figures queue
    when there is a hub, with the owners' weeks the hub is to tell each person once; what did not go (the run
    fails and is retried: both are idempotent)."""
    parts: list[str] = []
    chosen: list[OwnerWeek] = []
    if mailbox is not None:
        chosen, _ = owners.chosen(data, account=account, name=f"{label} ({account})" if label else account)
        parts = encode_owners(account, label, data.start, data.end, chosen)
        if chosen and sum(body.count('"owner":') for body in parts) < len(chosen):
            logger.warning("owners left out of the hand-off", handed=len(parts), owners=len(chosen))
    handing = mailbox is not None and owners.tell
    body = encode(
        account_week(data, account=account, label=label, regions=regions, owner_parts=len(parts) if handing else None)
    )
    unsent = []
    steps: list[tuple[str, Callable[[], None]]] = [
        ("the week's record", lambda: records.keep(account, data.start, body))
    ]
    if mailbox is not None:
        # The owners' parts go first: the hub reads them for the week that says how many there are.
        steps += [(f"owners' part {k + 1} of {len(parts)}", _sender(mailbox, part)) for k, part in enumerate(parts)]
        steps.append(("hand-off to the hub", _sender(mailbox, body)))
    for what, step in steps:
        try:
            step()
        except (ClientError, BotoCoreError) as exc:
            logger.warning("week not kept or handed over", what=what, error=str(exc)[:300])
            unsent.append(f"{what}: {error_code(exc)}")
    return Kept(unsent, len(parts), len(chosen))


class Kept(NamedTuple):
    unsent: list[str]  # what did not go, for the retry
    owner_parts: int  # the owners' weeks handed to the hub, in this many parts
    owners_handed: int


def _sender(mailbox: Mailbox, body: str) -> Callable[[], None]:
    return lambda: mailbox.send(body)
