"""The sweep's outbox, acted on: effects told to nobody, recorded exactly once, and what a dead attempt left.

Effects nobody is told about, recorded exactly once: a working-hours start and a change of scale-in
protection.

Each is kept in the outbox (`pending`, held by the attempt until its deadline) before its call, and
once the call is made its record goes in one write with the ledger entry it proves. A sweep that finds
the record of an attempt that died in between proves the effect from AWS's own record (the machine was
started after the decision; the group's member is protected as decided) and writes the entry then;
otherwise it drops the record: the effect did not happen, and the sweep decides again. So a kill costs
neither the record of an effect that happened nor a record of one that did not, and the entry is keyed
by the effect (its decision travels in the record), so whichever attempt writes it writes it once.

What a dead attempt left, finished by the next sweep from the outbox before it decides anything:

- a notice leased for sending whose lease ran out may have been posted: it is looked for in Slack's
  history (by its block id) and, found, recorded as delivered without a second post (a warning's message
  kept too, to be changed later: the sweep completes or withdraws it, acts/shown.py); a warning not
  found is dropped, and the machine is judged anew;
- a stop whose notice is still in the outbox is told only once AWS's own record proves that this stop
  happened: the machine's `costguard:stopped-at` (written right after it) is this stop's time, or
  the machine stopped (StateTransitionReason) or started again after the stop was decided; otherwise
  the notice is dropped as superseded (another stop, or none);
- delivered warnings past their time are removed (and delivered reports past their day), but for one whose
  machine runs without its tags (refused for longer than that): still the warning, the sweep completes or
  withdraws it;
- an effect told to nobody (a working-hours start, a change of scale-in protection) whose attempt
  died is recorded once AWS shows it happened, else dropped;
- a withdrawn warning whose message an earlier sweep could not change to say so is changed now
  (acts/shown.py), before anything is decided.

Dry-run keeps reports only: a stop or a warning left from another mode waits for a mode that tells
owners (dry-run tells nobody but the alerts channel, and changes nothing).
"""

from __future__ import annotations

import contextlib
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.clock import forever
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import AWS_ERRORS, delivered, lease_length
from costguard.idle.acts.shown import show_unsaid
from costguard.idle.acts.writes import Stopped, SweepWriter
from costguard.idle.report import Outcome
from costguard.idle.rules.decision import Action
from costguard.idle.rules.restarts import SKEW, proves_stop, started_after
from costguard.slack.live import Live, Part
from costguard.slack.notifier import Delivery, SlackNotifier
from costguard.state.entries import Entry
from costguard.state.live import LiveMessages
from costguard.state.outbox import (
    CANCEL,
    DELIVERED,
    EFFECTS,
    PENDING,
    PROTECT,
    REPORTS,
    SENDING,
    START,
    STOP,
    UNSAID,
    WARN,
    Notice,
    Outbox,
    entry_json,
)

# A post Slack's history cannot confirm (the read fails) holds its machine this long after its lease ran out,
# each sweep looking again; then it is judged anew (a warning may be told again, an owner warned twice).
UNCONFIRMED_FOR = timedelta(hours=2)


def effect_record(
    kind: str, instance: Instance, at: datetime, entry: Entry, *, now: datetime, group: str = ""
) -> Notice:
    """One effect's record: keyed by what it does to which machine (`at`: the opening a start is for, the
    launch a protection change belongs to), carrying its decision time and its ledger entry."""
    return Notice(
        kind,
        instance.instance_id,
        formatting.format_time(at),
        owner=entry.owner,
        decided=formatting.format_time(now),
        entry=entry_json(entry),
        group=group,
    )


