"""A sweep's notices delivered: each machine's notice leased in the outbox, posted, and its delivery
recorded with its ledger entry, so that a kill anywhere costs at most the message it was posting.

The unit Slack delivers is one message to one recipient (an owner's direct messages, or the alerts
channel for machines whose owner Slack cannot reach); the unit costguard records is one machine's
notice: its own outbox record, lease and ledger entry. Messages to different recipients go out eight
at a time; one recipient's in order.

A warning, a stop or a withdrawn warning is live (slack/live.py): a message posted is kept (state/live.py)
so that a click or a later event changes its machine's part in place. A withdrawn warning is told by
changing the warning itself, where it can be (an edit, done again as often as asked, changes nothing
more); a stop changes its warning to say so, and its notice then goes out as a reply under it, without
the buttons the warning now shows. Where the warning cannot be changed (not kept, or Slack refused), each
is told in a message of its own, as before.
"""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.people import owner_email
from costguard.idle.report import Settled, Status
from costguard.idle.words.grouping import Gathered, Part, gather
from costguard.slack.blocks import Message, Mrkdwn, context, join, person
from costguard.slack.live import Change, Live, part_json
from costguard.slack.live import Part as LivePart
from costguard.slack.notifier import Delivery, SlackNotifier, not_reached
from costguard.state.ledger import LedgerWriteError
from costguard.state.live import LiveMessages, Where
from costguard.state.outbox import DELIVERED, NOT_STOPPED, REPORTS, STOP, WARN, WOULD_WARN, Notice, Outbox, unsaid

# Slack messages of a sweep go out this many at a time: a sweep that stops 1,000 machines may tell 200
# owners, and Slack answers in 100-300 ms from AWS, too slow one by one for the timeout.
NOTIFY_WORKERS = 8
# A delivered warning stays in the outbox this long: a sweep killed before its tags is finished from it.
TOLD_FOR = timedelta(minutes=40)
REPORT_HOLD = timedelta(days=2)  # a stop notify-only does not make, reported once in this long
# What a lease lasts when the invocation's deadline is unknown: longer than any sweep runs (300 s).
DEFAULT_LEASE = timedelta(minutes=6)
MAX_LEASE = timedelta(minutes=15)
# Slack work a sweep no longer starts when its invocation has less than this left: enough for the
# messages already under way (a lookup and a post, with Slack's retries), the EC2 writes and the ledger.
SLACK_RESERVE_SECONDS = 60.0
DEFERRED = "deferred: too little time left in this run; the next sweep carries on"
IN_FLIGHT = "in flight: another attempt is telling it"
AWS_ERRORS = (ClientError, BotoCoreError, LedgerWriteError)


@dataclass
class Telling:
    """One machine's notice to its owner: its record, its message, and what its delivery makes happen (a
    warning's tags, a withdrawn warning's clear). A live notice has its machine's part (`who`: its owner as
    the message addresses them); one told by changing an earlier message has the `change`; a stop told
    under its warning, which shows it already, is a reply to it (`reply_to`)."""

    notice: Notice
    message: Message
    then: Callable[[], None] = field(default=lambda: None)
    part: LivePart | None = None
    who: str = ""
    change: Change | None = None
    reply_to: Where | None = None


Told = dict[str, Settled]  # by notice key: the tellings not delivered, and why (a delivered one is not in it)


def marker(kind: str, instance_id: str, at: str) -> str:
    """The block id of one machine's notice: found in Slack's history, it proves the post happened."""
    return f"cg-{kind}-{instance_id}-{at.replace('-', '').replace(':', '')}"


def lease_length(time_left: float) -> timedelta:
    """Until the invocation's own deadline: after it, no attempt that took the lease can still post."""
    if time_left == float("inf"):
        return DEFAULT_LEASE
    return min(MAX_LEASE, timedelta(seconds=max(0.0, time_left)))


