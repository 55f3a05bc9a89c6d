"""Machines up before their work: a stopped machine with a `costguard:schedule` is started when its
next window opens within the lead (15 minutes by default), once per window; with MorningNote, its owner
is told. A machine costguard stopped between the runs of recurring work it learned carries
`costguard:start-at` (that run's time less the lead) and is started then, once.

Only then: a machine someone stopped inside its hours stays stopped, and one whose schedule cannot be
read is not started (the sweep tells its owner when it runs). A learned start is made only for the stop
costguard made (its `costguard:stopped-at`, after the machine's last start: nobody started and stopped it
since), only while the run can still be met (up to an hour after its time), and never when its owner
turned learned starts off; a start-at that is not honoured is taken off. Dry-run starts nothing and says
what it would have started.

Each start is recorded once, whatever is killed when. A working-hours start is kept in the outbox from
before its StartInstances until its ledger entry is written (idle/acts/outbox.py); once per window because a
machine started in its window's lead is never started again for it (its launch time says so). A learned
start writes nothing before its StartInstances, so that no storm on the state table makes a nightly run
find its machine stopped: its start-at stays on the machine until its records are written (the ledger
entry and the start log, keyed by the start), by the sweep that started it, the machine's change to
running, or the next sweep that finds it running with it.

A machine of a scarce type (idle/rules/capacity.py) is started 45 minutes sooner. A start EC2 refuses for
capacity is evidence of scarcity from then on, a `start-failed` ledger entry for the digest, and a message
to the owner at once (once per start); it is tried again at each sweep, while the machine's working hours
are open or its learned run can still be met.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
from costguard.core.working_hours import suggest_from_changes
from costguard.idle.acts.outbox import Effects, effect_record
from costguard.idle.acts.refused import RefusedStarts
from costguard.idle.report import RegionReport, machine_entry
from costguard.idle.rules.capacity import sooner
from costguard.idle.rules.restarts import (
    last_try,
    learned_start_refused,
    made_for,
    still_refused,
    window_close,
    window_to_retry,
    working_hours_start,
)
from costguard.idle.rules.schedule import ScheduleError, parse_schedule
from costguard.idle.rules.trail import Rule
from costguard.idle.words.messages import morning_start_note, schedule_unreadable_notice
from costguard.slack.blocks import Message, Mrkdwn, person
from costguard.state.claims import Claims, ClaimState
from costguard.state.entries import EntryKind
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger, LedgerWriteError, StateTableBusy
from costguard.state.outbox import START
from costguard.state.scarcity import Capacity
from costguard.state.startlog import StartLog, StartRecord

DAY = timedelta(days=1)
WRITE_ERRORS = (ClientError, BotoCoreError, StateTableBusy, LedgerWriteError)


class DueStarts:
    """The stopped machines' starts that are due: before their working hours, a learned run, a job, their
    person's or owner's day (at whatever hour that falls: a 02:00 job's start is made at 01:45)."""

    def __init__(
        self,
        *,
        ec2: Ec2,
        ledger: Ledger,
        effects: Effects,
        policy: IdlePolicy,
        settings: Settings,
        refusals: RefusedStarts,
        starts: StartLog | None = None,
        tell: Callable[[str, Message], None] | None = None,
        who: Callable[[str], Mrkdwn] = person,
    ) -> None:
        self.ec2, self.ledger, self.effects, self.refusals = ec2, ledger, effects, refusals
        self.policy, self.mode, self.owner_tag_key = policy, settings.mode, settings.owner_tag_key
        self.tell = tell  # the morning note, with MorningNote
        self.who = who  # an owner as a message names them
        self.learned = LearnedStarts(
            ec2=ec2, ledger=ledger, policy=policy, settings=settings, refusals=refusals, starts=starts
        )

    def run(self, now: datetime, report: RegionReport, capacity: Capacity) -> None:
        """The stopped machines with working hours or a learned start (one DescribeInstances walk)."""
        filters: list[Any] = [
            {"Name": "instance-state-name", "Values": ["stopped"]},
            {"Name": "tag-key", "Values": [tags.SCHEDULE, tags.START_AT]},
            {"Name": "instance-type", "Values": list(self.policy.accelerator_families)},
        ]
        for instance in self.ec2.iter_instances(filters):
            # The filters narrow the answer; this is what is relied on.
            if instance.state != "stopped" or not self.policy.is_accelerated(instance.instance_type):
                continue
            # One failed write keeps neither this machine's other start nor the other machines from theirs.
            if tags.SCHEDULE in instance.tags:
                self._each(self.working_hours, instance, now, report, capacity)
            if tags.START_AT in instance.tags:
                self._each(self.learned.consider, instance, now, report, capacity)

    @staticmethod
    def _each(
        start: Callable[[Instance, datetime, RegionReport, Capacity], None],
        instance: Instance,
        now: datetime,
        report: RegionReport,
        capacity: Capacity,
    ) -> None:
        try:
            start(instance, now, report, capacity)
        except WRITE_ERRORS as exc:
            logger.warning("start not finished", instance_id=instance.instance_id, error=str(exc)[:200])
            report.retryable_errors.append(f"{instance.instance_id}: {exc}")

    def started(self, instance_id: str, capacity: Capacity) -> None:
        self.learned.started(instance_id, capacity)

    def settle_running(self, running: Sequence[Instance], report: RegionReport, capacity: Capacity) -> None:
        self.learned.settle_running(running, report, capacity)

    def notes(self, started: Sequence[tuple[Instance, datetime]]) -> None:
        """The morning notes of starts a dead sweep made (proven by the next)."""
        for instance, opens in started:
            self.note(instance, opens)

    def working_hours(self, instance: Instance, now: datetime, report: RegionReport, capacity: Capacity) -> None:
        sooner_by = sooner(capacity.scarcity(instance) is not None)
        opens = working_hours_start(instance, now, self.policy, sooner=sooner_by)
        if opens is None:  # not due: unless its hours are open and costguard's start for them was refused
            opens = window_to_retry(instance, now, self.policy, sooner=sooner_by)
            if opens is None or not self.refusals.refused_before(instance, opens, capacity):
                return
        entry = machine_entry(
            instance,
            EntryKind.MORNING_START,
            opens,  # the window it is for: every attempt writes the same entry
            mode=self.mode,
            owner_tag_key=self.owner_tag_key,
            reason=f"its working hours ({instance.tags[tags.SCHEDULE]}) open at {opens:%H:%M} UTC",
            applied=self.mode.mutates,
            rule=Rule.VERDICT,  # its schedule: the verdict's working hours
        )
        try:
            records = self.effects.before([effect_record(START, instance, opens, entry, now=now)], now)
        except WRITE_ERRORS as exc:
            # The state table is busy through the lead: the start is made all the same (once a window, by
            # the machine's launch time), its record written directly if the table lets it. A record may be
            # lost; a machine stopped when its owner's day begins is the dearer loss.
            logger.warning(
                "morning start made without its outbox record", instance_id=instance.instance_id, error=str(exc)[:200]
            )
            records = []
        try:
            applied = self.ec2.start(instance.instance_id)
        except (ClientError, BotoCoreError) as exc:  # no capacity: tried again while its hours are open
            self.effects.drop(records)
            logger.warning("morning start failed", instance_id=instance.instance_id, error=str(exc)[:200])
            until = window_close(instance, opens)
            self.refusals.refused(instance, opens, until, now, exc, capacity)
            return
        report.started.append(instance.instance_id)
        if applied:
            self.note(instance, opens)
        if records:
            self.effects.after(records)
        else:
            self.ledger.record(entry)  # the same key whichever attempt writes it

    def note(self, instance: Instance, opens: datetime) -> None:
        """The optional morning note: the machine is already starting, so a note Slack refused is logged and
        counted, and the start stands (the owner finds the machine running either way)."""
        if self.tell is None:
            return
        owner = instance.owner(self.owner_tag_key)
        try:
            self.tell(owner, morning_start_note(instance, opens, self.who(owner), self.policy.team_timezone))
        except SlackDeliveryError as exc:
            logger.warning("morning note not delivered", instance_id=instance.instance_id, error=str(exc)[:200])
            metrics.add_metric(name="MorningNotesUndelivered", unit=MetricUnit.Count, value=1)


class LearnedStarts:
    """Machines stopped between runs of learned recurring work, started again before the next run."""

    def __init__(
        self,
        *,
        ec2: Ec2,
        ledger: Ledger,
        policy: IdlePolicy,
        settings: Settings,
        refusals: RefusedStarts,
        starts: StartLog | None = None,
    ) -> None:
        self.ec2, self.ledger, self.refusals = ec2, ledger, refusals
        self.policy, self.mode, self.owner_tag_key = policy, settings.mode, settings.owner_tag_key
        self.starts = starts  # the learned starts kept for each machine

    def started(self, instance_id: str, capacity: Capacity) -> None:
        """A machine started by anyone no longer waits for costguard's start: its start-at goes, so that a
        stop by its owner later is never undone by costguard. costguard's own start is recorded first
        (the sweep that made it may have died before)."""
        found = [i for i in self.ec2.describe([instance_id]) if tags.START_AT in i.tags]
        if not found or not self.policy.is_accelerated(found[0].instance_type):
            return
        try:
            self.settle(found[0], capacity)
        except WRITE_ERRORS as exc:  # the start-at stays: the next sweep records it
            logger.warning(
                "learned start left for the next sweep to record", instance_id=instance_id, error=str(exc)[:200]
            )

    def settle_running(self, running: Sequence[Instance], report: RegionReport, capacity: Capacity) -> None:
        """Running machines that still carry a start-at: a learned start whose records a dead sweep (or a
        storm) did not finish, recorded now; or someone else's start, whose start-at goes."""
        for instance in running:
            if tags.START_AT not in instance.tags or not self.policy.is_accelerated(instance.instance_type):
                continue
            try:
                self.settle(instance, capacity)
            except WRITE_ERRORS as exc:
                report.retryable_errors.append(f"{instance.instance_id}: learned start not recorded: {exc}")

    def settle(self, instance: Instance, capacity: Capacity) -> None:
        """A machine that started since its start-at was written: recorded if the start was the learned
        one (made sooner where its type is scarce), then the start-at taken off."""
        start_at = formatting.parse_time(instance.tags.get(tags.START_AT))
        early = sooner(capacity.scarcity(instance) is not None)
        if start_at is not None and made_for(instance, start_at, self.policy, sooner=early):
            self.finish(instance, start_at, instance.launch_time)
            return
        # A start made before its run's own, made late after refusals: its run read from the start log (one that
        # would not answer leaves the start-at for the next sweep to settle).
        record, read = self._read(instance, start_at)
        until = record.until(start_at) if record is not None and start_at is not None else None
        if not read:
            return
        if (
            start_at is not None
            and until is not None
            and made_for(instance, start_at, self.policy, sooner=early, until=until)
        ):
            self.finish(instance, start_at, instance.launch_time)
        else:
            self._let_go(instance, "started by someone else")

    def consider(self, instance: Instance, now: datetime, report: RegionReport, capacity: Capacity) -> None:
        """A stopped machine with a start-at: started when its time has come (sooner when its type is
        scarce), if costguard may."""
        start_at = formatting.parse_time(instance.tags[tags.START_AT])
        early = sooner(capacity.scarcity(instance) is not None)
        if start_at is not None and made_for(instance, start_at, self.policy, sooner=early):
            self.finish(instance, start_at, instance.launch_time)  # started for its run and stopped since
            return
        if start_at is not None and start_at - early > now:
            return  # not yet
        record, read = self._read(instance, start_at)  # read once: its run (a start made before it), its promise
        until = record.until(start_at) if record is not None and start_at is not None else None
        if start_at and until and made_for(instance, start_at, self.policy, sooner=early, until=until):
            self.finish(instance, start_at, instance.launch_time)
            return
        if not read and start_at is not None and now > last_try(start_at, self.policy):
            return  # its run unknown, the log unread: neither let go nor made late; the next sweep reads it
        why_not = learned_start_refused(instance, start_at, now, self.policy, until=until)
        if why_not or start_at is None:
            self._let_go(instance, why_not)
        else:
            self._start_learned(instance, start_at, now, report, capacity, record)

    def _let_go(self, instance: Instance, why: str) -> None:
        """A start-at costguard will not honour: taken off, so the machine's tags say what will happen."""
        logger.info("learned start not made", instance_id=instance.instance_id, reason=why)
        try:
            self.ec2.delete_tags([instance.instance_id], [tags.START_AT])
        except (ClientError, BotoCoreError) as exc:
            logger.warning("start-at not taken off", instance_id=instance.instance_id, error=str(exc)[:200])

    def _read(self, instance: Instance, start_at: datetime | None) -> tuple[StartRecord | None, bool]:
        """The machine's start-log record for its start-at (None: no log, no start time, or what the log holds is
        not costguard's), and whether the log answered."""
        if self.starts is None or start_at is None:
            return None, True
        try:
            return self.starts.fetch(instance.instance_id), True
        except ValueError as exc:
            logger.warning("start log unreadable", instance_id=instance.instance_id, error=str(exc)[:200])
            return None, True
        except (ClientError, BotoCoreError) as exc:
            logger.warning("start log unread", instance_id=instance.instance_id, error=str(exc)[:200])
            return None, False

    def _start_learned(  # noqa: PLR0917
        self,
        instance: Instance,
        start_at: datetime,
        now: datetime,
        report: RegionReport,
        capacity: Capacity,
        record: StartRecord | None,
    ) -> None:
        """Start it for the run its start-at promised (`record`: its start log, as read this sweep; None where the
        table would not give it: the start is made unvouched, as the run must not find its machine stopped for
        DynamoDB)."""
        iid = instance.instance_id
        until = record.until(start_at) if record is not None else None
        # Read again just before the start: "Don't start it", an exempt tag or a start by someone else since
        # the sweep listed the machine wins over what the listing said.
        current = next(iter(self.ec2.describe([iid])), None)
        why_not = still_refused(instance, current, start_at, now, self.policy, until=until) or self._unvouched(
            instance, start_at, record
        )
        if why_not:
            if current is not None and current.state == "stopped" and tags.START_AT in current.tags:
                self._let_go(current, why_not)
            else:
                logger.info("learned start not made", instance_id=iid, reason=why_not)
            return
        try:
            applied = self.ec2.start(iid)
        except (ClientError, BotoCoreError) as exc:  # no capacity, say: tried again next sweep, while in time
            logger.warning("learned start failed", instance_id=iid, error=str(exc)[:200])
            self.refusals.refused(instance, start_at, last_try(start_at, self.policy, until), now, exc, capacity)
            return
        report.started.append(iid)
        report.learned_started.append(iid)
        if applied:
            self.finish(instance, start_at, now, called=True)

    def finish(self, instance: Instance, start_at: datetime, started: datetime, *, called: bool = False) -> None:
        """A learned start made: its ledger entry and its start in the start log, keyed by the start (every
        path that sees it writes the same), then its start-at taken off (`called`: by costguard's own call, not
        found made). Raises on a failed write, the start-at left on for the next path."""
        iid = instance.instance_id
        record = kept_record(self.starts, iid)
        night = record.until(start_at) if record is not None else None  # made before its night's run
        expected = (night or start_at) + timedelta(minutes=self.policy.schedule_lead_minutes)
        stopped_at = formatting.parse_time(instance.tags.get(tags.STOPPED_AT)) or formatting.parse_time(
            record.stopped_at if record else ""
        )
        hours = max(0.0, (start_at - stopped_at).total_seconds() / 3600) if stopped_at else 0.0
        at = formatting.format_time(start_at)
        day = record is not None and at in record.for_days
        work = "night's run" if night else "working day" if day else "recurring work"
        self.ledger.record(
            machine_entry(
                instance,
                EntryKind.DAY_START if day else EntryKind.LEARNED_START,
                start_at,  # the start it is for: every path that records it writes the same entry
                mode=self.mode,
                owner_tag_key=self.owner_tag_key,
                reason=f"its {work} is expected at {expected:%H:%M} UTC",
                idle_hours=round(hours, 2),
                gpu_hours=round(hours * (record.gpus if record else 0), 2),
                rule=Rule.PERSONS_DAY if day else Rule.RECURRING,
            )
        )
        if self.starts is not None and record is not None:
            expected_at, started_at = formatting.format_time(expected), formatting.format_time(started)
            job = at in record.for_jobs
            self.starts.made(iid, expected_at, started_at, record, started, job=job, day=day, called=called)
        self._let_go(instance, "started")

    def _unvouched(self, instance: Instance, start_at: datetime, record: StartRecord | None) -> str:
        """Why the machine's start-at is not one costguard promised (`record`: its start log, as read), or "". A
        record the table would not give is no refusal: the run must not find its machine stopped for DynamoDB."""
        if self.starts is None:
            return ""
        if record is None:
            logger.warning("learned start made unvouched", instance_id=instance.instance_id)
            return ""
        if record.vouches(start_at, formatting.parse_time(instance.tags.get(tags.STOPPED_AT))):
            return ""
        return f"costguard never promised a start at {formatting.format_time(start_at)}"


def kept_record(starts: StartLog | None, instance_id: str) -> StartRecord | None:
    """The start log's record, read to be written back; None when there is none to keep or what the table
    holds is not costguard's (left as it is: written over, its promises would be lost). Raises when the
    table would not answer."""
    if starts is None:
        return None
    try:
        return starts.fetch(instance_id, consistent=True)
    except ValueError as exc:
        logger.warning("learned start not kept in the start log", instance_id=instance_id, error=str(exc)[:200])
        return None


def hours_offer(history: MachineHistory) -> Callable[[Instance, datetime], str | None]:
    """For the idle warning: the working hours a machine without any keeps, from its starts and stops."""

    def offer(instance: Instance, now: datetime) -> str | None:
        if tags.SCHEDULE in instance.tags:
            return None
        return suggest_from_changes(history.changes(instance.instance_id), now)

    return offer


def tell_unreadable_schedule(
    claims: Claims,
    send: Callable[[str, Message], None],
    *,
    instance: Instance,
    owner: str,
    now: datetime,
    who: Callable[[str], Mrkdwn] = person,
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
        send(owner, schedule_unreadable_notice(instance, why, who(owner)))
    except SlackDeliveryError:
        claims.release(claim)
        raise
    claims.done(claim)
