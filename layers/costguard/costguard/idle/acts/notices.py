"""What a sweep tells Slack about each decision: a warning before any stop, a notice with each stop, a word when a
warned machine turns out to be at work. Each is one machine's notice, with its own outbox record, lease and
ledger entry (delivery.py sends them); the EC2 writes are queued for the sweep's writer, never made from here.
Apart: what the mode says instead (reports.py), the once-a-day notes of machines left running (daily.py), the
owners' Slack (owners.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.clock import forever
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.acts.daily import tell_prepaid, tell_scarce
from costguard.idle.acts.delivery import (
    DEFERRED,
    IN_FLIGHT,
    SLACK_RESERVE_SECONDS,
    Dispatch,
    Telling,
    lease_length,
    why_withdrawn,
)
from costguard.idle.acts.outbox import Recovered, tagged_since
from costguard.idle.acts.owners import OwnerMessages
from costguard.idle.acts.reports import notice_for, report_of, reported
from costguard.idle.acts.shown import Shown
from costguard.idle.acts.starts import tell_unreadable_schedule
from costguard.idle.acts.writes import PendingWrites, Stopped
from costguard.idle.report import Outcome, Settled, Status, ledger_entry
from costguard.idle.rules.capacity import tells_scarce
from costguard.idle.rules.decision import Action, Decision, tells_schedule
from costguard.idle.rules.money import tells_prepaid
from costguard.idle.rules.trail import as_json
from costguard.idle.words.messages import (
    cancelled,
    cancelled_part,
    cleared,
    idle_warning,
    stopped_part,
)
from costguard.slack import live
from costguard.slack.blocks import Mrkdwn
from costguard.state.claims import ClaimHeld
from costguard.state.entries import EntryKind
from costguard.state.live import LiveMessages
from costguard.state.outbox import CANCEL, PENDING, STOP, WARN, Notice

__all__ = ["DEFERRED", "SLACK_RESERVE_SECONDS", "SweepNotices"]


def _no_hours(_instance: Instance, _now: datetime) -> str | None:
    return None


@dataclass(kw_only=True, eq=False)
class SweepNotices(OwnerMessages):
    time_left: Callable[[], float] = forever
    hours_for: Callable[[Instance, datetime], str | None] = _no_hours  # the hours a warning offers one without any
    dispatch: Dispatch = field(init=False)
    _tellings: list[Telling] = field(init=False, default_factory=list)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        super().__post_init__()
        live_messages = LiveMessages(self.outbox.client, self.outbox.table, self.notifier)
        self.shown = Shown(live_messages, zone=self.zone, mode=self.mode, time_left=self.time_left, outbox=self.outbox)
        self.dispatch = Dispatch(
            outbox=self.outbox,
            notifier=self.notifier,
            alerts_channel=self.settings.alerts_channel,
            email_domain=self.settings.email_domain,
            time_left=self.time_left,
            live=live_messages,
        )

    def act(
        self, instance: Instance, decision: Decision, now: datetime, writes: PendingWrites, recovered: Recovered
    ) -> Outcome:
        """Queue what to tell (sent by `send`) and the EC2 writes; a warning `told` already, by a sweep that
        died before its tags, is not told again. The outcome before anything is told or written."""
        owner = instance.owner(self.settings.owner_tag_key)
        idle_hours = round(decision.judgement.idle_minutes(now) / 60, 2) if decision.judgement is not None else 0.0
        outcome = Outcome(
            instance.instance_id,
            instance.instance_type,
            owner,
            decision.action,
            decision.reason,
            idle_hours=idle_hours,
            trail=decision.trail,
        )
        iid, action, mode = instance.instance_id, decision.action.value, self.mode.value
        trail = as_json(decision.trail)
        logger.info("idle decision", instance_id=iid, action=action, reason=decision.reason, mode=mode, trail=trail)
        try:
            return self._act(instance, decision, now=now, writes=writes, recovered=recovered, outcome=outcome)
        except SlackDeliveryError as exc:
            return outcome.settled(Settled.retry(f"Slack: {exc}"))
        except (ClientError, BotoCoreError, ClaimHeld) as exc:
            return outcome.settled(Settled.retry(exc))

    def _act(
        self,
        instance: Instance,
        decision: Decision,
        *,
        now: datetime,
        writes: PendingWrites,
        recovered: Recovered,
        outcome: Outcome,
    ) -> Outcome:
        iid = instance.instance_id
        told = recovered.told.get(iid)
        if told is not None and (
            tagged_since(instance, told.time)
            or told.time < instance.launch_time
            or kept_since(instance, told.time, now)
        ):
            told = None  # tagged already, about an earlier run of the machine, or kept by a person since
        if iid in recovered.busy and decision.action in (Action.WARN, Action.STOP, Action.CANCEL_STOP):
            return outcome.settled(Settled(Status.IN_FLIGHT, IN_FLIGHT))
        if out_of_time(decision, told, self.time_left()):
            return outcome.settled(Settled(Status.DEFERRED, DEFERRED))
        # A warning recorded but not tagged, or past its stop time and not carried out: completed or withdrawn now;
        # one whose stop a sweep cancelled, and said so, and did not clear: cleared now, never stopped.
        settled = self.shown.unkept(instance, told, decision, outcome, writes=writes, now=now) or cancelled_already(
            instance, decision, outcome, writes, recovered.withdrawn.get(iid)
        )
        if settled is not None:
            return settled
        if reported(self.mode, decision):
            return self._report(instance, decision, outcome, now, recovered)
        if decision.action is Action.WARN:
            self._warn(instance, decision, outcome, now, writes)
        elif decision.action is Action.STOP:
            self._stop(instance, decision, outcome, now, writes)
        elif tells_prepaid(decision) or tells_scarce(decision):  # left running (paid for, or hard to get back)
            self._left_running(instance, decision, outcome, now, writes)
        elif decision.action is Action.CLEAR_WARNING:
            writes.clear(instance, outcome)  # back at work, or kept: the warning goes, and its message says so
            self.shown.later(iid, cleared(instance, now, self.zone), why=decision.reason)
        elif tells_schedule(decision) and self.mode is not Mode.DRY_RUN:  # dry-run tells no owner
            tell_unreadable_schedule(
                self.claims, self.tell, instance=instance, owner=outcome.owner, now=now, who=self.person
            )
        elif decision.action is Action.CANCEL_STOP and withdrew(recovered.withdrawn.get(iid), instance):
            writes.clear(instance, outcome)  # told by an attempt that died before its clear
        elif decision.action is Action.CANCEL_STOP:
            # Warned on metrics, but the machine says it is working: the owner learns why it stays up.
            self._queue(
                cancel_telling(self, instance, decision, outcome, now, clear=lambda: writes.clear(instance, outcome))
            )
        return outcome

    def _left_running(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, writes: PendingWrites
    ) -> None:
        """Idle, and left running (a stop saves nothing, or it might not start again): told once a day, and
        that day's first tell recorded in the ledger with the decision's trail."""
        tell = tell_prepaid if tells_prepaid(decision) else tell_scarce
        if tell(self, instance, decision, now, clear=lambda: writes.clear(instance, outcome)):
            writes.left(ledger_entry(instance, outcome, now, mode=self.mode, kind=EntryKind.LEFT_RUNNING))

    def send(self, now: datetime) -> dict[str, Settled]:
        """The warnings and withdrawn warnings this sweep decided, delivered and recorded; those not
        delivered, by machine, with why."""
        with self._lock:
            tellings, self._tellings = self._tellings, []
        self.shown.before_writes(now)  # the withdrawals to show once the writes are made, kept first
        return by_machine(tellings, self.dispatch.send(tellings, now))

    def tell_stops(self, stopped: Stopped, now: datetime, *, left: Stopped | None = None) -> dict[str, Settled]:
        """Each stop AWS took (and each a dead attempt `left`) told to its owner, its record then gone with its
        ledger entry; a notice Slack did not take stays for the next sweep. Those not told, by machine, why.
        Its warning says it first, in place (acts/shown.py), and the notice goes out as a reply under it."""
        tellings = self.shown.stops([*(left or []), *stopped], self.person)
        told = self.dispatch.send(tellings, now)
        return by_machine([Telling(notice, notice.message) for _, _, notice in stopped], told)

    def _report(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, recovered: Recovered
    ) -> Outcome:
        """What costguard would do (dry-run) or does not do (notify-only), told to the alerts channel once:
        gathered with the sweep's other reports in one message, each machine its own record."""
        price = price_of(self.prices, instance, decision)
        outcome = replace(outcome, applied=False)  # reported, not done
        notice, message = report_of(self.mode, instance, decision, outcome, now, price)
        if notice.sk in recovered.reported:
            return replace(outcome, detail="reported already")
        self._queue(Telling(replace(notice, to=self.settings.alerts_channel), message))
        return outcome

    def _warn(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, writes: PendingWrites
    ) -> None:
        # Delivered first; only a delivered warning is recorded on the instance: no stop on an unseen warning.
        part, who = warning_of(self, instance, decision, now, self.hours_for(instance, now))
        state = {tags.IDLE_WARNED_AT: formatting.format_time(now)}
        if decision.stop_after is not None:
            state[tags.STOP_AFTER] = formatting.format_time(decision.stop_after)
        notice = replace(
            notice_for(self.mode, WARN, instance, state[tags.IDLE_WARNED_AT], outcome, now=now),
            stop_after=state.get(tags.STOP_AFTER, ""),
        )
        message = live.Live((part,)).message()
        self._queue(Telling(notice, message, lambda: writes.tag(instance, outcome, state), part=part, who=who))

    def _stop(
        self, instance: Instance, decision: Decision, outcome: Outcome, now: datetime, writes: PendingWrites
    ) -> None:
        owner = outcome.owner
        warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "")
        price = price_of(self.prices, instance, decision)
        # Stopped first, told after: the notice waits in the outbox and goes out only for a stop AWS took.
        # It is keyed by the warning it acts on: a retry of a dead attempt writes the same record.
        notice = replace(
            notice_for(
                self.mode, STOP, instance, warned_at or formatting.format_time(now), outcome, now=now, price=price
            ),
            hibernate=decision.hibernate,
        )
        # Held by this attempt from before the stop until it is told (or its deadline passes).
        notice = notice.leased(self.dispatch.token, now + lease_length(self.time_left()), status=PENDING)
        part = stopped_part(instance, decision, price, self.person(owner), now, zone=self.zone)
        writes.stop(instance, outcome, notice.with_part(part))

    def _queue(self, telling: Telling) -> None:
        with self._lock:
            self._tellings.append(telling)


