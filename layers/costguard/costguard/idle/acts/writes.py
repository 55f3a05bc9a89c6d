"""The EC2 writes a sweep decided, applied together once every machine is judged: a call per 500
machines that share a write, one call per machine only for a batch AWS refused."""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.ec2 import Ec2, WriteResult, write_in_batches
from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.report import Outcome, Settled, Status, ledger_entry
from costguard.state.entries import Entry
from costguard.state.ledger import Ledger, LedgerWriteError
from costguard.state.outbox import WARN, Notice, Outbox
from costguard.state.startlog import StartLog

# Stop failures that no retry will fix: reported once, not retried every sweep.
PERMANENT_STOP_ERRORS = {
    "OperationNotPermitted",
    "UnsupportedOperation",
    "IncorrectInstanceState",
    "InvalidInstanceID.NotFound",
    "UnsupportedHibernationConfiguration",
}

Queued = list[tuple[Instance, Outcome]]
Stopped = list[tuple[Instance, Outcome, Notice]]
Refused = list[tuple[Instance, Outcome, Notice, str]]  # stops AWS refused for good, with its error code
Results = dict[str, Settled]  # by instance id: what became of each write that did not simply happen


@dataclass(frozen=True)
class Written:
    """What the writer did: the machines it stopped (with their notices, to be told), the stops AWS refused
    for good (to be reported), what became of each write that did not simply happen, and the machines whose
    warning was to be cleared and still carries its tags (its record or its DeleteTags refused)."""

    stopped: Stopped
    refused: Refused
    results: Results
    uncleared: frozenset[str] = frozenset()


@dataclass
class PendingWrites:
    """Stops, warning tags and clears, queued by the notifying threads."""

    stops: defaultdict[bool, Queued] = field(default_factory=lambda: defaultdict(list))  # by hibernate
    stop_notices: dict[str, Notice] = field(default_factory=dict)  # by instance id: told once AWS has stopped it
    tags: defaultdict[tuple[tuple[str, str], ...], Queued] = field(default_factory=lambda: defaultdict(list))
    clears: Queued = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop_tags: dict[str, dict[str, str]] = field(default_factory=dict)  # by instance id: more to tag at its stop
    stop_gpus: dict[str, int] = field(default_factory=dict)  # by instance id: the GPUs a learned start's stop takes off
    left_running: list[Entry] = field(default_factory=list)  # machines left running, told today: their record

    def stop(self, instance: Instance, outcome: Outcome, notice: Notice) -> None:
        with self.lock:
            self.stops[notice.hibernate].append((instance, outcome))
            self.stop_notices[instance.instance_id] = notice

    def start_again(self, instance_id: str, at: datetime, gpus: int) -> None:
        """A stop, if it happens, promises to start the machine again then: written before the stop, with
        the stop's record in the start log (the GPUs it takes off)."""
        with self.lock:
            self.stop_tags[instance_id] = {tags.START_AT: formatting.format_time(at)}
            self.stop_gpus[instance_id] = gpus

    def tag(self, instance: Instance, outcome: Outcome, state: dict[str, str]) -> None:
        with self.lock:
            self.tags[tuple(sorted(state.items()))].append((instance, outcome))

    def clear(self, instance: Instance, outcome: Outcome) -> None:
        with self.lock:
            self.clears.append((instance, outcome))

    def left(self, entry: Entry) -> None:
        """A machine left running though idle, its owner told today: its decision's record, with its trail."""
        with self.lock:
            self.left_running.append(entry)


