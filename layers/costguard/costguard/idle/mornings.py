"""Machines up before their working hours: a stopped machine with a `costguard:schedule` is started
when its next window opens within the lead (15 minutes by default), once per window; with MorningNote,
its owner is told.

Only then: a machine someone stopped inside its hours stays stopped, and one whose schedule cannot be
read is not started (the sweep tells its owner when it runs). Dry-run starts nothing and says what it
would have started.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger, metrics
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Settings
from costguard.idle.messages import morning_start_note, schedule_unreadable_notice
from costguard.idle.report import RegionReport
from costguard.idle.schedule import ScheduleError, parse_schedule, suggest_schedule
from costguard.slack.blocks import Message
from costguard.state.claims import Claims, ClaimState
from costguard.state.entries import Entry, EntryKind
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger

DAY = timedelta(days=1)


class MorningStarts:
    def __init__(self, *, ec2: Ec2, ledger: Ledger, claims: Claims, policy: IdlePolicy, settings: Settings) -> None:
        self.ec2, self.ledger, self.claims = ec2, ledger, claims
        self.policy, self.mode, self.owner_tag_key = policy, settings.mode, settings.owner_tag_key
        self.tell: Callable[[str, Message], None] | None = None  # the morning note, with MorningNote

    def run(self, now: datetime, report: RegionReport) -> None:
        lead = timedelta(minutes=self.policy.schedule_lead_minutes)
        filters: list[Any] = [
            {"Name": "instance-state-name", "Values": ["stopped"]},
            {"Name": "tag-key", "Values": [tags.SCHEDULE]},
            {"Name": "instance-type", "Values": list(self.policy.accelerator_families)},
        ]
        for instance in self.ec2.iter_instances(filters):
            # The filters narrow the answer; this is what is relied on.
            if instance.state != "stopped" or tags.SCHEDULE not in instance.tags:
                continue
            if not self.policy.is_accelerated(instance.instance_type):
                continue
            try:
                opens = parse_schedule(instance.tags[tags.SCHEDULE]).next_start(now)
            except ScheduleError:
                continue
            if opens - now > lead:
                continue
            # Once per window: a second sweep in the lead (a retry) does not start it again after its owner
            # stopped it.
            key = f"morning-start:{instance.instance_id}:{formatting.format_time(opens)}"
            claim = self.claims.claim(key, now, ttl=timedelta(days=2))
            if claim.state is not ClaimState.TAKEN:
                continue
            try:
                applied = self.ec2.start(instance.instance_id)
            except (ClientError, BotoCoreError) as exc:  # no capacity, say: the owner starts it by hand
                self.claims.release(claim)
                logger.warning("morning start failed", instance_id=instance.instance_id, error=str(exc)[:200])
                continue
            self.claims.done(claim)
            report.started.append(instance.instance_id)
            self.ledger.record(
                Entry(
                    at=now,
                    kind=EntryKind.MORNING_START,
                    instance_id=instance.instance_id,
                    region=instance.region,
                    mode=self.mode.value,
                    applied=applied,
                    owner=instance.owner(self.owner_tag_key),
                    instance_type=instance.instance_type,
                    reason=f"its working hours ({instance.tags[tags.SCHEDULE]}) open at {opens:%H:%M} UTC",
                )
            )
            if applied and self.tell is not None:
                self._note(instance, opens)

    def _note(self, instance: Instance, opens: datetime) -> None:
        """The optional morning note: the machine is already starting, so a note Slack refused is logged and
        counted, and the start stands (the owner finds the machine running either way)."""
        owner = instance.owner(self.owner_tag_key)
        try:
            if self.tell is not None:
                self.tell(owner, morning_start_note(instance, opens, owner))
        except SlackDeliveryError as exc:
            logger.warning("morning note not delivered", instance_id=instance.instance_id, error=str(exc)[:200])
            metrics.add_metric(name="MorningNotesUndelivered", unit=MetricUnit.Count, value=1)


def hours_offer(history: MachineHistory) -> Callable[[Instance, datetime], str | None]:
    """For the idle warning: the working hours a machine without any keeps, from its starts and stops."""

    def offer(instance: Instance, now: datetime) -> str | None:
        if tags.SCHEDULE in instance.tags:
            return None
        return suggest_schedule(history.changes(instance.instance_id), now)

    return offer


def tell_unreadable_schedule(
    claims: Claims,
    send: Callable[[str, Message], None],
    *,
    instance: Instance,
    owner: str,
    now: datetime,
) -> None:
    """An unreadable schedule, told to the owner once a day (as long as it lasts); the machine is kept."""
    value = instance.tags.get(tags.SCHEDULE, "")
    try:
        parse_schedule(value)
        return  # readable: nothing to tell
    except ScheduleError as exc:
        why = str(exc)
    claim = claims.claim(f"schedule-unreadable:{instance.instance_id}:{now:%Y-%m-%d}:{value[:64]}", now, ttl=DAY * 2)
    if claim.state is not ClaimState.TAKEN:
        return
    try:
        send(owner, schedule_unreadable_notice(instance, why, owner))
    except SlackDeliveryError:
        claims.release(claim)
        raise
    claims.done(claim)
