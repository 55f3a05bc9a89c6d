"""Slack messages for AWS Budgets notifications. Pure: an alert and its spend picture in, a message out."""

from __future__ import annotations

from collections.abc import Sequence

from costguard.budgets.notifications import BudgetAlert, Severity, SnsNotification
from costguard.core.formatting import signed, usd
from costguard.core.records import Mover, SpendPicture
from costguard.slack.blocks import Message, context, divider, fields_section, header, here, mrkdwn, section, when

ICONS = {
    Severity.INFO: ":information_source:",
    Severity.NOTICE: ":large_blue_circle:",
    Severity.WARNING: ":warning:",
    Severity.CRITICAL: ":rotating_light:",
}
RAW_LIMIT = 2800


def drivers_line(picture: SpendPicture) -> str:
    """Who and what is driving the spend, in one line."""
    parts = []
    for label, movers in (
        ("", picture.by_service),
        ("", picture.by_instance_type),
        ("owner ", picture.by_owner),
        ("SageMaker ", picture.by_sagemaker),
    ):
        top = next((m for m in movers if m.delta > 0), None)
        if top is not None:
            parts.append(f"{label}*{top.key}* {signed(top.delta)}")
    if not parts:
        return "No service, instance type or owner spends more than on the same days last month."
    return "Driving the spend, versus the same days last month: " + " · ".join(parts)


def _movers(title: str, movers: Sequence[Mover]) -> str:
    rising = [m for m in movers if m.delta > 0][:3]
    if not rising:
        return f"*{title}*\nnothing rising"
    lines = [f"{m.key}: {usd(m.current)} ({signed(m.delta)})" for m in rising]
    return f"*{title}*\n" + "\n".join(lines)


def budget_alert_message(alert: BudgetAlert, picture: SpendPicture) -> Message:
    severity = alert.severity
    name = alert.budget_name
    period = "today's" if alert.daily else "this month's"
    if alert.forecast:
        title = f"Budget {alert.budget_name}: forecast to reach {alert.used_percent:.0f}% of {period} budget"
        summary = (
            f"AWS forecasts *{usd(alert.amount)}* against a budget of {usd(alert.budgeted)} "
            f"(alert at {usd(alert.threshold)})."
        )
    else:
        title = f"Budget {alert.budget_name}: {alert.tier}% of {period} budget spent"
        summary = (
            f"*{usd(alert.amount)}* spent of {usd(alert.budgeted)} ({alert.used_percent:.0f}%): "
            f"the {alert.tier}% threshold ({usd(alert.threshold)}) is crossed."
        )
    mention = here() + " " if severity is Severity.CRITICAL else ""
    text = mention + title
    blocks = [
        header(title),
        section(mention + f"{ICONS[severity]} {summary}\n{drivers_line(picture)}"),
        fields_section(
            [
                f"*Spent this month*\n{usd(picture.month_to_date)}",
                f"*Forecast for the month*\n{usd(picture.forecast_month)}",
                f"*Budget*\n{usd(alert.budgeted)}",
                f"*Severity*\n{severity.value}",
            ]
        ),
        divider(),
        fields_section(
            [
                _movers("Services", picture.by_service),
                _movers("Instance types (EC2)", picture.by_instance_type),
                _movers("Owners", picture.by_owner),
                *([_movers("SageMaker usage", picture.by_sagemaker)] if picture.by_sagemaker else []),
            ]
        ),
    ]
    notes = [f"AWS Budgets notification for *{name}*" + (f", account {alert.account}" if alert.account else "")]
    if picture.errors:
        notes.append("Cost Explorer could not answer " + "; ".join(e for e in picture.errors))
    blocks.append(context(" · ".join(notes)))
    return Message(text, tuple(blocks))


def raw_budget_message(notification: SnsNotification, reason: str) -> Message:
    """A notification costguard could not read, posted as AWS sent it: never dropped."""
    raw = notification.message if len(notification.message) <= RAW_LIMIT else notification.message[:RAW_LIMIT] + "\n…"
    subject = notification.subject or "(no subject)"
    return Message(
        f"AWS notification costguard could not read: {subject}",
        (
            header("A notification costguard could not read"),
            section(f":warning: {subject}\ncostguard could not read it ({reason}), so here it is as AWS sent it:"),
            section(f"```{raw}```"),
            context(mrkdwn("SNS message {} at ", notification.message_id) + when(notification.timestamp)),
        ),
    )