class SweepWriter:
    def __init__(
        self,
        *,
        ec2: Ec2,
        outbox: Outbox,
        ledger: Ledger,
        prices: PriceBook,
        policy: IdlePolicy,
        mode: Mode,
        starts: StartLog | None = None,
    ) -> None:
        self.ec2 = ec2
        self.outbox = outbox
        self.ledger = ledger
        self.prices = prices
        self.policy = policy
        self.mode = mode
        self.starts = starts  # where a stop before a learned start is kept

    def apply(self, writes: PendingWrites, now: datetime) -> Written:
        """The stops (their notices pending in the outbox first, their record right after), then warnings
        and clears. The stopped machines, with their notices, for the owners to be told; the stops AWS
        refused for good, to be reported; and what became of each write that did not simply happen."""
        results: Results = {}
        stopped, refused = self._stop(writes, now, results)
        for state, queued in writes.tags.items():
            results.update(_settle(queued, _write(queued, partial(self.ec2.create_tags, tags=dict(state)))))
        clears = self._clear(writes.clears)
        results.update(clears)
        self._record_left(writes.left_running)
        uncleared = frozenset(iid for iid, settled in clears.items() if settled.status is not Status.DONE)
        return Written(stopped, refused, results, uncleared)

    def _record_left(self, entries: list[Entry]) -> None:
        """The day's records of machines left running: a record, not a promise, so one the table refuses is
        logged and left (the next day's tell records it again)."""
        if not entries:
            return
        try:
            self.ledger.record_many(entries)
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:
            logger.warning("left running not recorded", count=len(entries), error=str(exc)[:200])

    def _stop(self, writes: PendingWrites, now: datetime, results: Results) -> tuple[Stopped, Refused]:
        results.update(tag_before_stop(self.ec2, self.starts, writes, now))
        if not writes.stop_notices:
            return [], []
        try:
            self.outbox.add(list(writes.stop_notices.values()))
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:  # no notice kept, no stop: next sweep
            for queued in writes.stops.values():
                results.update({i.instance_id: Settled.retry(f"outbox: {exc}") for i, _ in queued})
            return [], []
        stopped: Queued = []
        refusals: dict[str, str] = {}  # in the order AWS refused them
        outcomes_of: dict[str, tuple[Instance, Outcome]] = {}
        for hibernate, queued in writes.stops.items():
            outcomes = {i.instance_id: (i, o) for i, o in queued if i.instance_id in writes.stop_notices}
            outcomes_of.update(outcomes)
            written = write_in_batches(
                list(outcomes),
                partial(self.ec2.stop, hibernate=hibernate),
                alone=lambda iid: self._stop_one(outcomes[iid][0], hibernate, results, refusals),  # noqa: B023
            )
            stopped += [outcomes[iid] for iid, result in written.items() if result.applied]
        # A stop AWS refused for good tells nothing to its owner (the alerts channel is told); one whose call
        # failed may still have been applied (an answer lost): its notice stays, and the next sweep tells it
        # if AWS's record proves the stop.
        refused = [(*outcomes_of[iid], writes.stop_notices[iid], refusals[iid]) for iid in refusals]
        out = [(i, o, writes.stop_notices[i.instance_id]) for i, o in stopped]
        self.tag_stopped(
            [i.instance_id for i, _ in stopped], now, idle_hours={i.instance_id: o.idle_hours for i, o in stopped}
        )
        self.record_stops(out)
        return out, refused

    def record_stops(self, stopped: Stopped) -> None:
        """The ledger's entries of stops, written as soon as AWS took them (keyed by when each was decided,
        the same entry the notice's delivery writes again). A failure here is left to that delivery."""
        entries = []
        for instance, outcome, notice in stopped:
            entry = notice.ledger_entry
            if entry is None:  # a notice from before entries travelled with it
                price = self.prices.hourly(instance.instance_type, instance.region)
                entry = ledger_entry(instance, outcome, notice.decided_time, mode=self.mode, price=price)
            entries.append(entry)
        try:
            self.ledger.record_many(entries)
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:
            logger.warning("stops recorded when told instead", count=len(entries), error=str(exc)[:200])

    def _clear(self, queued: Queued) -> Results:
        """Warnings withdrawn: recorded first, under the warning each withdraws (so a retry writes the same
        record), then the tags removed; the warning's delivery record goes too."""
        if not queued:
            return {}
        applied = self.mode.mutates  # dry-run removes no tag: its record says so
        entries = [ledger_entry(i, replace(o, applied=applied), warned_time(i), mode=self.mode) for i, o in queued]
        try:
            self.ledger.record_many(entries)
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:
            return {i.instance_id: Settled.retry(f"ledger: {exc}") for i, _ in queued}
        results = _write(queued, partial(self.ec2.delete_tags, keys=tags.WARNING_TAGS))
        failed = [e for e in entries if results[e.instance_id].error is not None]
        cleared = [i.instance_id for i, _ in queued if results[i.instance_id].error is None]
        with contextlib.suppress(ClientError, BotoCoreError, LedgerWriteError):
            if failed:  # not withdrawn after all: a later sweep decides again
                self.ledger.forget(failed)
            if cleared:
                self.outbox.remove([Notice(WARN, iid, "") for iid in cleared])
        return _settle(queued, results)

    def tag_stopped(self, instance_ids: list[str], at: datetime, idle_hours: Mapping[str, float] | None = None) -> None:
        """The stop's record on the instance. The warning tags stay too; after a restart they are older
        than the instance's LaunchTime and are ignored, so no call is spent removing them. A machine idle
        for less than the window when stopped was stopped on certain idleness (a stop on the full window
        judges at least the window): its tag says how long, and why sooner."""
        rule = f"idle: GPU < {self.policy.gpu_idle_percent:g}%, CPU < {self.policy.cpu_idle_percent:g}%"
        window = self.policy.window_minutes
        reasons: defaultdict[str, list[str]] = defaultdict(list)
        for iid in instance_ids:
            minutes = round((idle_hours or {}).get(iid, 0.0) * 60)
            if 0 < minutes < window:
                reasons[f"{rule} for {minutes} min, and the activity check saw nothing alive on it"].append(iid)
            else:
                reasons[f"{rule} for {window} min"].append(iid)
        for reason, ids in reasons.items():
            record = {tags.STOPPED_AT: formatting.format_time(at), tags.STOP_REASON: tags.clip(reason)}
            for iid, result in write_in_batches(ids, partial(self.ec2.create_tags, tags=record)).items():
                if result.error is not None:
                    logger.warning("stop not recorded on the instance", instance_id=iid, error=str(result.error))

    def _stop_one(self, instance: Instance, hibernate: bool, results: Results, refusals: dict[str, str]) -> bool:
        """One instance of a refused batch, alone; True if it stopped. Says why not in `results` if not (and
        the error code of a refusal for good in `refusals`)."""
        try:
            try:
                self.ec2.stop([instance.instance_id], hibernate=hibernate)
            except ClientError as exc:
                code = error_code(exc)
                if hibernate and code in ("UnsupportedHibernationConfiguration", "UnsupportedOperation"):
                    self.ec2.stop([instance.instance_id], hibernate=False)
                elif code in PERMANENT_STOP_ERRORS:
                    results[instance.instance_id] = Settled(Status.REFUSED, f"stop refused: {code}")
                    refusals[instance.instance_id] = code
                    return False
                else:
                    raise
        except (ClientError, BotoCoreError) as exc:
            results[instance.instance_id] = Settled.retry(exc)
            return False
        return True


