"""What a dead attempt left, finished by the next sweep from the outbox before it decides anything:

- a notice leased for sending whose lease ran out may have been posted: it is looked for in Slack's
  history (by its block id) and, found, recorded as delivered without a second post; a warning not
  found is dropped, and the machine is judged anew;
- a stop whose notice is still in the outbox is told only once AWS's own record proves that this stop
  happened: the machine's `costguard:stopped-at` (written right after it) is this stop's time, or
  the machine stopped (StateTransitionReason) or started again after the stop was decided; otherwise
  the notice is dropped as superseded (another stop, or none);
- delivered warnings past their time are removed (and delivered reports past their day);
- an effect told to nobody (a working-hours start, a change of scale-in protection) whose attempt
  died is recorded once AWS shows it happened, else dropped (idle/acts/effects.py).

Dry-run keeps reports only: a stop or a warning left from another mode waits for a mode that tells
owners (dry-run tells nobody but the alerts channel, and changes nothing).
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from costguard.aws.ec2 import Ec2
from costguard.core import formatting, tags
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import AWS_ERRORS, delivered
from costguard.idle.acts.effects import Effects
from costguard.idle.acts.notices import Recovered, SweepNotices
from costguard.idle.acts.writes import SweepWriter
from costguard.idle.report import Outcome
from costguard.idle.rules.decision import Action
from costguard.slack.notifier import Delivery
from costguard.state.outbox import CANCEL, DELIVERED, EFFECTS, REPORTS, SENDING, STOP, WARN, Notice, Outbox

# Clocks differ a little: AWS's time of a stop is checked against costguard's time of its decision.
SKEW = timedelta(minutes=2)
# EC2's reason for a stop someone asked for: "User initiated (2026-11-21 14:00:05 GMT)".
_STOPPED = re.compile(r"\((\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (?:GMT|UTC)\)")


def stopped_since(instance: Instance) -> datetime | None:
    """When the machine's last stop was asked for, from EC2's StateTransitionReason; None if it does not say."""
    found = _STOPPED.search(instance.state_reason)
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC) if found else None


def proves_stop(notice: Notice, instance: Instance | None) -> bool:
    """AWS's own record says that this notice's stop happened (not another stop, and not none)."""
    if instance is None:
        return False  # gone: nothing left to tell about
    decided = notice.decided_time
    stopped_at = instance.tags.get(tags.STOPPED_AT, "")
    written = formatting.parse_time(stopped_at)
    if written is not None and written >= notice.time:  # a stop of this warning's, recorded on the machine
        return stopped_at == (notice.decided or notice.at)
    if instance.state in ("stopping", "stopped"):
        since = stopped_since(instance)
        return since is None or since >= decided - SKEW
    # Running again: started after the stop was decided (EC2 gives a machine a new launch time at each
    # start), so the stop happened and someone started it since.
    return instance.state in ("pending", "running") and instance.launch_time > decided


class Recovery:
    def __init__(
        self, *, ec2: Ec2, outbox: Outbox, notices: SweepNotices, writer: SweepWriter, effects: Effects
    ) -> None:
        self.ec2 = ec2
        self.outbox = outbox
        self.notices = notices
        self.writer = writer
        self.effects = effects

    def run(self, now: datetime) -> Recovered:
        records = self.outbox.read()
        recovered = Recovered()
        dry = self.notices.mode is Mode.DRY_RUN
        if not dry:
            recovered.started = self.effects.recover([n for n in records if n.kind in EFFECTS], now)
        notices = [n for n in records if n.kind in REPORTS or (n.kind not in EFFECTS and not dry)]
        recovered.reported = {n.sk for n in notices if n.kind in REPORTS and n.status == DELIVERED and n.live(now)}
        stale = [n for n in notices if n.status == DELIVERED and not n.live(now)]
        open_ = [n for n in notices if n.status != DELIVERED]
        recovered.busy = {n.instance_id for n in open_ if n.live(now)}
        expired = [n for n in open_ if not n.live(now)]
        found = self._look([n for n in expired if n.status == SENDING])
        settled = [n for n in expired if n.kind != STOP and n.sk in found]
        dropped = [n for n in expired if n.kind != STOP and n.sk not in found]
        try:
            if settled:  # posted before the attempt died: recorded now, with their ledger entries
                self.outbox.delivered([delivered(n, found[n.sk], now) for n in settled])
            if stale or dropped:
                self.outbox.remove(stale + dropped)
        except AWS_ERRORS as exc:
            # Posted, but not recorded yet: these machines are left alone until the next sweep records them.
            logger.warning("outbox left as it was for the next sweep", error=str(exc)[:200])
            recovered.busy |= {n.instance_id for n in settled}
            settled = []
        recovered.reported |= {n.sk for n in settled if n.kind in REPORTS}
        for notice in [n for n in notices if n.status == DELIVERED and n not in stale] + settled:
            (recovered.told if notice.kind == WARN else recovered.withdrawn if notice.kind == CANCEL else {})[
                notice.instance_id
            ] = notice
        recovered.stops = self._stops([n for n in expired if n.kind == STOP], found)
        return recovered

    def _look(self, notices: list[Notice]) -> dict[str, Delivery]:
        """The notices Slack's history shows were posted, by their key (one read per recipient). Where the
        history cannot be read, nothing is found: a warning is judged anew, a stop's notice posted again."""
        by_recipient: dict[str, list[Notice]] = defaultdict(list)
        for notice in notices:
            if notice.to and notice.marker:
                by_recipient[notice.to].append(notice)
        found: dict[str, Delivery] = {}
        for to, group in by_recipient.items():
            since = min(n.decided_time for n in group) - SKEW
            try:
                seen = self.notices.notifier().find(to, since.timestamp(), {n.marker for n in group})
            except SlackDeliveryError as exc:
                logger.warning("lost posts not confirmed; told again", to=to, count=len(group), error=str(exc)[:200])
                continue
            found.update({n.sk: seen[n.marker] for n in group if n.marker in seen})
        return found

    def _stops(self, left: list[Notice], found: dict[str, Delivery]) -> list[tuple[Instance, Outcome, Notice]]:
        """Stops a dead attempt made: proven ones recorded (tag, ledger) and returned to be told, or, already
        told, recorded as such; the rest dropped."""
        if not left:
            return []
        machines = {i.instance_id: i for i in self.ec2.describe([n.instance_id for n in left])}
        proven = [n for n in left if proves_stop(n, machines.get(n.instance_id))]
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
