"""Sending the weekly digest: once per week to the channel (with its chart), and to each owner."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.digest.chart import week_chart
from costguard.digest.data import DigestData, DigestReport
from costguard.digest.figures import InstanceWeek
from costguard.digest.messages import chart_days, digest_message, owner_message
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, post_once


def send_digest(
    data: DigestData,
    *,
    notifier: SlackNotifier,
    claims: Claims,
    channel: str,
    email_domain: str,
    owner_digests: bool,
    now: datetime,
) -> DigestReport:
    week = f"{data.start:%G-W%V}"
    delivery = post_once(
        claims, notifier, channel, key=f"digest:{week}", message=digest_message(data), now=now, ttl=timedelta(days=30)
    )
    report = DigestReport(posted=delivery is not None)
    if delivery is None:
        return report  # this week's digest went out already: a retry says nothing twice
    report.chart_file = notifier.upload_image(
        delivery.channel,
        week_chart(chart_days(data)),
        filename=f"gpu-week-{week}.png",
        title="GPU-hours used and idle, day by day",
    )
    if not owner_digests:
        return report
    machines: dict[str, list[InstanceWeek]] = defaultdict(list)
    for instance in data.instances:
        if instance.owner:
            machines[instance.owner].append(instance)
    for owner, theirs in sorted(machines.items()):
        if data.this_week.per_owner.get(owner) is None:
            continue  # nothing of theirs ran this week: nothing to tell them
        email = owner_email(owner, email_domain)
        user = notifier.user_id_for(email) if email else None
        if user is None:
            report.owners_unreachable.append(owner)
            continue
        try:
            posted = post_once(
                claims,
                notifier,
                user,
                key=f"digest:{week}:{owner}",
                message=owner_message(data, owner, theirs),
                now=now,
                ttl=timedelta(days=30),
            )
        except SlackDeliveryError as exc:  # one owner's DM must not cost the others theirs
            logger.warning("owner digest not delivered", owner=owner, error=str(exc))
            report.owners_unreachable.append(owner)
            continue
        if posted is not None:
            report.owners_told.append(owner)
    return report
