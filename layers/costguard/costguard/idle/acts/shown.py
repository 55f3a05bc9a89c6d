"""The idle stopper's messages changed in place (slack/live.py, state/live.py): a machine's part of its latest
message says what is true now once something happened to it after its warning. Presentation only: a change
comes after what it tells of, and one that cannot be made is logged and counted, never retried at the cost of
anything else.

- a stop: its warning changed to say so, with the button that starts it again; the stop's own notice then
  goes out as a reply under it (acts/notices.py);
- kept by a tag, exempt, or at work again (the warning cleared without a click);
- a warning delivered by an attempt that died before its tags, which this sweep will not carry out: withdrawn;
- a warning whose stop time has passed a sweep ago, and which this sweep does not carry out either (its data
  has a gap the sweeps cannot fill, a start it must keep cannot be recorded...): withdrawn, the next warning
  given afresh;
- what EC2 says happened later: started again after a stop, stopped by someone, terminated.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import formatting, tags
from costguard.core.clock import forever
from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import AWS_ERRORS, SLACK_RESERVE_SECONDS, Telling
from costguard.idle.acts.writes import PendingWrites, Stopped
from costguard.idle.report import Outcome
from costguard.idle.rules.capacity import tells_scarce
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.money import tells_prepaid
from costguard.idle.words.messages import told_above
from costguard.slack import live
from costguard.slack.blocks import NOTHING, Mrkdwn
from costguard.slack.live import Phase
from costguard.state.live import ERRORS, LiveMessages, Where, reshow
from costguard.state.outbox import Notice, Outbox, unsaid

# A warning whose stop time passed this long ago, and that a sweep still does not carry out, is withdrawn: the
# first sweep past its time may wait for one late answer (a check, a read: asked again by the next sweep), the one
# after says so. A sweep interval (15 min by default): at 10 min, a first sweep landing 10-15 min after the stop
# time withdrew the warning on its first try.
OVERDUE = timedelta(minutes=15)

# Warnings changed for a stop only with this much of the invocation left: the stop notices must not wait for
# edits (Slack's chat.update is Tier 3) and go out with the next sweep instead.
TIME_TO_CHANGE = 2 * SLACK_RESERVE_SECONDS


class Shown:
    def __init__(
        self,
        live_messages: LiveMessages,
        *,
        zone: str,
        mode: Mode,
        time_left: Callable[[], float] = forever,
        outbox: Outbox | None = None,
    ) -> None:
        self.live = live_messages
        self.zone, self.mode = zone, mode  # the team's zone: a time's fallback text
        self.time_left = time_left
        self.outbox = outbox  # where a withdrawal its message could not show waits for the next sweep
        self._later: list[tuple[str, live.Change, str]] = []
        self._ahead: dict[str, Where] = {}  # withdrawals kept as unsaid before the writes (their messages)
        self._lock = threading.Lock()

    def later(self, instance_id: str, change: live.Change, *, why: str = "") -> None:
        """A machine's part of its latest message changed once this sweep's writes are made. `why`: the warning it
        shows withdrawn, and why (a change that cannot be made then is made by the next sweep that can)."""
        with self._lock:
            self._later.append((instance_id, change, why))

    def before_writes(self, now: datetime) -> None:
        """The withdrawals queued, each kept in the outbox as unsaid (its message, and why) before the writes that
        take its warning's tags off: a sweep that ends between those writes and its edit (Lambda's timeout, a
        kill) leaves a machine with no warning to withdraw, and only this record tells the next sweep (or the
        retry) that the message still promises the stop. Never raises: one not kept is logged (and changed in place
        as before)."""
        with self._lock:
            withdrawn = [(iid, why) for iid, _, why in self._later if why and iid not in self._ahead]
        if not withdrawn or self.mode is Mode.DRY_RUN or self.outbox is None:
            return
        where = self.live.where(iid for iid, _ in withdrawn)
        ahead = {iid: where[iid] for iid, _ in withdrawn if iid in where}
        if not ahead:
            return
        try:
            self.outbox.add([unsaid(iid, where[iid], why, now) for iid, why in withdrawn if iid in ahead])
        except AWS_ERRORS as exc:
            logger.warning("withdrawn warnings not kept before their writes", count=len(ahead), error=str(exc)[:200])
            return
        with self._lock:
            self._ahead.update(ahead)

    def edit_queued(self, now: datetime | None = None, *, uncleared: Collection[str] = ()) -> None:
        """Each change queued, said in place in its machine's latest message. A withdrawal the message could not
        show (its record or Slack refused the change) is kept in the outbox for the next sweep to show; one kept
        before the writes (before_writes) goes once its message shows it. The machines `uncleared` (their
        warning's tags still on them: the clear's record or DeleteTags refused) show nothing: their warning still
        stands, and a later sweep may stop them as it promised; a withdrawal kept for one of them goes."""
        with self._lock:
            queued, self._later = self._later, []
            ahead, self._ahead = self._ahead, {}
        shown = [(iid, change, why) for iid, change, why in queued if iid not in uncleared]
        standing = [unsaid(iid, at, "", now or datetime.now(tz=UTC)) for iid, at in ahead.items() if iid in uncleared]
        ahead = {iid: at for iid, at in ahead.items() if iid not in uncleared}
        if standing and self.outbox is not None:
            try:
                self.outbox.remove(standing)
            except AWS_ERRORS as exc:  # dropped by the next sweep's recovery: its machine still carries the warning
                logger.warning("withdrawals not made, their records left", count=len(standing), error=str(exc)[:200])
        if not shown or self.mode is Mode.DRY_RUN:
            return
        where = {**self.live.where(iid for iid, _, _ in shown if iid not in ahead), **ahead}
        done = self.live.change_many([(where[iid], iid, change) for iid, change, _ in shown if iid in where])
        left = [(iid, where[iid], why) for iid, _, why in shown if why and iid in where and iid not in done]
        self.keep_unsaid([w for w in left if w[0] not in ahead], now)
        said = [unsaid(iid, at, "", now or datetime.now(tz=UTC)) for iid, at in ahead.items() if iid in done]
        if said and self.outbox is not None:
            try:
                self.outbox.remove(said)
            except AWS_ERRORS as exc:  # shown again by the next sweep, as it stands: an edit that changes nothing
                logger.warning("withdrawals shown, their records left", count=len(said), error=str(exc)[:200])

    def keep_unsaid(self, left: Sequence[tuple[str, Where, str]], now: datetime | None = None) -> None:
        """Withdrawals their messages do not show yet (machine, message, why), kept for the next sweep. Never
        raises: one not kept is logged."""
        if not left or self.outbox is None:
            return
        at = now or datetime.now(tz=UTC)
        try:
            self.outbox.add([unsaid(iid, where, why, at) for iid, where, why in left])
        except AWS_ERRORS as exc:
            logger.warning("withdrawn warnings not shown, nor kept to be", count=len(left), error=str(exc)[:200])

    def stale(self) -> None:
        """The messages whose last edit Slack did not take, shown again as they stand now (state/live.py)."""
        reshow(self.live)

    def unkept(
        self,
        instance: Instance,
        told: Notice | None,
        decision: Decision,
        outcome: Outcome,
        *,
        writes: PendingWrites,
        now: datetime,
    ) -> Outcome | None:
        """A warning that stands without this sweep carrying it out, settled now: one `told` (recorded, not
        tagged) completed or withdrawn; a tagged one past its stop time that this sweep does not stop either
        withdrawn (a machine left running for its bill or its scarcity is told so on its own). The machine's
        outcome; None for any other decision."""
        if told is not None:
            return self.complete_or_withdraw(instance, told, decision, outcome, writes)
        if overdue(instance, decision, now) and not (tells_prepaid(decision) or tells_scarce(decision)):
            return self.withdraw(instance, decision, outcome, writes)
        return None

    def complete_or_withdraw(
        self, instance: Instance, told: Notice, decision: Decision, outcome: Outcome, writes: PendingWrites
    ) -> Outcome:
        """A warning an attempt that died delivered and recorded, but did not tag: its record is the warning. A
        sweep that warns the machine again completes it (its tags, as it was told); any other decision (a gap
        in the data, kept, at work, stopped...) withdraws it as a tagged one is (its record and the ledger's
        say so, queued with the sweep's writes), and its message says so, in place, once they are made: no
        message promises a stop that will not happen. The machine's outcome."""
        warned = {tags.IDLE_WARNED_AT: told.at, tags.STOP_AFTER: told.stop_after}
        if decision.action is Action.WARN:
            writes.tag(instance, outcome, warned)
            return outcome
        return self.withdraw(replace(instance, tags={**instance.tags, **warned}), decision, outcome, writes)

    def withdraw(self, instance: Instance, decision: Decision, outcome: Outcome, writes: PendingWrites) -> Outcome:
        """A warning this sweep will not carry out (its tags on `instance`), withdrawn as a tagged one is: its
        record and the ledger's say so (queued with the sweep's writes, dated as the warning is), and its message
        says so, in place, once they are made. The machine's outcome."""
        why = decision.reason
        cleared = replace(outcome, action=Action.CLEAR_WARNING, reason=f"warning withdrawn: {why}")
        writes.clear(instance, cleared)
        self.later(instance.instance_id, live.withdrawn(why), why=why)
        return cleared

    def state_changed(self, instance_id: str, state: str, at: datetime) -> None:
        """What EC2 says happened to a machine: started again after a stop, stopped by someone, terminated. A
        part that says it already (a click's, the sweep's own stop) is left as it is."""
        change: live.Change
        if state == "running":
            change = _when(live.running(at, NOTHING, self.zone), Phase.STOPPED)
        elif state == "stopped":
            change = _when(live.stopped(at, None, self.zone), Phase.IDLE, Phase.KEPT, Phase.RUNNING)
        elif state == "terminated":
            change = _when(live.gone(at, "terminated", self.zone), *(p for p in Phase if p is not Phase.GONE))
        else:
            return
        self.live.change(instance_id, change)

    def stops(self, stopped: Stopped, who: Callable[[str], Mrkdwn]) -> list[Telling]:
        """Each stop's telling: its warning changed to say it is stopped (with the button that starts it again),
        and the notice a reply under it; a warning that cannot be changed leaves the notice to say it all."""
        where = self.live.where(n.instance_id for _, _, n in stopped if n.live_part is not None) if stopped else {}
        if self.time_left() < TIME_TO_CHANGE:
            where = {}  # little time left: the notices first, each saying it all (the warnings stay as they were)
        parts = {n.instance_id: n.live_part for _, _, n in stopped if n.live_part is not None}
        changed = self.live.change_many([(where[i], i, _as(p)) for i, p in parts.items() if i in where])
        tellings = []
        for _, _, notice in stopped:
            part, at = notice.live_part, where.get(notice.instance_id)
            if part is None:  # a notice kept before live messages: told as it was written
                tellings.append(Telling(notice, notice.message))
            elif at is not None and notice.instance_id in changed:
                owner = who(notice.owner)
                tellings.append(Telling(notice, notice.message, part=told_above(part), who=owner, reply_to=at))
            else:
                tellings.append(Telling(notice, notice.message, part=part, who=who(notice.owner)))
        return tellings


def overdue(instance: Instance, decision: Decision, now: datetime) -> bool:
    """A warning of this run of the machine whose stop time passed a sweep ago, that this sweep does not carry
    out either (it decided nothing: a gap in its data, a start it cannot record, a hold...): its message
    would go on promising a stop that is not coming."""
    if decision.action is not Action.NONE:
        return False
    warned = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    stop_after = formatting.parse_time(instance.tags.get(tags.STOP_AFTER))
    if warned is None or stop_after is None or warned < instance.launch_time:
        return False
    return now - stop_after >= OVERDUE


def show_unsaid(live_messages: LiveMessages, outbox: Outbox, records: Sequence[Notice]) -> None:
    """Withdrawals earlier sweeps could not show, shown now: a part still promising its stop is changed to say
    costguard will not stop it now (and why); one whose record says so already (Slack's answer lost) is shown as
    it stands. Each record goes once its message tells the truth (or is no longer kept); one that fails again
    stays for the next sweep. Never raises."""
    done = []
    for record in records:
        at: Where = (record.to, record.ts)
        try:
            read = live_messages.read(at)
            part = read[0].part(record.instance_id) if read is not None else None
            if read is None or part is None:
                done.append(record)  # no longer kept, or not about it: nothing to change
            elif part.phase is live.Phase.IDLE:
                change = live.withdrawn(record.text)
                if record.instance_id in live_messages.change_many([(at, record.instance_id, change)]):
                    done.append(record)
            else:
                live_messages.notifier().update(at[0], at[1], read[0].message())
                done.append(record)
        except (*ERRORS, SlackDeliveryError) as exc:
            logger.warning("withdrawn warning not shown yet", instance_id=record.instance_id, error=str(exc)[:200])
    if done:
        with contextlib.suppress(*AWS_ERRORS):
            outbox.remove(done)


def _as(told: live.Part) -> live.Change:
    """A machine's part changed to say what `told` says now (its status, phase and buttons)."""
    return lambda part: part.now(told.status, told.phase, told.word, told.buttons, told.promise)


def _when(change: live.Change, *phases: Phase) -> live.Change:
    """A change made only to a part in one of these phases: an event never overwrites what a click said."""
    return lambda part: change(part) if part.phase in phases else None
