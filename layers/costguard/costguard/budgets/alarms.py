"""CloudWatch alarms as SNS delivers them: costguard's own, on the operations topic, read so that an
alarm nobody subscribed an email to still reaches the alerts channel and says what to do (any other
alarm routed to costguard's topics is read the same way).

CloudWatch publishes a JSON object with `AlarmName`, `NewStateValue`, `NewStateReason`,
`StateChangeTime`, the alarm's `AlarmDescription` (costguard's alarms say there what to do) and more.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from costguard.budgets.notifications import SnsNotification
from costguard.core import shapes
from costguard.slack.blocks import Message, Mrkdwn, context, header, mrkdwn, safe, section, when

STATES = {"ALARM": ":rotating_light:", "OK": ":white_check_mark:", "INSUFFICIENT_DATA": ":grey_question:"}


@dataclass(frozen=True)
class AlarmChange:
    name: str
    state: str
    old_state: str
    reason: str
    description: str
    changed_at: str  # as CloudWatch wrote it: part of the key that posts each change once
    account: str
    region: str

    @property
    def key(self) -> str:
        return f"alarm:{self.name}:{self.state}:{self.changed_at}"


def alarm_from_sns(notification: SnsNotification) -> AlarmChange | None:
    """The alarm change an SNS message carries; None when it is not one (JSON with `AlarmName` and
    `NewStateValue`). EventValidationError naming the field when it is one that cannot be read."""
    body = notification.json_object
    if body is None or "AlarmName" not in body or "NewStateValue" not in body:
        return None
    where = "Message"
    state = shapes.text(body, "NewStateValue", where, limit=40)
    return AlarmChange(
        name=shapes.text(body, "AlarmName", where, limit=255),
        state=state,
        old_state=shapes.optional_text(body, "OldStateValue", where, limit=40) or "",
        reason=shapes.optional_text(body, "NewStateReason", where, limit=8000) or "",
        description=shapes.optional_text(body, "AlarmDescription", where, limit=2048) or "",
        changed_at=shapes.optional_text(body, "StateChangeTime", where, limit=40) or notification.message_id,
        account=shapes.optional_text(body, "AWSAccountId", where, limit=20) or "",
        region=shapes.optional_text(body, "Region", where, limit=60) or "",
    )


def alarm_message(alarm: AlarmChange) -> Message:
    """The change, what the alarm is for and what to do (its description), and CloudWatch's reason."""
    icon = STATES.get(alarm.state, ":bell:")
    was = f" (was {alarm.old_state})" if alarm.old_state else ""
    where = ", ".join(part for part in (alarm.account, alarm.region) if part)
    blocks = [
        header(f"CloudWatch alarm: {alarm.state}"),
        section(mrkdwn("{} *{}* is {}{}", icon, alarm.name, alarm.state, was)),
    ]
    if alarm.description:
        blocks.append(section(alarm.description))
    said = _reason(alarm.reason) if alarm.reason else Mrkdwn("no reason given")
    blocks.append(context(Mrkdwn("CloudWatch: ") + said + (f" ({where})" if where else "")))
    return Message(f"Alarm {alarm.name} is {alarm.state}", tuple(blocks))


# A datapoint's time in CloudWatch's reason: "[2.0 (23/11/26 03:05:00)]", day/month/year, in UTC (a reason of
# 2 Oct 2019 17:04 UTC names its datapoint "(02/10/19 16:59:00)").
_DATAPOINT = re.compile(r"\((\d{2})/(\d{2})/(\d{2}) (\d{2}):(\d{2}):(\d{2})\)")


def _reason(reason: str) -> Mrkdwn:
    """CloudWatch's reason as it wrote it, escaped, each datapoint's time shown in the reader's own zone."""
    said, done = Mrkdwn(""), 0
    for found in _DATAPOINT.finditer(reason):
        day, month, year, hour, minute, second = (int(x) for x in found.groups())
        try:
            moment = datetime(2000 + year, month, day, hour, minute, second, tzinfo=UTC)
        except ValueError:
            continue  # not a date: left as written
        said += safe(reason[done : found.start()]) + Mrkdwn("(") + when(moment) + Mrkdwn(")")
        done = found.end()
    return said + safe(reason[done:])