class Effects:
    def __init__(
        self,
        *,
        outbox: Outbox,
        ec2: Ec2,
        autoscaling: AutoScaling,
        time_left: Callable[[], float] = forever,
        token: str = "",
    ) -> None:
        self.outbox, self.ec2, self.autoscaling = outbox, ec2, autoscaling
        self.time_left = time_left
        self.token = token or uuid.uuid4().hex

    def before(self, records: Sequence[Notice], now: datetime) -> list[Notice]:
        """Kept before their calls, held until this attempt's deadline. Raises what DynamoDB raised: no
        record, no call."""
        until = now + lease_length(self.time_left())
        held = [r.leased(self.token, until, status=PENDING) for r in records]
        if held:
            self.outbox.add(held)
        return held

    def after(self, records: Sequence[Notice]) -> None:
        """Made: each record goes with its ledger entry, in one write. A failure leaves them for the next
        sweep, which proves them from AWS's record."""
        if not records:
            return
        try:
            self.outbox.told(records)
        except AWS_ERRORS as exc:
            logger.warning("effects left for the next sweep to record", count=len(records), error=str(exc)[:200])

    def drop(self, records: Sequence[Notice]) -> None:
        """Their calls failed: nothing happened (a record left behind is dropped by the next sweep)."""
        with contextlib.suppress(*AWS_ERRORS):
            self.outbox.remove(records)

    def recover(self, records: Sequence[Notice], now: datetime) -> list[tuple[Instance, datetime]]:
        """What attempts that died left: each effect AWS shows happened is recorded, the rest dropped. A
        record still held (its attempt may be running) is left alone. The starts proven and recorded, each
        with the opening it was for (their owners may be told)."""
        expired = [r for r in records if not r.live(now)]
        if not expired:
            return []
        starts = [r for r in expired if r.kind == START]
        changes = [r for r in expired if r.kind != START]
        try:
            machines = {i.instance_id: i for i in self.ec2.describe([r.instance_id for r in starts])} if starts else {}
            protected = self.autoscaling.protection({r.group for r in changes if r.group}) if changes else {}
        except AWS_ERRORS as exc:
            logger.warning("effects left for the next sweep to prove", count=len(expired), error=str(exc)[:200])
            return []
        proven = [r for r in starts if started_after(machines.get(r.instance_id), r.decided_time)]
        proven += [r for r in changes if protected.get(r.instance_id) is (r.kind == PROTECT)]
        dropped = [r for r in expired if r not in proven]
        for record in proven:
            logger.info("recording an effect a dead sweep made", instance_id=record.instance_id, kind=record.kind)
        try:
            if proven:
                self.outbox.told(proven)
            if dropped:
                self.outbox.remove(dropped)
        except AWS_ERRORS as exc:
            logger.warning("effects left for the next sweep to record", count=len(expired), error=str(exc)[:200])
            return []
        return [(machines[r.instance_id], r.time) for r in proven if r.kind == START and r.instance_id in machines]


@dataclass
class Recovered:
    """What the outbox says before a sweep decides: warnings delivered whose tags may be missing, warnings
    withdrawn whose clear may be missing, machines another attempt is telling about right now, and the
    stops a dead attempt made that are still to be told."""

    told: dict[str, Notice] = field(default_factory=dict)
    withdrawn: dict[str, Notice] = field(default_factory=dict)
    busy: set[str] = field(default_factory=set)
    stops: Stopped = field(default_factory=list)
    started: list[tuple[Instance, datetime]] = field(default_factory=list)  # working-hours starts proven late
    reported: set[str] = field(default_factory=set)  # reports delivered and still standing (their keys)


