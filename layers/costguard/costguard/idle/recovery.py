"""What a sweep killed half-way left undone, finished by the next one from the outbox: the record and
the notice of a stop AWS took, and the tags of a warning that was delivered."""

from __future__ import annotations

from datetime import datetime, timedelta

from costguard.aws.ec2 import Ec2
from costguard.core.observability import logger
from costguard.idle.decision import Action
from costguard.idle.notices import SweepNotices
from costguard.idle.report import Outcome
from costguard.idle.writes import Stopped, SweepWriter
from costguard.state.outbox import DELIVERED, PENDING, STOP, WARN, Notice, Outbox

# A pending stop notice this old belongs to a sweep that is no longer running (the function's timeout
# is 300 s): the next sweep finishes its work.
RECOVER_AFTER = timedelta(minutes=6)
# A warning recorded as delivered but not yet tagged is taken up by the next sweeps for this long; after
# that the machine is judged anew (and warned again if still idle).
TOLD_FOR = timedelta(minutes=40)


class Recovery:
    def __init__(
        self,
        *,
        ec2: Ec2,
        outbox: Outbox,
        notices: SweepNotices,
        writer: SweepWriter,
    ) -> None:
        self.ec2 = ec2
        self.outbox = outbox
        self.notices = notices
        self.writer = writer

    def run(self, now: datetime) -> dict[str, Notice]:
        """Finish the stops a dead sweep left; the recent warnings delivered, by instance id."""
        notices = self.outbox.read()
        left = [n for n in notices if n.kind == STOP and n.status == PENDING and now - n.time >= RECOVER_AFTER]
        if left:
            self._finish_stops(left)
        stale = [n for n in notices if n.kind == WARN and now - n.time > TOLD_FOR]
        if stale:
            self.outbox.remove(stale)
        return {n.instance_id: n for n in notices if n.kind == WARN and n.status == DELIVERED and n not in stale}

    def _finish_stops(self, left: list[Notice]) -> None:
        found = {i.instance_id: i for i in self.ec2.describe([n.instance_id for n in left])}
        stopped: Stopped = []
        for notice in left:
            instance = found.get(notice.instance_id)
            # Stopped; or running again, but started after the stop was prepared (EC2 gives a machine a new
            # launch time at each start): the stop happened, and someone started it since. Told either way.
            if instance is not None and (
                instance.state in ("stopping", "stopped") or instance.launch_time > notice.time
            ):
                outcome = Outcome(instance.instance_id, instance.instance_type, notice.owner, Action.STOP, "recovered")
                stopped.append((instance, outcome, notice))
        # Still running since before (the stop never happened) or gone: nothing to tell.
        dropped = [n for n in left if n.instance_id not in {i.instance_id for i, _, _ in stopped}]
        if dropped:
            self.outbox.remove(dropped)
        for instance, outcome, notice in stopped:
            logger.info("finishing a stop a dead sweep left", instance_id=instance.instance_id, at=notice.at)
            if instance.state in ("stopping", "stopped"):
                self.writer.tag_stopped([instance.instance_id], notice.time)
            self.writer.record_stops([(instance, outcome, notice)])
            self.notices.tell_stop(notice, outcome)
