"""The EC2 writes a sweep decided, applied together once every machine is judged: a call per 500
machines that share a write, one call per machine only for a batch AWS refused."""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial

from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.clients import error_code
from costguard.aws.ec2 import Ec2, WriteResult, write_in_batches
from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.messages import stop_failed_notice
from costguard.idle.report import Outcome, ledger_entry
from costguard.slack.blocks import Message
from costguard.state.ledger import Ledger, LedgerWriteError
from costguard.state.outbox import Notice, Outbox

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


@dataclass
class PendingWrites:
    """Stops, warning tags and clears, queued by the notifying threads."""

    stops: defaultdict[bool, Queued] = field(default_factory=lambda: defaultdict(list))  # by hibernate
    stop_notices: dict[str, Notice] = field(default_factory=dict)  # by instance id: told once AWS has stopped it
    tags: defaultdict[tuple[tuple[str, str], ...], Queued] = field(default_factory=lambda: defaultdict(list))
    clears: Queued = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop_tags: dict[str, dict[str, str]] = field(default_factory=dict)  # by instance id: more to tag at its stop

    def stop(self, instance: Instance, outcome: Outcome, notice: Notice) -> None:
        with self.lock:
            self.stops[notice.hibernate].append((instance, outcome))
            self.stop_notices[instance.instance_id] = notice

    def start_again(self, instance_id: str, at: datetime) -> None:
        """A stop, if it happens, promises to start the machine again then: written before the stop."""
        with self.lock:
            self.stop_tags[instance_id] = {tags.START_AT: formatting.format_time(at)}

    def tag(self, instance: Instance, outcome: Outcome, state: dict[str, str]) -> None:
        with self.lock:
            self.tags[tuple(sorted(state.items()))].append((instance, outcome))

    def clear(self, instance: Instance, outcome: Outcome) -> None:
        with self.lock:
            self.clears.append((instance, outcome))


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
        report_once: Callable[[str, Message, datetime], bool],
    ) -> None:
        self.ec2 = ec2
        self.outbox = outbox
        self.ledger = ledger
        self.prices = prices
        self.policy = policy
        self.mode = mode
        self.report_once = report_once  # posts a notice to the alerts channel once per key

    def apply(self, writes: PendingWrites, now: datetime) -> Stopped:
        """The stops (their notices pending in the outbox first, their record right after), then warnings
        and clears. The stopped machines, with their notices, for the owners to be told."""
        stopped = self._stop(writes, now)
        for state, queued in writes.tags.items():
            self._settle(queued, self._write(queued, partial(self.ec2.create_tags, tags=dict(state))))
        self._settle(writes.clears, self._write(writes.clears, partial(self.ec2.delete_tags, keys=tags.WARNING_TAGS)))
        return stopped

    def _stop(self, writes: PendingWrites, now: datetime) -> Stopped:
        self._tag_before_stop(writes)
        if not writes.stop_notices:
            return []
        try:
            self.outbox.add(list(writes.stop_notices.values()))
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:  # no notice kept, no stop: next sweep
            for queued in writes.stops.values():
                for _, outcome in queued:
                    outcome.retry(f"outbox: {exc}")
            return []
        stopped: Queued = []
        for hibernate, queued in writes.stops.items():
            outcomes = {i.instance_id: (i, o) for i, o in queued if i.instance_id in writes.stop_notices}
            results = write_in_batches(
                list(outcomes),
                partial(self.ec2.stop, hibernate=hibernate),
                alone=lambda iid: self._stop_one(*outcomes[iid], hibernate, now),  # noqa: B023 (used at once)
            )
            stopped += [outcomes[iid] for iid, result in results.items() if result.applied]
        done = {i.instance_id for i, _ in stopped}
        not_stopped = [n for iid, n in writes.stop_notices.items() if iid not in done]
        if not_stopped:  # nothing happened that a notice could tell; a failure here only leaves them to expire
            with contextlib.suppress(ClientError, BotoCoreError, LedgerWriteError):
                self.outbox.remove(not_stopped)
        out = [(i, o, writes.stop_notices[i.instance_id]) for i, o in stopped]
        self.tag_stopped(
            [i.instance_id for i, _ in stopped], now, idle_hours={i.instance_id: o.idle_hours for i, o in stopped}
        )
        self.record_stops(out)
        return out

    def _tag_before_stop(self, writes: PendingWrites) -> None:
        """What a stop's notice promises (when costguard starts the machine again) is on the machine before
        the stop: a machine whose tag could not be written is not stopped in this sweep."""
        for iid, extra in writes.stop_tags.items():
            if iid not in writes.stop_notices:
                continue
            try:
                self.ec2.create_tags([iid], extra)
            except (ClientError, BotoCoreError) as exc:
                del writes.stop_notices[iid]
                for queued in writes.stops.values():
                    for instance, outcome in queued:
                        if instance.instance_id == iid:
                            outcome.retry(exc)

    def record_stops(self, stopped: Stopped) -> None:
        """The ledger's entries of stops, written with them (keyed by when each was decided)."""
        entries = []
        for instance, outcome, notice in stopped:
            price = self.prices.hourly(instance.instance_type, instance.region)
            entries.append(ledger_entry(instance, outcome, notice.time, mode=self.mode, price=price))
        self.ledger.record_many(entries)

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

    @staticmethod
    def _write(queued: Queued, write: Callable[[list[str]], bool]) -> dict[str, WriteResult]:
        return write_in_batches([i.instance_id for i, _ in queued], write)

    @staticmethod
    def _settle(queued: Queued, results: dict[str, WriteResult]) -> None:
        """A warning's or a clear's outcome is its tag write's."""
        for instance, outcome in queued:
            result = results[instance.instance_id]
            outcome.applied = result.applied
            if result.error is not None:
                outcome.retry(result.error)

    def _stop_one(self, instance: Instance, outcome: Outcome, hibernate: bool, now: datetime) -> bool:
        """One instance of a refused batch, alone; True if it stopped. Settles the outcome if not."""
        warned_at = instance.tags.get(tags.IDLE_WARNED_AT, "")
        try:
            try:
                self.ec2.stop([instance.instance_id], hibernate=hibernate)
            except ClientError as exc:
                code = error_code(exc)
                if hibernate and code in ("UnsupportedHibernationConfiguration", "UnsupportedOperation"):
                    self.ec2.stop([instance.instance_id], hibernate=False)
                elif code in PERMANENT_STOP_ERRORS:
                    self.report_once(
                        f"stop-failed:{instance.instance_id}:{warned_at}",
                        stop_failed_notice(instance, code, outcome.owner),
                        now,
                    )
                    outcome.applied, outcome.detail = False, f"stop refused: {code}"
                    return False
                else:
                    raise
        except (ClientError, BotoCoreError, SlackDeliveryError) as exc:
            outcome.retry(exc)
            return False
        return True
