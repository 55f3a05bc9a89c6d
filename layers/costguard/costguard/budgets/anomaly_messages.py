"""Slack messages for Cost Anomaly Detection alerts, in the budget alerts' style: what jumped, by how
much, since when, AWS's root causes, and who drives it by costguard's own Cost Explorer reading.
Pure: an anomaly and its drivers in, a message out. Every string AWS sent is escaped (blocks.py)."""

from __future__ import annotations

from datetime import date, datetime

from costguard.budgets.anomalies import Anomaly, RootCause
from costguard.core.formatting import signed, usd
from costguard.core.records import Drivers, Mover
from costguard.slack.blocks import (
    MAX_FIELD,
    Block,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    divider,
    fields_section,
    header,
    join,
    link,
    mrkdwn,
    on_day,
    section,
    when,
)

ICON = ":chart_with_upwards_trend:"
OWNERS_SHOWN = 3
SHARE_WORTH_NAMING = 0.05  # an owner whose spend rose by less than 5% of the anomaly does not drive it


def what_jumped(anomaly: Anomaly) -> str:
    """The monitor's dimension (a service, an account), else the first root cause's service."""
    return anomaly.dimension or next(iter(anomaly.services), "") or anomaly.monitor_name or "Spend"


def _day(day: date) -> Mrkdwn:
    """An anomaly's day (AWS's, in UTC), as each reader's."""
    return on_day(day)


def _percent(anomaly: Anomaly) -> str:
    return f" ({anomaly.impact_percent:+,.0f}%)" if anomaly.impact_percent is not None else ""


def anomaly_title(anomaly: Anomaly) -> str:
    """The header's words: plain text, which cannot show a day in each reader's zone, so none (the text says
    since when)."""
    return f"Cost anomaly: {what_jumped(anomaly)} {signed(anomaly.total_impact)}{_percent(anomaly)}"


def _summary(anomaly: Anomaly) -> Mrkdwn:
    until = Mrkdwn("to ") + _day(anomaly.end) if anomaly.end else Mrkdwn("and still going")
    if anomaly.actual is not None and anomaly.expected is not None:
        text = mrkdwn(
            "*{}* spent *{}* where {} was expected, ", what_jumped(anomaly), usd(anomaly.actual), usd(anomaly.expected)
        ) + mrkdwn("from {} {}: *{}*{}.", _day(anomaly.start), until, signed(anomaly.total_impact), _percent(anomaly))
    else:
        text = mrkdwn(
            "*{}* spent *{}* more than expected from {} {}.",
            what_jumped(anomaly),
            signed(anomaly.total_impact),
            _day(anomaly.start),
            until,
        )
    if anomaly.max_impact is not None:
        text += f" Its worst day: {signed(anomaly.max_impact)}."
    return text


def driving(drivers: Drivers, impact: float) -> list[Mover]:
    """The owners whose spend rose by a share of the anomaly worth naming, the biggest rise first."""
    floor = max(1.0, SHARE_WORTH_NAMING * impact)
    return [m for m in drivers.by_owner if m.delta >= floor][:OWNERS_SHOWN]


def drivers_line(drivers: Drivers, impact: float) -> str:
    """Who drives it, in one line: the owners whose spend rose most over the anomaly's days."""
    where = ", ".join(drivers.services) if drivers.services else "all services"
    if drivers.errors:
        return f"Who drives it could not be read from Cost Explorer ({where})."
    rising = driving(drivers, impact)
    if not rising:
        return f"No owner's spend on {where} rose by {usd(max(1.0, SHARE_WORTH_NAMING * impact))} or more."
    parts = " · ".join(f"owner *{m.key}* {signed(m.delta)}" for m in rising)
    return f"Driving it on {where}, by owner tag, versus the {_days(drivers.days)} before: {parts}"


def _days(days: int) -> str:
    return "day" if days == 1 else f"{days} days"