def warning_of(
    notices: OwnerMessages, instance: Instance, decision: Decision, now: datetime, hours: str | None
) -> tuple[live.Part, Mrkdwn]:
    """A machine's warning (its live part), and its owner as it addresses them."""
    price = price_of(notices.prices, instance, decision)
    who = notices.person(instance.owner(notices.settings.owner_tag_key))
    whose, zone = notices.whose(who), notices.zone
    mode = notices.mode  # notify-only: what enforce mode would do, and no button the mode refuses
    return idle_warning(instance, decision, price, who, now, hours=hours, whose=whose, zone=zone, mode=mode), who


def cancel_telling(
    notices: OwnerMessages,
    instance: Instance,
    decision: Decision,
    outcome: Outcome,
    now: datetime,
    *,
    clear: Callable[[], None],
) -> Telling:
    """A warning withdrawn (the machine is at work after all), said in the warning itself where it can be, else in
    a message of its own; its delivery clears the warning."""
    notice = notice_for(notices.mode, CANCEL, instance, instance.tags.get(tags.IDLE_WARNED_AT, ""), outcome, now=now)
    who = notices.person(outcome.owner)
    part = cancelled_part(instance, decision, price_of(notices.prices, instance, decision), who, now)
    return Telling(notice, live.Live((part,)).message(), clear, part=part, who=who, change=cancelled(decision, now))


