"""What a sweep keeps of what it read and decided, apart from the machines themselves: the activity checks'
answers (the evidence later sweeps judge on), the starts again it promised (before the decisions that announce
them are carried out), and the learned starts its reading judged (their outcome, the wasted ones in the ledger).
The reads never write; these are the writes their facts lead to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.core import formatting
from costguard.core.observability import logger, metrics
from costguard.core.records import Instance
from costguard.core.settings import Mode
from costguard.idle.report import machine_entry
from costguard.idle.rules.activity import ActivityCheck, CheckState
from costguard.idle.rules.decision import Decision, StartFor
from costguard.idle.rules.evidence import Answer, answer_of, kept
from costguard.idle.rules.recurring import Learned
from costguard.state.checklog import CheckLog
from costguard.state.entries import EntryKind
from costguard.state.history import MachineHistory
from costguard.state.ledger import Ledger, LedgerWriteError
from costguard.state.startlog import StartLog, StartRecord


def keep_answers(
    checklog: CheckLog, checked: Mapping[str, ActivityCheck], earlier: Mapping[str, Sequence[Answer]], now: datetime
) -> None:
    """This sweep's answers added to each machine's check log (the earlier ones stay in `earlier`: the
    review weighs the fresh answer apart)."""
    logs = {}
    for iid, check in checked.items():
        if check.state is CheckState.ANSWERED and check.report is not None:
            fresh = answer_of(check.report, now)
            logs[iid] = [a.to_json() for a in kept([*earlier.get(iid, ()), fresh], now)]
    if logs:
        checklog.write(logs, now)


@dataclass(frozen=True, kw_only=True)
class Promises:
    """The start log's side of the sweep: the starts again costguard promised, and the learned starts judged."""

    starts: StartLog
    ledger: Ledger
    mode: Mode
    owner_tag_key: str

    def keep(self, instance: Instance, decision: Decision, now: datetime, *, job: bool = False) -> bool:
        """Whether the start again this decision announces is now kept among the times costguard promised (a
        start-at it did not promise, it does not honour). A start for a job, or for its person's or owner's
        working day, is kept as such: never judged as a learned run's."""
        if decision.start_at is None:
            return True
        at, day = formatting.format_time(decision.start_at), decision.start_for is not StartFor.RUN
        until = formatting.format_time(decision.run_at) if decision.run_at is not None else ""
        return self.starts.update(
            instance.instance_id, now, lambda record: record.promise(at, job=job, day=day, until=until)
        )

    def judged(self, instance: Instance, found: Learned, now: datetime) -> None:
        """Past learned starts now judged: kept with their outcome, wasted ones in the ledger (keyed by the
        run they were for, so judging one twice records it once), a pattern broken twice remembered."""
        if not found.outcomes and not found.broken:
            return
        outcome = {formatting.format_time(e): ("used" if work else "wasted") for e, work in found.outcomes}

        def change(record: StartRecord) -> None:
            for start in record.starts:
                if not start.get("o") and start.get("e") in outcome:
                    start["o"] = outcome[start["e"]]
            if found.broken and found.broken not in record.broken:
                record.broken.append(found.broken)

        wasted = [
            machine_entry(
                instance,
                EntryKind.LEARNED_START_WASTED,
                e,
                mode=self.mode,
                owner_tag_key=self.owner_tag_key,
                reason=f"started for work expected at {e:%H:%M} UTC, which did not come",
            )
            for e, work in found.outcomes
            if not work
        ]
        if wasted:  # first: a kill before the start log's outcome leaves the run to be judged again
            try:
                self.ledger.record_many(wasted)
            except (ClientError, BotoCoreError, LedgerWriteError) as exc:  # a storm: the next sweep judges it
                logger.warning("wasted starts not recorded", instance_id=instance.instance_id, error=str(exc)[:200])
                return
        self.starts.update(instance.instance_id, now, change)


def remember(history: MachineHistory, instance_id: str, state: str, at: datetime) -> None:
    """A start or a stop, kept for the working hours the idle warning may offer. A nicety: a failed write
    is logged and counted, and the event (whose alarm work is done) is not retried for it."""
    try:
        history.record(instance_id, state, at)
    except (ClientError, BotoCoreError) as exc:
        logger.warning("state change not kept", instance_id=instance_id, error=str(exc)[:200])
        metrics.add_metric(name="StateChangesNotKept", unit=MetricUnit.Count, value=1)