class Dispatch:
    def __init__(
        self,
        *,
        outbox: Outbox,
        notifier: Callable[[], SlackNotifier],
        alerts_channel: str,
        email_domain: str,
        time_left: Callable[[], float],
        token: str = "",
        live: LiveMessages | None = None,
    ) -> None:
        self.token = token or uuid.uuid4().hex  # this attempt's: its leases, and its stops' pending records
        self.live = live  # where live messages are kept (None: nothing changes in place)
        self.outbox = outbox
        self.notifier = notifier
        self.alerts_channel = alerts_channel
        self.email_domain = email_domain
        self.time_left = time_left
        self._unrecorded: list[tuple[Notice, bool]] = []  # delivered, record not written yet
        self._lock = threading.Lock()

    def send(self, tellings: Sequence[Telling], now: datetime) -> Told:
        """Every telling delivered, or left for the next sweep (returned, with why), recipients eight at a
        time; the records whose write failed are tried once more at the end."""
        by_recipient: dict[str, list[Telling]] = defaultdict(list)
        for telling in tellings:  # a report names its channel; a notice goes to its machine's owner
            by_recipient[telling.notice.to or self.recipient(telling.notice.owner)].append(telling)
        told: Told = {}
        # Oldest first: a notice Slack held back (its rate limits, an outage) goes out before this sweep's own.
        oldest = sorted(by_recipient.items(), key=lambda sent: min(t.notice.decided_time for t in sent[1]))
        with ThreadPoolExecutor(max_workers=NOTIFY_WORKERS, thread_name_prefix="notify") as pool:
            for done in [pool.submit(self._send_to, to, group, now) for to, group in oldest]:
                told.update(done.result())
        self.record_late()
        return told

    def recipient(self, owner: str) -> str:
        """Where an owner's notices go: their Slack id, or the alerts channel when Slack cannot reach them."""
        email = owner_email(owner, self.email_domain) if owner else None
        user = self.notifier().user_id_for(email) if email else None
        return user or self.alerts_channel

    def messages(self, to: str, tellings: Sequence[Telling]) -> list[tuple[Gathered, list[Telling], Where | None]]:
        return messages_for(tellings, channel=to == self.alerts_channel)

    def _send_to(self, to: str, tellings: list[Telling], now: datetime) -> Told:
        told: Told = {}
        changes = [t for t in tellings if t.change is not None]
        if changes and self.time_left() >= SLACK_RESERVE_SECONDS:
            left = self._changed(self._lease(to, changes, now, told), now)
            for gathered, carried, reply in self.messages(to, left):  # leased already: told as messages
                told.update(self._deliver(to, gathered, carried, now, reply))
        elif changes:
            told.update(dict.fromkeys((t.notice.sk for t in changes), Settled(Status.DEFERRED, DEFERRED)))
        for gathered, carried, reply in self.messages(to, [t for t in tellings if t.change is None]):
            if self.time_left() < SLACK_RESERVE_SECONDS:
                told.update(dict.fromkeys((t.notice.sk for t in carried), Settled(Status.DEFERRED, DEFERRED)))
                continue
            taken = self._lease(to, carried, now, told)
            if len(taken) == len(carried):
                told.update(self._deliver(to, gathered, taken, now, reply))
                continue
            for fewer, part, again in self.messages(to, taken):  # some are another attempt's: the others, again
                told.update(self._deliver(to, fewer, part, now, again))
        return told

    def _changed(self, tellings: list[Telling], now: datetime) -> list[Telling]:
        """Notices told by changing their machine's part of an earlier message, recorded; those whose message
        could not be changed are returned, to be told as messages of their own."""
        done, left, found = changed_in_place(self.live, tellings, now)
        if done:
            self._record(done)
        self._unsaid(left, now, found)
        return left

    def _unsaid(self, tellings: list[Telling], now: datetime, found: Mapping[str, Where]) -> None:
        """Withdrawals whose warnings could not be changed (told in messages of their own): each warning kept to
        be changed by the next sweep that can (acts/shown.py), so that it stops promising its stop. Where a warning
        is was `found` already, unless its read failed (read again). Never raises."""
        if not tellings or self.live is None:
            return
        unknown = [t.notice.instance_id for t in tellings if t.notice.instance_id not in found]
        where = {**(self.live.where(unknown) if unknown else {}), **found}
        left = [
            unsaid(t.notice.instance_id, where[t.notice.instance_id], why_withdrawn(t.notice), now)
            for t in tellings
            if t.notice.instance_id in where
        ]
        if not left:
            return
        try:
            self.outbox.add(left)
        except AWS_ERRORS as exc:
            logger.warning("withdrawn warnings not shown, nor kept to be", count=len(left), error=str(exc)[:200])

    def _lease(self, to: str, tellings: list[Telling], now: datetime, told: Told) -> list[Telling]:
        """The tellings whose records this attempt now holds (their notices as leased); the others are
        another attempt's to tell, or left for the next sweep (in `told`)."""
        until = now + lease_length(self.time_left())
        try:
            taken = self.outbox.lease([kept(t.notice, t, to).leased(self.token, until) for t in tellings], now)
        except AWS_ERRORS as exc:
            told.update(dict.fromkeys((t.notice.sk for t in tellings), Settled.retry(f"outbox: {exc}")))
            return []
        held = {n.sk: n for n in taken}
        told.update({t.notice.sk: Settled(Status.IN_FLIGHT, IN_FLIGHT) for t in tellings if t.notice.sk not in held})
        return [replace(t, notice=held[t.notice.sk]) for t in tellings if t.notice.sk in held]

    def _deliver(
        self, to: str, gathered: Gathered, tellings: list[Telling], now: datetime, reply: Where | None = None
    ) -> Told:
        try:
            delivery = self._post(to, gathered.message, tellings, reply)
        except SlackDeliveryError as exc:
            if not exc.maybe_delivered:
                self._release([t.notice for t in tellings if t.notice.kind != STOP])
            return dict.fromkeys((t.notice.sk for t in tellings), Settled.retry(f"Slack: {exc}"))
        for telling in tellings:
            telling.then()
        # The message kept for its later changes first, then its record: a warning recorded is one a later sweep
        # may have to withdraw, in place (acts/shown.py), so its message must be found by then. A kill between
        # the two leaves a message kept and not recorded: the next sweep finds the post in Slack's history.
        if gathered.live is not None and self.live is not None and reply is None:
            alone = to == self.alerts_channel and len(tellings) == 1
            noted = alone or (to != self.alerts_channel and not delivery.direct)  # sent to the channel, said why
            owner = tellings[0].notice.owner
            self.live.record([(delivery, as_posted(gathered.live, owner, noted=noted, known=not alone))], now)
        self._record([delivered(t.notice, delivery, now) for t in tellings])
        return {}

    def _post(self, to: str, message: Message, tellings: list[Telling], reply: Where | None = None) -> Delivery:
        notifier = self.notifier()
        if reply is not None:  # under the message that shows it already
            return notifier.post(reply[0], message, thread_ts=reply[1], broadcast=True)
        if to == self.alerts_channel and (len(tellings) > 1 or tellings[0].notice.kind in REPORTS):
            return notifier.post(to, message)  # a report, or a gathered message that says why it is here
        owner = tellings[0].notice.owner
        email = owner_email(owner, self.email_domain) if owner else None
        return notifier.send_to_owner(email, message, fallback_channel=self.alerts_channel, owner=owner)

    def _record(self, records: list[Notice]) -> None:
        stops = [n for n in records if n.kind == STOP]
        told = [n for n in records if n.kind != STOP]
        for notices, removed in ((stops, True), (told, False)):
            if not notices:
                continue
            try:
                (self.outbox.told if removed else self.outbox.delivered)(notices)
            except AWS_ERRORS as exc:
                # Posted, not recorded: tried again at the end of the sweep; failing that, the next sweep
                # finds the lease run out and the message in Slack's history, and records it then.
                logger.warning("notice delivered but not recorded yet", count=len(notices), error=str(exc)[:200])
                with self._lock:
                    self._unrecorded += [(n, removed) for n in notices]

    def record_late(self) -> None:
        with self._lock:
            late, self._unrecorded = self._unrecorded, []
        for removed in (True, False):
            notices = [n for n, r in late if r is removed]
            if not notices:
                continue
            try:
                (self.outbox.told if removed else self.outbox.delivered)(notices)
            except AWS_ERRORS as exc:
                logger.warning("notices left to the next sweep to record", count=len(notices), error=str(exc)[:200])

    def _release(self, notices: list[Notice]) -> None:
        """Leases of posts Slack refused outright: the next sweep need not look for them."""
        try:
            self.outbox.remove(notices)
        except AWS_ERRORS as exc:
            logger.warning("lease not released; the next sweep looks first", error=str(exc)[:200])