class Recovery:
    def __init__(
        self,
        *,
        ec2: Ec2,
        outbox: Outbox,
        notifier: Callable[[], SlackNotifier],
        mode: Mode,
        writer: SweepWriter,
        effects: Effects,
        live: LiveMessages | None = None,
    ) -> None:
        self.ec2 = ec2
        self.outbox = outbox
        self.notifier = notifier
        self.mode = mode
        self.writer = writer
        self.effects = effects
        self.live = live or LiveMessages(outbox.client, outbox.table, notifier)

    def run(self, now: datetime) -> Recovered:
        records = self.outbox.read()
        recovered = Recovered()
        dry = self.mode is Mode.DRY_RUN
        unsaid = [n for n in records if n.kind == UNSAID]
        records = [n for n in records if n.kind != UNSAID]
        if unsaid and not dry:
            show_unsaid(self.live, self.outbox, self._withdrawn_for_good(unsaid))
        if not dry:
            recovered.started = self.effects.recover([n for n in records if n.kind in EFFECTS], now)
        notices = [n for n in records if n.kind in REPORTS or (n.kind not in EFFECTS and not dry)]
        recovered.reported = {n.sk for n in notices if n.kind in REPORTS and n.status == DELIVERED and n.live(now)}
        stale = [n for n in notices if n.status == DELIVERED and not n.live(now)]
        # A warning told whose tags never made it (refused for longer than its record is kept) is still the
        # warning: kept for the sweep to complete or withdraw, not forgotten (its machine would be warned again,
        # and the first message left promising a stop).
        # A withdrawal told (a cancelled stop: "at work after all") whose clear was refused for longer than its
        # record is kept: its running machine still carries the warning it withdrew, and the record is what keeps
        # a sweep from stopping it on those tags (notices.cancelled_already); kept until they come off.
        kept = self._still_standing([n for n in stale if n.kind in (WARN, CANCEL)])
        stale = [n for n in stale if n not in kept]
        open_ = [n for n in notices if n.status != DELIVERED]
        recovered.busy = {n.instance_id for n in open_ if n.live(now)}
        expired = [n for n in open_ if not n.live(now)]
        found, unread = self._look([n for n in expired if n.status == SENDING])
        settled = [n for n in expired if n.kind != STOP and n.sk in found]
        # A post Slack's history could not confirm either way: its machine waits for the next sweep to look
        # again (a warning forgotten would be told twice, the first with no record), until it is too old.
        waiting = [n for n in expired if n.kind != STOP and n.sk in unread and not unconfirmed_too_long(n, now)]
        recovered.busy |= {n.instance_id for n in waiting}
        dropped = [n for n in expired if n.kind != STOP and n.sk not in found and n not in waiting]
        try:
            if settled:  # posted before the attempt died: recorded now, with their ledger entries
                self.outbox.delivered([delivered(n, found[n.sk], now) for n in settled])
        except AWS_ERRORS as exc:
            # Posted, but not recorded yet: these machines are left alone until the next sweep records them.
            logger.warning("outbox left as it was for the next sweep", error=str(exc)[:200])
            recovered.busy |= {n.instance_id for n in settled}
            settled = []
        try:  # apart: a cleanup refused does not undo the records just written (their messages kept below)
            if stale or dropped:
                self.outbox.remove(stale + dropped)
        except AWS_ERRORS as exc:
            logger.warning("old outbox records left for the next sweep", error=str(exc)[:200])
        recovered.reported |= {n.sk for n in settled if n.kind in REPORTS}
        self._keep([n for n in settled if n.kind == WARN], found, now)
        self._keep_lost([n for n in notices if n.kind == WARN and n.status == DELIVERED and n not in stale], now)
        for notice in [n for n in notices if n.status == DELIVERED and n not in stale] + settled:
            (recovered.told if notice.kind == WARN else recovered.withdrawn if notice.kind == CANCEL else {})[
                notice.instance_id
            ] = notice
        recovered.stops = self._stops([n for n in expired if n.kind == STOP], found)
        return recovered

    def _withdrawn_for_good(self, records: list[Notice]) -> list[Notice]:
        """The withdrawals to show: those whose machine no longer carries the warning they withdrew. One kept
        before its sweep's writes (acts/shown.py's before_writes) whose sweep ended before its clear left the
        warning standing: it is not shown (the sweep judges the standing warning afresh: its stop keeps the
        message's promise, or it is withdrawn again), and its record goes. None when EC2 cannot say: shown by a
        sweep that can."""
        try:
            machines = {i.instance_id: i for i in self.ec2.describe(sorted({r.instance_id for r in records}))}
        except AWS_ERRORS as exc:
            logger.warning("withdrawn warnings kept until their machines can be read", error=str(exc)[:200])
            return []
        standing = [r for r in records if _still_warned(machines.get(r.instance_id), r.time)]
        if standing:
            logger.info("withdrawals whose clear was never made, dropped", count=len(standing))
            with contextlib.suppress(*AWS_ERRORS):
                self.outbox.remove(standing)
        return [r for r in records if r not in standing]

    def _still_standing(self, records: list[Notice]) -> list[Notice]:
        """Of stale warnings and withdrawals told, those still standing, their machines read in one call: a warning
        whose machine runs, since before it, without its tags or a later warning's (an older warning's tags are not
        its: its message promised no stop, say); a withdrawal whose running machine still carries the warning it
        withdrew (its warned-at). All of them when EC2 cannot say (kept for a sweep that can)."""
        if not records:
            return []
        try:
            # each machine asked once: one may have a stale warning and a stale withdrawal of it both
            machines = {i.instance_id: i for i in self.ec2.describe(sorted({n.instance_id for n in records}))}
        except AWS_ERRORS as exc:
            logger.warning("told warnings and withdrawals kept until their machines can be read", error=str(exc)[:200])
            return list(records)

        def standing(n: Notice, machine: Instance) -> bool:
            if n.kind == WARN:
                return machine.launch_time <= n.time and not tagged_since(machine, n.time)
            return machine.tags.get(tags.IDLE_WARNED_AT) == n.at

        return [
            n
            for n in records
            if (machine := machines.get(n.instance_id)) is not None
            and machine.state == "running"
            and standing(n, machine)
        ]

    def _keep(self, warnings: list[Notice], found: dict[str, Delivery], now: datetime) -> None:
        """Warnings found in Slack's history, posted by an attempt that died before it kept their message: kept
        now, drawn from their parts (one message per post), so that a sweep that will not carry one out can
        say so in it (acts/shown.py). A message kept already is left as it is."""
        posts: dict[tuple[str, str], list[Part]] = defaultdict(list)
        for notice in warnings:
            delivery, part = found[notice.sk], notice.live_part
            if part is not None and delivery.ts:
                posts[delivery.channel, delivery.ts].append(part)
        known = self.live.where(p.key for parts in posts.values() for p in parts) if posts else {}
        new = [(at, parts) for at, parts in posts.items() if not any(known.get(p.key) == at for p in parts)]
        if new:
            self.live.record([(Delivery("bot", *at), Live(tuple(parts))) for at, parts in new], now)

    def _keep_lost(self, warnings: list[Notice], now: datetime) -> None:
        """Warnings delivered and recorded whose message was never kept (every write of its record refused): kept
        now, drawn from their parts as the posts found are (_keep). Else the latest message kept for the machine
        is an older one (an earlier warning, saying "At work" already), and a withdrawal of this warning would
        change that one, counted as shown, while this one goes on promising its stop. A machine whose latest kept
        message is this one, or a later one, is left as it is."""
        posts: dict[tuple[str, str], list[Part]] = defaultdict(list)
        for notice in warnings:
            part = notice.live_part
            if part is not None and notice.to and notice.ts:
                posts[notice.to, notice.ts].append(part)
        if posts:
            self.live.kept_again([(at, Live(tuple(parts))) for at, parts in posts.items()], now)

    def _look(self, notices: list[Notice]) -> tuple[dict[str, Delivery], set[str]]:
        """The notices Slack's history shows were posted, by their key (one read per recipient), and those whose
        recipient's history could not be read (their keys): a warning among them waits for the next sweep to
        look again, a stop's notice is posted again."""
        by_recipient: dict[str, list[Notice]] = defaultdict(list)
        for notice in notices:
            if notice.to and notice.marker:
                by_recipient[notice.to].append(notice)
        found: dict[str, Delivery] = {}
        unread: set[str] = set()
        for to, group in by_recipient.items():
            since = min(n.decided_time for n in group) - SKEW
            try:
                seen = self.notifier().find(to, since.timestamp(), {n.marker for n in group})
            except SlackDeliveryError as exc:
                logger.warning("lost posts not confirmed yet", to=to, count=len(group), error=str(exc)[:200])
                unread |= {n.sk for n in group}
                continue
            found.update({n.sk: seen[n.marker] for n in group if n.marker in seen})
        return found, unread

    def _stops(self, left: list[Notice], found: dict[str, Delivery]) -> list[tuple[Instance, Outcome, Notice]]:
        """Stops a dead attempt made: proven ones recorded (tag, ledger) and returned to be told, or, already
        told, recorded as such; the rest dropped."""
        if not left:
            return []
        machines = {i.instance_id: i for i in self.ec2.describe([n.instance_id for n in left])}
        proven = [
            n
            for n in left
            if proves_stop(machines.get(n.instance_id), warned=n.time, decided=n.decided_time, key=n.decided or n.at)
        ]
        to_tell = []
        for notice in proven:
            instance = machines[notice.instance_id]
            logger.info("finishing a stop a dead sweep left", instance_id=instance.instance_id, at=notice.decided)
            outcome = Outcome(instance.instance_id, instance.instance_type, notice.owner, Action.STOP, "recovered")
            written = formatting.parse_time(instance.tags.get(tags.STOPPED_AT))
            if instance.state in ("stopping", "stopped") and (written is None or written < notice.time):
                self.writer.tag_stopped([instance.instance_id], notice.decided_time)
            self.writer.record_stops([(instance, outcome, notice)])
            to_tell.append((instance, outcome, notice))
        told = [n for n in proven if n.sk in found]
        dropped = [n for n in left if n not in proven]
        try:
            if told:
                self.outbox.told(told)
            if dropped:
                self.outbox.remove(dropped)
        except AWS_ERRORS as exc:
            logger.warning("outbox left as it was for the next sweep", error=str(exc)[:200])
            return []
        return [s for s in to_tell if s[2].sk not in found]


def unconfirmed_too_long(notice: Notice, now: datetime) -> bool:
    """A post whose lease ran out this long ago and that Slack's history still cannot confirm is judged anew."""
    return now - datetime.fromtimestamp(notice.lease_until, tz=UTC) > UNCONFIRMED_FOR


def tagged_since(instance: Instance, told: datetime) -> bool:
    """Whether the machine carries the tags of this warning (told at `told`) or of a later one. The tags of an older
    warning (one that promised no stop, say) are not this one's: its record is the warning, to complete or
    withdraw."""
    tagged = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    return tagged is not None and tagged >= told


def _still_warned(machine: Instance | None, withdrawn_at: datetime) -> bool:
    """Whether `machine` still carries a warning given before its withdrawal at `withdrawn_at`: the withdrawal's
    clear was never made."""
    if machine is None:
        return False
    warned = formatting.parse_time(machine.tags.get(tags.IDLE_WARNED_AT))
    return warned is not None and warned <= withdrawn_at
