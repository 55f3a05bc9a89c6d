"""What costguard did, as the ledger keeps it: one entry per thing done to one instance. Pure records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EntryKind(StrEnum):
    """The kinds of ledger entry. The idle stopper's share their values with its decisions."""

    WARN = "warn"
    STOP = "stop"
    CLEAR_WARNING = "clear-warning"
    CANCEL_STOP = "cancel-stop"
    PROTECT = "protect"
    UNPROTECT = "unprotect"
    OWNER_TAGGED = "owner-tagged"
    OWNER_UNKNOWN = "owner-unknown"
    KEEP = "keep"
    STOP_FROM_SLACK = "stop-from-slack"
    START_FROM_SLACK = "start-from-slack"
    MORNING_START = "morning-start"  # started before its working hours (costguard:schedule)
    LEARNED_START = "learned-start"  # started before work it learned recurs (costguard:start-at)
    DAY_START = "day-start"  # started before its person's or its owner's working day (costguard:start-at)
    LEARNED_START_WASTED = "learned-start-wasted"  # ... and the work did not come
    LEARNED_START_OFF = "learned-start-off"  # its owner pressed "Don't start it"
    # A morning or learned start EC2 refused (InsufficientInstanceCapacity, say): one entry per start it was
    # for (`at`: the start's due time), its reason the last refusal, `until`: when costguard gives up on it.
    START_FAILED = "start-failed"
    # Idle, and left running for a reason its owner is told once a day (a stop saves nothing on the bill, or the
    # machine might not start again): the day's first tell, with the decision's trail.
    LEFT_RUNNING = "left-running"
    # SageMaker resources (the entry's instance_id is the resource's key: notebook/<name>, endpoint/<name>,
    # app/<domain>/<profile or space>/<type>/<name>), apart from the EC2 kinds the digest counts.
    SAGEMAKER_WARN = "sagemaker-warn"
    SAGEMAKER_STOP = "sagemaker-stop"  # a notebook instance stopped
    SAGEMAKER_DELETE = "sagemaker-delete"  # an endpoint or a Studio app deleted
    SAGEMAKER_CLEAR = "sagemaker-clear-warning"
    SAGEMAKER_KEEP = "sagemaker-keep"
    SAGEMAKER_START = "sagemaker-start"  # a notebook started again from Slack
    SAGEMAKER_RECREATE = "sagemaker-recreate"  # an endpoint recreated from Slack with its kept configuration

    @property
    def stopped(self) -> bool:
        """A stop costguard made, by itself or from a Slack button."""
        return self in (EntryKind.STOP, EntryKind.STOP_FROM_SLACK)


@dataclass(frozen=True)
class Entry:
    """One thing costguard did (or, in dry-run, would have done) to one instance."""

    at: datetime
    kind: EntryKind
    instance_id: str
    region: str
    mode: str
    applied: bool = True
    owner: str = ""
    instance_type: str = ""
    reason: str = ""
    idle_hours: float = 0.0
    hourly_saving: float = 0.0
    until: str = ""  # a timed keep: when it ends (ISO 8601, UTC)
    gpu_hours: float = 0.0  # a learned start: the GPU-hours its machine was stopped before it
    list_hourly: float = 0.0  # a stop priced on the bill (hourly_saving): its on-demand price beside it
    # The idle stopper's decision: each rule's step (rule, verdict, why, evidence), in the order they ran: the
    # answer to "why" (idle/rules/trail.py reads it back)
    trail: tuple[dict[str, Any], ...] = ()
