"""Sending the weekly digest: once per week to the channel (with its chart, through digest/posting.py),
and to each owner; each part on its own, so that a retry sends only what did not go out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.queues import Mailbox
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.digest.chart import week_chart
from costguard.digest.handoff import encode
from costguard.digest.posting import TTL, DigestIncomplete, chart, post_with_files
from costguard.digest.weekly.rules.figures import InstanceWeek
from costguard.digest.weekly.rules.messages import chart_days, digest_message, owner_message
from costguard.digest.weekly.rules.records import DigestData, DigestReport
from costguard.digest.weekly.rules.summary import account_week
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import ClaimHeld, Claims, post_once
from costguard.state.weeks import WeekRecords

# No owner message is started with less than this left: the retry (the scheduler's, minutes later)
# sends the rest, and every message that went out is recorded (claimed done) before the run ends.
SLACK_RESERVE_SECONDS = 60.0


def send_digest(
    data: DigestData,
    *,
    notifier: SlackNotifier,
    claims: Claims,
    channel: str,
    email_domain: str,
    owner_digests: bool,
    now: datetime,
    owner_digests_always: bool = False,
    time_left: Callable[[], float] = lambda: float("inf"),
) -> DigestReport:
    """The channel post, its chart and each owner's message, each delivered and recorded on its own."""
    week = f"{data.start:%G-W%V}"
    report = DigestReport(posted=False)
    posted = post_with_files(
        notifier,
        claims,
        key=f"digest:{week}",
        channel=channel,
        message=lambda: digest_message(data),
        attachments=[chart(lambda: week_chart(chart_days(data)), f"gpu-week-{week}.png")],
        now=now,
    )
    report.posted, report.chart_file, missing = posted.posted, (posted.files or [""])[0], posted.missing
    if owner_digests:
        missing += _owner_messages(
            data,
            notifier,
            claims,
            email_domain=email_domain,
            week=week,
            now=now,
            report=report,
            time_left=time_left,
            always=owner_digests_always,
        )
    if missing:
        raise DigestIncomplete(f"{len(missing)} part(s) of the digest to send again: {missing[:3]}")
    return report


def record_week(
    data: DigestData,
    records: WeekRecords,
    mailbox: Mailbox | None,
    *,
    account: str,
    label: str,
    regions: tuple[str, ...],
) -> list[str]:
    """The week kept in the state table (for the quarterly deep dive) and handed to the hub's figures
    queue when there is a hub; what did not go (the run fails and is retried: both are idempotent)."""
    body = encode(account_week(data, account=account, label=label, regions=regions))
    unsent = []
    steps: list[tuple[str, Callable[[], None]]] = [
        ("the week's record", lambda: records.keep(account, data.start, body))
    ]
    if mailbox is not None:
        steps.append(("hand-off to the hub", lambda: mailbox.send(body)))
    for what, step in steps:
        try:
            step()
        except (ClientError, BotoCoreError) as exc:
            logger.warning("week not kept or handed over", what=what, error=str(exc)[:300])
            unsent.append(f"{what}: {error_code(exc)}")
    return unsent


def _owner_messages(
    data: DigestData,
    notifier: SlackNotifier,
    claims: Claims,
    *,
    email_domain: str,
    week: str,
    now: datetime,
    report: DigestReport,
    time_left: Callable[[], float],
    always: bool = False,
) -> list[str]:
    """Each owner's week by direct message, once; what could not go out, to try again."""
    missing = []
    machines: dict[str, list[InstanceWeek]] = defaultdict(list)
    for instance in data.instances:
        if instance.owner:
            machines[instance.owner].append(instance)
    # Every owner's Slack id at once (one users.list walk when many are unknown), not one lookup each.
    notifier.resolve(owner_email(owner, email_domain) or "" for owner in machines)
    worth_a_word = {k.instance_id for k in data.outlived_keeps} | {a.instance.instance_id for a in data.advice}
    for owner, theirs in sorted(machines.items()):
        figures = data.this_week.per_owner.get(owner)
        if figures is None:
            continue  # nothing of theirs ran this week: nothing to tell them
        if not always and figures.idle_gpu_hours == 0 and not any(i.instance_id in worth_a_word for i in theirs):
            report.owners_quiet.append(owner)  # a week with nothing idle is not worth a message
            continue
        if time_left() < SLACK_RESERVE_SECONDS:
            missing.append(f"{owner}: too little time left in this run; the retry sends it")
            continue
        email = owner_email(owner, email_domain)
        try:
            user = notifier.user_id_for(email, strict=True) if email else None
            if user is None:
                report.owners_unreachable.append(owner)  # Slack knows no such person: nothing to retry
                continue
            message = owner_message(data, owner, theirs)
            posted = post_once(claims, notifier, user, key=f"digest:{week}:{owner}", message=message, now=now, ttl=TTL)
        except (SlackDeliveryError, ClaimHeld) as exc:  # one owner's message must not cost the others theirs
            logger.warning("owner digest not delivered", owner=owner, error=str(exc))
            missing.append(f"{owner}: {exc}")
            continue
        if posted is not None:
            report.owners_told.append(owner)
    return missing
