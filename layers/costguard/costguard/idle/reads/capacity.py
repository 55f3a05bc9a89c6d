"""Which machines of one region might not start again, for one sweep: the failures kept in costguard's
table, read once when first asked; CloudTrail read into it once a day (the failed RunInstances and
StartInstances of the last two weeks, anyone's); costguard's own refused starts added as they happen.

Evidence that cannot be read is no evidence: the machines are judged as before (stopped when idle), and
the gap is logged and counted (`CapacityEvidenceUnread`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.cloudtrail import CloudTrail
from costguard.aws.ec2 import Ec2
from costguard.core.observability import logger, metrics
from costguard.core.records import Instance
from costguard.core.scarcity import SCARCE_FOR, FailedStart, Scarcity, scarcities, scarcity_of
from costguard.state.capacity import CapacityLog, CapacityRecord
from costguard.state.ledger import LedgerWriteError, StateTableBusy

REREAD = timedelta(days=1)  # CloudTrail is read again after a day
TIME_TO_READ = 60.0  # seconds the invocation must have left to walk CloudTrail
DESCRIBED = 200  # instance ids a DescribeInstances call is asked for
READ_ERRORS = (ClientError, BotoCoreError, StateTableBusy, LedgerWriteError, RuntimeError)
OWN = "costguard"


class Capacity(Protocol):
    """What the starts and the decisions ask of the region's scarcity evidence."""

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
                _unread("capacity failures unread", self.region, exc)
        self._failures = [*record.failures, *self._from_cloudtrail(record.read_until)]
        return self._failures

    def _from_cloudtrail(self, read_until: datetime | None) -> list[FailedStart]:
        """CloudTrail's failures since it was last read (at most two weeks), once a day, kept in the table."""
        if self.trail is None or self.log is None or (read_until is not None and self.now - read_until < REREAD):
            return []
        if self.time_left() < TIME_TO_READ:
            return []  # the next sweep reads it
        since = max(read_until or self.now - SCARCE_FOR, self.now - SCARCE_FOR)
        try:
            found, whole = self.trail.refused_for_capacity(self.region, since, self.now)
            found = self._typed(found)
            self.log.add(self.region, found, read_until=self.now)
        except Exception as exc:  # an answer costguard cannot read must not cost the region its sweep
            _unread("CloudTrail's failed starts unread", self.region, exc)
            return []
        if not whole:
            logger.warning("CloudTrail read cut short: its oldest failed starts not seen", region=self.region)
        return found

    def _typed(self, found: Sequence[FailedStart]) -> list[FailedStart]:
        """A StartInstances names its machines, not their type: described (one gone since is dropped)."""
        ids = sorted({f.instance_id for f in found if not f.instance_type and f.instance_id})
        machines: dict[str, Instance] = {}
        for first in range(0, len(ids), DESCRIBED):
            machines.update((i.instance_id, i) for i in self.ec2.describe(ids[first : first + DESCRIBED]))
        out = []
        for failure in found:
            if failure.instance_type:
                out.append(failure)
            elif (machine := machines.get(failure.instance_id)) is not None:
                out.append(replace(failure, instance_type=machine.instance_type, zone=machine.zone))
        return out


def _unread(what: str, region: str, exc: Exception) -> None:
    logger.warning(what, region=region, error=str(exc)[:200])
    metrics.add_metric(name="CapacityEvidenceUnread", unit=MetricUnit.Count, value=1)