def why_withdrawn(notice: Notice) -> str:
    """Why a warning was withdrawn, as its notice's ledger entry says."""
    entry = notice.ledger_entry
    return entry.reason if entry is not None and entry.reason else "its warning no longer holds"


def kept(notice: Notice, telling: Telling, to: str) -> Notice:
    """A notice as leased: where it goes, and a warning's live part (marked as its message shows it), so that a
    sweep that finds the post in Slack's history, its sender dead, keeps the message to change it later."""
    if notice.kind != WARN or telling.part is None:
        return replace(notice, to=to)
    return replace(notice, to=to, part=part_json(replace(telling.part, marker=notice.marker)))


def changed_in_place(
    live: LiveMessages | None, tellings: list[Telling], now: datetime
) -> tuple[list[Notice], list[Telling], dict[str, Where]]:
    """The notices told by changing their machines' parts of earlier messages (as delivered), the tellings whose
    messages could not be changed, and where the messages found are (by machine)."""
    where = live.where(t.notice.instance_id for t in tellings) if live is not None and tellings else {}
    asked = [
        (where[t.notice.instance_id], t.notice.instance_id, t.change)
        for t in tellings
        if t.change is not None and t.notice.instance_id in where
    ]
    changed = live.change_many(asked) if live is not None else set()
    done, left = [], []
    for telling in tellings:
        if telling.notice.instance_id in changed:
            telling.then()
            done.append(delivered(telling.notice, Delivery("bot", *where[telling.notice.instance_id]), now))
        else:
            left.append(telling)
    return done, left, where