def tag_before_stop(ec2: Ec2, starts: StartLog | None, writes: PendingWrites, now: datetime) -> Results:
    """What a stop's notice promises (when costguard starts the machine again) is on the machine before
    the stop, and the stop's record in the start log (what the start's GPU-hours are counted from): a
    kill after the stop loses neither. A machine whose tag or record could not be written is not
    stopped in this sweep. (A record of a stop that then did not happen is never read: a learned start
    needs costguard's stopped-at after the machine's last start, and the next promise rewrites it.)"""
    results: Results = {}
    for iid, extra in writes.stop_tags.items():
        if iid not in writes.stop_notices:
            continue
        try:
            ec2.create_tags([iid], extra)
            if starts is not None:
                starts.stopping(iid, formatting.format_time(now), writes.stop_gpus.get(iid, 0), now)
        except (ClientError, BotoCoreError, ValueError) as exc:  # ValueError: a start log not costguard's
            del writes.stop_notices[iid]
            results[iid] = Settled.retry(exc)
    return results


def warned_time(instance: Instance) -> datetime:
    """When the machine's warning went out (what a withdrawal is recorded under)."""
    warned = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    return warned or instance.launch_time


def _write(queued: Queued, write: Callable[[list[str]], bool]) -> dict[str, WriteResult]:
    return write_in_batches([i.instance_id for i, _ in queued], write)


def _settle(queued: Queued, results: dict[str, WriteResult]) -> Results:
    """A warning's or a clear's outcome is its tag write's."""
    out: Results = {}
    for instance, _ in queued:
        result = results[instance.instance_id]
        if result.error is not None:
            out[instance.instance_id] = Settled.retry(result.error)
        else:
            out[instance.instance_id] = Settled(Status.DONE, applied=result.applied)
    return out
