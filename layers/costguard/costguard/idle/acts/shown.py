"""The idle stopper's messages changed in place (slack/live.py, state/live.py): a machine's part of its latest
message says what is true now once something happened to it after its warning. Presentation only: a change
comes after what it tells of, and one that cannot be made is logged and counted, never retried at the cost of
anything else.

- a stop: its warning changed to say so, with the button that starts it again; the stop's own notice then
  goes out as a reply under it (acts/notices.py);
- kept by a tag, exempt, or at work again (the warning cleared without a click);
- a warning delivered by an attempt that died before its tags, which this sweep will not carry out: withdrawn;
- what EC2 says happened later: started again after a stop, stopped by someone, terminated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

from costguard.core import tags
from costguard.core.clock import forever
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.acts.delivery import SLACK_RESERVE_SECONDS, Telling
from costguard.idle.acts.writes import PendingWrites, Stopped
from costguard.idle.report import Outcome
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.words.messages import told_above
from costguard.slack import live
from costguard.slack.blocks import NOTHING, Mrkdwn
from costguard.slack.live import Phase
from costguard.state.live import LiveMessages, reshow
from costguard.state.outbox import Notice

# Warnings changed for a stop only with this much of the invocation left: the stop notices must not wait for
# edits (Slack's chat.update is Tier 3) and go out with the next sweep instead.
TIME_TO_CHANGE = 2 * SLACK_RESERVE_SECONDS


class Shown:
    def __init__(
        self, live_messages: LiveMessages, *, zone: str, mode: Mode, time_left: Callable[[], float] = forever
    ) -> None:
        self.live = live_messages
        self.zone, self.mode = zone, mode  # the team's zone: a time's fallback text
        self.time_left = time_left
        self._later: list[tuple[str, live.Change]] = []
        self._lock = threading.Lock()

    def later(self, instance_id: str, change: live.Change) -> None:
        """A machine's part of its latest message changed once this sweep's writes are made."""
        with self._lock:
            self._later.append((instance_id, change))

    def edit_queued(self) -> None:
        """Each change queued, said in place in its machine's latest message."""
        with self._lock:
            shown, self._later = self._later, []
        if not shown or self.mode is Mode.DRY_RUN:
            return
        where = self.live.where(iid for iid, _ in shown)
        self.live.change_many([(where[iid], iid, change) for iid, change in shown if iid in where])

    def stale(self) -> None:
        """The messages whose last edit Slack did not take, shown again as they stand now (state/live.py)."""
        reshow(self.live)

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
        why = decision.reason
        cleared = replace(outcome, action=Action.CLEAR_WARNING, reason=f"warning withdrawn: {why}")
        writes.clear(replace(instance, tags={**instance.tags, **warned}), cleared)  # dated as the warning is
        self.later(instance.instance_id, live.withdrawn(why))
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


def _as(told: live.Part) -> live.Change:
    """A machine's part changed to say what `told` says now (its status, phase and buttons)."""
    return lambda part: part.now(told.status, told.phase, told.word, told.buttons, told.promise)


def _when(change: live.Change, *phases: Phase) -> live.Change:
    """A change made only to a part in one of these phases: an event never overwrites what a click said."""
    return lambda part: change(part) if part.phase in phases else None