def as_posted(message: Live, owner: str, *, noted: bool, known: bool) -> Live:
    """A live message as it went out: sent to the channel instead, it carries the note saying why
    (notifier.send_to_owner), and keeps it when it changes."""
    return replace(message, extra=(context(not_reached(owner, known=known)),)) if noted else message


def messages_for(tellings: Sequence[Telling], *, channel: bool) -> list[tuple[Gathered, list[Telling], Where | None]]:
    """The messages that carry these tellings to one recipient: one of each kind of notice (split only
    by Block Kit's limits), a part per machine; stops told under one warning are one reply to it."""
    kinds: dict[tuple[str, Where | None], list[Telling]] = defaultdict(list)
    for telling in tellings:  # the sweep's reports (dry-run, notify-only) are one message
        kind = "report" if telling.notice.kind in REPORTS else telling.notice.kind
        kinds[kind, telling.reply_to].append(telling)
    out = []
    for (kind, reply), group in kinds.items():
        parts = [Part(t.message, t.notice.marker, t.notice.kind, t.part, t.who) for t in group]
        why = why_here(group) if channel and kind != "report" else ""
        for gathered in gather(parts, channel=channel, why=why):
            out.append((gathered, [group[k] for k in gathered.carried], reply))
    return out


def why_here(tellings: Sequence[Telling]) -> Mrkdwn:
    """Why machines are in the alerts channel: their owners, as Slack cannot reach them (by name only)."""
    owners = sorted({person(t.notice.owner) for t in tellings} - {""})
    unowned = sum(1 for t in tellings if not person(t.notice.owner))
    who = owners[:10] + ([Mrkdwn(f"{len(owners) - 10} more")] if len(owners) > 10 else [])
    if unowned:
        who.append(Mrkdwn(f"{unowned} machine{'s' if unowned != 1 else ''} with no owner costguard can name"))
    return Mrkdwn("Here because Slack cannot reach their owners: ") + join(", ", who) + Mrkdwn(".")


def delivered(notice: Notice, delivery: Delivery, now: datetime) -> Notice:
    """A notice as recorded once delivered: a warning then blocks another for TOLD_FOR; a would-be
    warning of dry-run stands for its day, a stop notify-only does not make for as long as a warning may
    (each machine reported once, not every sweep)."""
    if notice.kind == WOULD_WARN:
        until = notice.time + timedelta(days=1)
    elif notice.kind == NOT_STOPPED:
        until = now + REPORT_HOLD
    else:
        until = now + TOLD_FOR
    held = int(until.timestamp())
    return replace(notice, status=DELIVERED, ts=delivery.ts, to=delivery.channel, lease_until=held, token="")