def price_of(prices: PriceBook, instance: Instance, decision: Decision) -> Price:
    """What a stop saves each hour: on the bill where the decision was priced on it, else the list price."""
    if decision.bill is not None:
        return Price(decision.bill.usd_per_hour, "bill", on_demand=decision.bill.on_demand)
    return prices.hourly(instance.instance_type, instance.region)


def kept_since(instance: Instance, told: datetime, now: datetime) -> bool:
    """Whether a person kept the machine from Slack since its warning was told (`costguard:kept-by`): the keep took
    the warning's tags off and said so in its message, so the warning's record is no untagged warning to complete
    or withdraw. (A keep or an exemption set by tag says nothing in the message: the warning is withdrawn.)"""
    if tags.KEPT_BY not in instance.tags:
        return False
    until = formatting.parse_time(instance.tags.get(tags.KEEP_UNTIL))
    busy = formatting.parse_time(instance.tags.get(tags.KEEP_WHILE_BUSY))
    return (until is not None and until > now) or (busy is not None and busy >= told)


def withdrew(told: Notice | None, instance: Instance) -> bool:
    """Whether a withdrawal told (its record, kept for a while) is of the warning the machine carries now: a record
    of an earlier warning of it (withdrawn, then the machine warned again) tells nothing of this one."""
    return told is not None and told.at == instance.tags.get(tags.IDLE_WARNED_AT)


def cancelled_already(
    instance: Instance, decision: Decision, outcome: Outcome, writes: PendingWrites, cancel: Notice | None
) -> Outcome | None:
    """A stop decided on a warning whose stop a sweep cancelled and said so in its message ("at work after all: not
    stopped", `cancel` its record), its clear refused or never made (the sweep ended): the tags it left are no
    warning any more, since the message promised a warning again before any stop. Cleared now, as the cancel would
    have (its record under the warning), and no stop. The machine's outcome; None for any other decision."""
    if cancel is None or decision.action is not Action.STOP or not withdrew(cancel, instance):
        return None
    cancelled_stop = replace(outcome, action=Action.CANCEL_STOP, reason=why_withdrawn(cancel))
    writes.clear(instance, cancelled_stop)
    return cancelled_stop


def by_machine(tellings: Sequence[Telling], told: Mapping[str, Settled]) -> dict[str, Settled]:
    """What became of these tellings, by their machines."""
    return {t.notice.instance_id: told[t.notice.sk] for t in tellings if t.notice.sk in told}


def out_of_time(decision: Decision, told: Notice | None, time_left: float) -> bool:
    """Slack work (a warning, a stop and its notice, a cancelled stop) is left to the next sweep when this
    one is nearly out of time: what was delivered is recorded, and the run ends normally."""
    needs_slack = decision.action in (Action.WARN, Action.STOP, Action.CANCEL_STOP) and told is None
    return needs_slack and time_left < SLACK_RESERVE_SECONDS
