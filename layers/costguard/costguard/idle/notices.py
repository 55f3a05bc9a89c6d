"""Telling Slack what a sweep decided, eight machines at a time: a warning before any stop, a notice
with each stop. The EC2 writes are queued for the sweep's writer, never made from here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.core.records import Instance
from costguard.core.settings import Mode, Settings
from costguard.idle.decision import UNREADABLE_SCHEDULE, Action, Decision
from costguard.idle.messages import (
    dry_run_notice,
    idle_warning,
    not_stopped_notice,
    stop_cancelled_notice,
    stop_notice,
)
from costguard.idle.mornings import tell_unreadable_schedule
from costguard.idle.report import Outcome
from costguard.idle.writes import PendingWrites
from costguard.slack.blocks import Message
from costguard.slack.notifier import SlackNotifier
from costguard.state.claims import Claims, post_once
from costguard.state.ledger import LedgerWriteError
from costguard.state.outbox import STOP, WARN, Notice, Outbox

REPORT_TTL = timedelta(days=2)
# Slack work a sweep no longer starts when its invocation has less than this left: enough for the
# messages already under way (a lookup and a post, with Slack's retries), the EC2 writes and the ledger.
SLACK_RESERVE_SECONDS = 60.0
DEFERRED = "deferred: too little time left in this run; the next sweep carries on"


def _forever() -> float:
    return float("inf")


def tells_schedule(decision: Decision) -> bool:
    """A machine kept because its working hours cannot be read: its owner is told (once a day)."""
    return decision.action is Action.SKIP and decision.reason.startswith(UNREADABLE_SCHEDULE)


class SweepNotices:
    def __init__(
        self,
        *,
        claims: Claims,
        outbox: Outbox,
        notifier: Callable[[], SlackNotifier],
        prices: PriceBook,
        settings: Settings,
        time_left: Callable[[], float] = _forever,
    ) -> None:
        self.time_left = time_left
        self._expected: Sequence[Instance] | None = None
        self.claims = claims
        self.outbox = outbox
        self.notifier = notifier
        self.prices = prices
        self.settings, self.mode = settings, settings.mode
        self.hours_for: Callable[[Instance, datetime], str | None] = lambda _i, _n: None  # working hours to offer

    def prepare(self, instance: Instance) -> None:
        """Made here, once, not by racing threads: the price lookup, the Slack client, the owners' ids."""
        self.prices.hourly(instance.instance_type, instance.region)
        self.notifier()
        expected, self._expected = self._expected, None
        if expected is not None:
            self.resolve_owners(expected)

    def act(
        self, instance: Instance, decision: Decision, now: datetime, writes: PendingWrites, told: Notice | None = None
    ) -> Outcome:
        """Tell Slack now (a warning `told` already, by a sweep that died before its tags, is not told
        again); queue the EC2 write. The outcome is settled when the writes are applied."""
        owner = instance.owner(self.settings.owner_tag_key)
        outcome = Outcome(instance.instance_id, instance.instance_type, owner, decision.action, decision.reason)
        if decision.judgement is not None:
            outcome.idle_hours = round(decision.judgement.idle_minutes(now) / 60, 2)
        logger.info(
            "idle decision",
            instance_id=instance.instance_id,
            action=decision.action.value,
            reason=decision.reason,
            mode=self.mode.value,
        )
        if self._out_of_time(decision, told):
            outcome.applied, outcome.detail = False, DEFERRED
            return outcome
        try:
            if decision.action is Action.WARN and told is not None:
                writes.tag(instance, outcome, {tags.IDLE_WARNED_AT: told.at, tags.STOP_AFTER: told.stop_after})
            elif decision.action is Action.WARN:
                self._warn(instance, decision, outcome, now, writes)
            elif decision.action is Action.STOP:
                self._stop(instance, decision, outcome, now, writes)
            elif decision.action is Action.CLEAR_WARNING:
                writes.clear(instance, outcome)  # back at work, or kept: the warning goes, and nothing is said
            elif tells_schedule(decision) and self.mode is not Mode.DRY_RUN:  # dry-run tells no owner
                tell_unreadable_schedule(self.claims, self.tell, instance=instance, owner=outcome.owner, now=now)
            elif decision.action is Action.CANCEL_STOP:
                # Warned on metrics, but the machine says it is working: the owner learns why it stays up.
                self.tell(outcome.owner, stop_cancelled_notice(instance, decision, outcome.owner))
                writes.clear(instance, outcome)
        except SlackDeliveryError as exc:
            outcome.retry(f"Slack: {exc}")
        except (ClientError, BotoCoreError) as exc:
            outcome.retry(exc)
        return outcome

    def _out_of_time(self, decision: Decision, told: Notice | None) -> bool:
        """Slack work (a warning, a stop and its notice, a cancelled stop) is left to the next sweep when
        this one is nearly out of time: what was delivered is recorded, and the run ends normally."""
        needs_slack = decision.action in (Action.WARN, Action.STOP, Action.CANCEL_STOP) and told is None
        return needs_slack and self.time_left() < SLACK_RESERVE_SECONDS

    def report_once(self, key: str, message: Message, now: datetime) -> bool:
        """Post to the alerts channel unless this key was posted before; True if posted now."""
        channel = self.settings.alerts_channel
        posted = post_once(self.claims, self.notifier(), channel, key=key, message=message, now=now, ttl=REPORT_TTL)
        return posted is not None

    def _warn(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, writes: PendingWrites
    ) -> None:
        price = self.prices.hourly(instance.instance_type, instance.region)
        if self.mode is Mode.DRY_RUN:
            # No tags in dry-run, so no state: say it once a day per instance instead of every sweep.
            key = f"dry-run:warn:{instance.instance_id}:{now:%Y-%m-%d}"
            posted = self.report_once(key, dry_run_notice(instance, decision, price, outcome.owner), now)
            outcome.applied, outcome.detail = False, "" if posted else "reported already"
            return
        # The warning is delivered first; only a delivered warning is recorded on the instance, so a
        # machine is never stopped on a warning nobody received. Recorded in the outbox at once (the
        # tags come with the sweep's batch): a sweep killed before its tags does not warn twice.
        warning = idle_warning(instance, decision, price, outcome.owner, now, hours=self.hours_for(instance, now))
        self.tell(outcome.owner, warning)
        state = {tags.IDLE_WARNED_AT: formatting.format_time(now)}
        if decision.stop_after is not None:
            state[tags.STOP_AFTER] = formatting.format_time(decision.stop_after)
        stop_after = state.get(tags.STOP_AFTER, "")
        self.outbox.delivered(Notice(WARN, instance.instance_id, state[tags.IDLE_WARNED_AT], stop_after=stop_after))
        writes.tag(instance, outcome, state)

    def _stop(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, writes: PendingWrites
    ) -> None:
        owner = outcome.owner
        if self.mode is not Mode.ENFORCE:
            key = f"{self.mode.value}:stop:{instance.instance_id}:{instance.tags.get(tags.IDLE_WARNED_AT, '')}"
            posted = self.report_once(key, not_stopped_notice(instance, decision, self.mode.value, owner), now)
            outcome.applied, outcome.detail = False, "" if posted else "reported already"
            return
        price = self.prices.hourly(instance.instance_type, instance.region)
        # Stopped first, told after: the notice waits in the outbox and goes out only for a stop AWS took.
        at = formatting.format_time(now)
        notice = Notice(STOP, instance.instance_id, at, hibernate=decision.hibernate, owner=owner)
        writes.stop(instance, outcome, notice.with_message(stop_notice(instance, decision, price, owner, now)))

    def tell_stop(self, notice: Notice, outcome: Outcome | None = None) -> bool:
        """Deliver a stop's notice, then take it out of the outbox; False (and the outcome to retry) if
        Slack failed: it stays in the outbox for the next sweep."""
        try:
            self.tell(notice.owner, notice.message)
        except SlackDeliveryError as exc:
            if outcome is not None:
                outcome.retry(f"Slack: {exc}")
            return False
        try:
            self.outbox.remove([notice])
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:
            # Told, but not recorded: the next sweep tells it once more (the one duplicate a fault between
            # a post and its record may cost), which is better than failing the sweep here.
            logger.warning("stop notice told but not recorded", instance_id=notice.instance_id, error=str(exc))
        return True

    def expect(self, instances: Sequence[Instance]) -> None:
        """The machines this sweep may tell about: their owners are resolved before the first message."""
        self._expected = instances

    def resolve_owners(self, instances: Iterable[Instance]) -> None:
        """The Slack ids of everyone this sweep will tell, at once (in bulk when many are unknown)."""
        if self.mode is Mode.DRY_RUN:
            return  # dry-run tells the alerts channel only
        owners = {i.owner(self.settings.owner_tag_key) for i in instances} - {""}
        if owners:
            self.notifier().resolve(owner_email(o, self.settings.email_domain) or "" for o in sorted(owners))

    def tell(self, owner: str, message: Message) -> None:
        """A message to a machine's owner (or the alerts channel when Slack cannot reach them)."""
        email = owner_email(owner, self.settings.email_domain) if owner else None
        self.notifier().send_to_owner(email, message, fallback_channel=self.settings.alerts_channel, owner=owner)
