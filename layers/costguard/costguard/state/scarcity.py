"""Which machines of one region might not start again, for one sweep: the failures kept in costguard's
table, read once when first asked; CloudTrail read into it once a day (the failed RunInstances and
StartInstances of the last two weeks, anyone's); costguard's own refused starts added as they happen.

Evidence that cannot be read is no evidence: the machines are judged as before (stopped when idle), and
the gap is logged and counted (`CapacityEvidenceUnread`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.ec2 import Ec2
from costguard.core.observability import logger, metrics
from costguard.core.records import Instance
from costguard.core.scarcity import SCARCE_FOR, FailedStart, Scarcity, scarcities, scarcity_of
from costguard.state.capacity import CapacityLog, CapacityRecord
from costguard.state.ledger import LedgerWriteError, StateTableBusy

REREAD = timedelta(days=1)  # CloudTrail is read again after a day, a day at a time
LAG = timedelta(minutes=20)  # CloudTrail delivers an event within about 15 minutes of the call
DAYS_PER_SWEEP = 2  # a walk behind (the first: two weeks) catches up over a few sweeps
PER_DAY = 20  # failures kept per type, zone and day
SAME_START = timedelta(minutes=5)  # CloudTrail's record of one of costguard's own refused starts
TIME_TO_READ = 60.0  # seconds the invocation must have left to walk CloudTrail
DESCRIBED = 200  # instance ids a DescribeInstances filter holds
READ_ERRORS = (ClientError, BotoCoreError, StateTableBusy, LedgerWriteError, KeyError, ValueError)
OWN = "costguard"


class Capacity(Protocol):
    """What the starts and the decisions ask of the region's scarcity evidence."""

    unread: bool  # whether the evidence kept could not be read (known once `scarcity` was asked)

    def scarcity(self, instance: Instance) -> Scarcity | None: ...
    def failed_at(self, instance_id: str) -> datetime | None: ...
    def refused(self, instance: Instance, at: datetime) -> None: ...


class SweepCapacity:
    def __init__(
        self,
        *,
        log: CapacityLog | None,
        trail: CloudTrail | None,
        ec2: Ec2,
        region: str,
        now: datetime,
        time_left: Callable[[], float],
    ) -> None:
        self.log, self.trail, self.ec2, self.region, self.now = log, trail, ec2, region, now
        self.time_left = time_left
        self._failures: list[FailedStart] | None = None
        self._table: dict[tuple[str, str], Scarcity] | None = None
        self.unread = False

    def scarcity(self, instance: Instance) -> Scarcity | None:
        """The evidence that this machine's type is scarce in its zone; None where there is none."""
        if self._table is None:
            self._table = scarcities(self._read(), self.now)
        return scarcity_of(instance.instance_type, instance.zone, self._table)

    def failed_at(self, instance_id: str) -> datetime | None:
        """costguard's last start of this machine that EC2 refused for capacity, in the last two weeks."""
        own = [f.at for f in self._read() if f.source == OWN and f.instance_id == instance_id]
        return max(own, default=None)

    def refused(self, instance: Instance, at: datetime) -> None:
        """costguard's own start refused for capacity: evidence from now on, kept for the sweeps to come (a
        write that fails is logged: the ledger's entry of the failed start is the record that counts)."""
        failure = FailedStart(instance.instance_type, instance.zone, at, OWN, instance.instance_id, self.region)
        self._read().append(failure)
        self._table = None
        if self.log is None:
            return
        try:
            self.log.add(self.region, [failure])
        except READ_ERRORS as exc:
            _unread("own refused start not kept", self.region, exc)

    def _read(self) -> list[FailedStart]:
        if self._failures is not None:
            return self._failures
        record = CapacityRecord((), None)
        if self.log is not None:
            try:
                record = self.log.load(self.region)
            except READ_ERRORS as exc:
                self.unread = True  # and CloudTrail is not walked: what it found could not be kept
                _unread("capacity failures unread", self.region, exc)
        self._failures = list(record.failures)
        if not self.unread:
            self._failures += self._from_cloudtrail(record, record.failures)
        return self._failures

    def _from_cloudtrail(self, record: CapacityRecord, known: Sequence[FailedStart]) -> list[FailedStart]:
        """CloudTrail's failures, a day at a time, each day kept in the table with the span read so far: the
        days since it was last read (once a day, oldest first), then, until two weeks are read, the days
        before the oldest read (newest first: the first walk finds last night's shortage first). At most
        DAYS_PER_SWEEP days a sweep, while the sweep has time. CloudTrail delivers an event within minutes:
        the walk stops short of now by LAG."""
        if self.trail is None or self.log is None:
            return []
        end = self.now - LAG
        until = record.read_until or end
        since = max(record.read_from or end, end - SCARCE_FOR)
        found: list[FailedStart] = []
        for _ in range(DAYS_PER_SWEEP):
            if self.time_left() < TIME_TO_READ:
                break  # the sweep's time is for the sweep: the next one reads on
            if end - until >= REREAD:
                span = (until, min(until + REREAD, end))
            elif since > end - SCARCE_FOR:
                span = (max(since - REREAD, end - SCARCE_FOR), since)
            else:
                break  # read within the day, and two weeks back
            try:
                day, whole = self.trail.refused_for_capacity(self.region, *span)
                day = kept(self._typed(day), known)
                until, since = max(until, span[1]), min(since, span[0])
                self.log.add(self.region, day, read_until=until, read_from=since)
            except Exception as exc:  # an answer costguard cannot read must not cost the region its sweep
                _unread("CloudTrail's failed starts unread", self.region, exc)
                break
            if not whole:
                logger.warning("CloudTrail's busiest day cut short: its oldest failed starts not seen", since=span[0])
            found += day
        return found

    def _typed(self, found: Sequence[FailedStart]) -> list[FailedStart]:
        """A StartInstances names its machines, not their type: described (one gone since is dropped)."""
        ids = sorted({f.instance_id for f in found if not f.instance_type and f.instance_id})
        machines: dict[str, Instance] = {}
        for first in range(0, len(ids), DESCRIBED):  # by filter: an id long gone is no error, nor a call of its own
            chunk: Any = [{"Name": "instance-id", "Values": ids[first : first + DESCRIBED]}]
            machines.update((i.instance_id, i) for i in self.ec2.iter_instances(chunk))
        out = []
        for failure in found:
            if failure.instance_type:
                out.append(failure)
            elif (machine := machines.get(failure.instance_id)) is not None:
                out.append(replace(failure, instance_type=machine.instance_type, zone=machine.zone))
        return out


def kept(found: Sequence[FailedStart], known: Sequence[FailedStart]) -> list[FailedStart]:
    """The failures worth keeping: not costguard's own refusals again (as CloudTrail records them), and at most
    PER_DAY of a type in a zone a day (the newest): evidence enough, in a table that stays small."""
    own = [f for f in known if f.source == OWN]
    fresh = [
        f
        for f in found
        if not any(o.instance_id == f.instance_id and abs(o.at - f.at) <= SAME_START for o in own if f.instance_id)
    ]
    out: list[FailedStart] = []
    counted: dict[tuple[str, str, object], int] = {}
    for failure in sorted(fresh, key=lambda f: f.at, reverse=True):
        key = (failure.instance_type, failure.zone, failure.at.date())
        counted[key] = counted.get(key, 0) + 1
        if counted[key] <= PER_DAY:
            out.append(failure)
    return out


def _unread(what: str, region: str, exc: Exception) -> None:
    logger.warning(what, region=region, error=str(exc)[:200])
    metrics.add_metric(name="CapacityEvidenceUnread", unit=MetricUnit.Count, value=1)