def _owners(drivers: Drivers, impact: float) -> str:
    rising = driving(drivers, impact)
    title = f"*Owners, versus the {_days(drivers.days)} before*"
    if not rising:
        return f"{title}\nnothing rising" if not drivers.errors else f"{title}\nunknown"
    return title + "\n" + "\n".join(f"{m.key}: {usd(m.current)} ({signed(m.delta)})" for m in rising)


def _cause(cause: RootCause) -> str:
    account = cause.linked_account_name or cause.linked_account
    if cause.linked_account_name and cause.linked_account:
        account = f"{cause.linked_account_name} ({cause.linked_account})"
    parts = [p for p in (cause.service, account, cause.region, cause.usage_type) if p]
    text = " · ".join(parts) or "(AWS named no dimension)"
    return text + (f": {signed(cause.contribution)}" if cause.contribution is not None else "")


def _score(anomaly: Anomaly) -> str:
    if anomaly.score is None:
        return "unknown"
    return f"{anomaly.score:.2f}" + (f" (highest {anomaly.max_score:.2f})" if anomaly.max_score is not None else "")


def anomaly_message(
    anomaly: Anomaly,
    drivers: Drivers,
    *,
    was: float | None = None,
    replaces: date | None = None,
    updated_at: datetime | None = None,
) -> Message:
    """The alert. `was` (with `updated_at`): the total impact the message showed before this edit;
    `replaces`: the day of an earlier alert this new post stands for (it could not be edited)."""
    title = anomaly_title(anomaly)
    blocks: list[Block] = [header(title)]
    if replaces is not None:
        blocks.append(
            section(
                mrkdwn(
                    ":arrows_counterclockwise: This updates costguard's alert of {} about the same ", on_day(replaces)
                )
                + "anomaly: AWS sent it again with a new impact, and that message could not be edited."
            )
        )
    blocks += [
        section(Mrkdwn(f"{ICON} ") + _summary(anomaly) + "\n" + drivers_line(drivers, anomaly.total_impact)),
        fields_section(
            [
                f"*Impact*\n{signed(anomaly.total_impact)}{_percent(anomaly)}",
                f"*Actual / expected*\n{usd(anomaly.actual)} / {usd(anomaly.expected)}",
                mrkdwn("*Since*\n{}", _day(anomaly.start))
                + (mrkdwn(" (to {})", _day(anomaly.end)) if anomaly.end else " (going on)"),
                f"*Score*\n{_score(anomaly)}",
                f"*Monitor*\n{anomaly.monitor_name or 'unnamed'}"
                + (f" ({anomaly.monitor_type})" if anomaly.monitor_type else ""),
                f"*Account*\n{_account(anomaly)}",
            ]
        ),
        divider(),
    ]
    causes = [_cause(c) for c in anomaly.root_causes]
    cause_text = "*Root causes, as AWS ranks them*\n" + (
        bullet_list(causes, limit=MAX_FIELD - 40) if causes else "AWS named none."
    )
    blocks.append(fields_section([cause_text, _owners(drivers, anomaly.total_impact)]))
    blocks.append(section(link(anomaly.console_link, "Open the anomaly in AWS Cost Anomaly Detection")))
    notes = [
        f"AWS Cost Anomaly Detection, anomaly {anomaly.anomaly_id}"
        + (f" ({anomaly.subscription})" if anomaly.subscription else "")
    ]
    if was is not None and updated_at is not None:
        notes.append(mrkdwn("updated {}, the impact was {}", when(updated_at), signed(was)))
    if drivers.errors:
        notes.append("Cost Explorer could not answer " + "; ".join(drivers.errors))
    blocks.append(context(join(" · ", notes)))
    return Message(title + mrkdwn(" since {}", _day(anomaly.start)), tuple(blocks))


def _account(anomaly: Anomaly) -> str:
    if anomaly.account_name and anomaly.account_id:
        return f"{anomaly.account_name} ({anomaly.account_id})"
    return anomaly.account_name or anomaly.account_id or "unknown"
