"""Effects nobody is told about, recorded exactly once: a working-hours start and a change of scale-in
protection.

Each is kept in the outbox (`pending`, held by the attempt until its deadline) before its call, and
once the call is made its record goes in one write with the ledger entry it proves. A sweep that finds
the record of an attempt that died in between proves the effect from AWS's own record (the machine was
started after the decision; the group's member is protected as decided) and writes the entry then;
otherwise it drops the record: the effect did not happen, and the sweep decides again. So a kill costs
neither the record of an effect that happened nor a record of one that did not, and the entry is keyed
by the effect (its decision travels in the record), so whichever attempt writes it writes it once.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from costguard.aws.autoscaling import AutoScaling
from costguard.aws.ec2 import Ec2
from costguard.core import formatting
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.idle.acts.delivery import AWS_ERRORS, lease_length
from costguard.state.entries import Entry
from costguard.state.outbox import PENDING, PROTECT, START, Notice, Outbox, entry_json

# Clocks differ a little: AWS's time of a start is checked against costguard's time of its decision.
SKEW = timedelta(minutes=2)


def _forever() -> float:
    return float("inf")


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


def started_after(record: Notice, instance: Instance | None) -> bool:
    """AWS's record says the machine was started after this start was decided (EC2 gives a machine a new
    launch time at each start, and keeps it once stopped)."""
    return instance is not None and instance.launch_time >= record.decided_time - SKEW


class Effects:
    def __init__(
        self,
        *,
        outbox: Outbox,
        ec2: Ec2,
        autoscaling: AutoScaling,
        time_left: Callable[[], float] = _forever,
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
        proven = [r for r in starts if started_after(r, machines.get(r.instance_id))]
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
