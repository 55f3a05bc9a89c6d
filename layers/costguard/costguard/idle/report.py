"""What a sweep did in one region: an outcome per machine, and the summary the handler returns."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from costguard.core.records import Instance, Price
from costguard.core.settings import Mode
from costguard.idle.rules.decision import Action
from costguard.idle.rules.trail import Rule, Step, as_json
from costguard.state.entries import Entry, EntryKind


class Status(StrEnum):
    """Where one decision stands once the sweep is done with it."""

    DONE = "done"  # carried out, or (not `applied`) reported only, as the mode says
    RETRY = "retry"  # a call failed: a later run tries again
    DEFERRED = "deferred"  # too little time left in this run: the next sweep carries on
    IN_FLIGHT = "in-flight"  # another attempt is telling it
    REFUSED = "refused"  # AWS refused it for good: reported once, not retried


@dataclass(frozen=True)
class Settled:
    """What a step that carried out (part of) a decision says became of it; the last step's word stands."""

    status: Status
    detail: str = ""  # for people: logs and the handler's errors
    applied: bool = False

    @classmethod
    def retry(cls, why: object) -> Settled:
        return cls(Status.RETRY, f"{why}")


@dataclass(frozen=True)
class Outcome:
    """What became of one decision: carried out (`applied`) or not, where it stands (`status`), and why
    not (`detail`)."""

    instance_id: str
    instance_type: str
    owner: str
    action: Action
    reason: str
    applied: bool = True
    status: Status = Status.DONE
    detail: str = ""
    idle_hours: float = 0.0
    trail: tuple[Step, ...] = ()  # the decision's, kept with its ledger entry

    def settled(self, *steps: Settled | None) -> Outcome:
        """This outcome as the steps that carried it out left it (in their order; None: nothing to say)."""
        out = self
        for step in steps:
            if step is not None:
                out = replace(out, status=step.status, detail=step.detail, applied=step.applied)
        return out


@dataclass
class RegionReport:
    region: str
    candidates: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    no_gpu_telemetry: list[str] = field(default_factory=list)
    no_activity_check: list[str] = field(default_factory=list)  # no SSM agent: judged on metrics alone
    alarms_created: int = 0
    alarms_deleted: int = 0
    alarms_pending: int = 0  # left for the next sweep
    retryable_errors: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)  # started before their working hours, or learned work
    learned_started: list[str] = field(default_factory=list)  # ... of them, for learned recurring work

    def summary(self) -> dict[str, Any]:
        counts = Counter(o.action.value for o in self.outcomes)
        return {
            "candidates": self.candidates,
            "actions": dict(sorted(counts.items())),
            "stopped": [o.instance_id for o in self.outcomes if o.action is Action.STOP and o.applied],
            "warned": [o.instance_id for o in self.outcomes if o.action is Action.WARN and o.applied],
            "deferred": [o.instance_id for o in self.outcomes if o.status is Status.DEFERRED],
            "started": self.started,
            "learned_started": self.learned_started,
            "skipped": {o.instance_id: o.reason for o in self.outcomes if o.action is Action.SKIP},
            "no_gpu_telemetry": self.no_gpu_telemetry,
            "no_activity_check": self.no_activity_check,
            "decisions": [
                {"instance_id": o.instance_id, "action": o.action.value, "reason": o.reason, "applied": o.applied}
                for o in self.outcomes
                if o.action is not Action.NONE
            ],
            "alarms_created": self.alarms_created,
            "alarms_deleted": self.alarms_deleted,
            "alarms_pending": self.alarms_pending,
            "errors": self.retryable_errors,
        }


# The actions a sweep's metrics count (those carried out), each its own metric.
METRIC_ACTIONS = ("warn", "stop", "clear-warning", "cancel-stop", "protect", "unprotect")


def applied_counts(reports: Iterable[RegionReport]) -> Counter[str]:
    """The decisions carried out, by action, over these reports."""
    return Counter(o.action.value for r in reports for o in r.outcomes if o.applied)


def ledger_entry(
    instance: Instance,
    outcome: Outcome,
    at: datetime,
    *,
    mode: Mode,
    price: Price | None = None,
    kind: EntryKind | None = None,
) -> Entry:
    """The ledger's record of one decision carried out, dated when it was decided (so that a sweep that
    finishes a dead one's stop writes the same entry); a stop records the hourly price it saves. `kind`: where
    the record is not the action's (a machine left running)."""
    return Entry(
        at=at,
        kind=kind or EntryKind(outcome.action.value),
        instance_id=instance.instance_id,
        region=instance.region,
        mode=mode.value,
        applied=outcome.applied,
        owner=outcome.owner,
        instance_type=instance.instance_type,
        reason=outcome.reason,
        idle_hours=outcome.idle_hours,
        hourly_saving=(price.usd_per_hour or 0.0) if price else 0.0,
        list_hourly=(price.on_demand or 0.0) if price and price.source == "bill" else 0.0,
        trail=tuple(as_json(outcome.trail)),
    )


def machine_entry(
    instance: Instance,
    kind: EntryKind,
    at: datetime,
    *,
    mode: Mode,
    owner_tag_key: str,
    reason: str,
    applied: bool = True,
    idle_hours: float = 0.0,
    gpu_hours: float = 0.0,
    rule: Rule | None = None,
) -> Entry:
    """The ledger's record of something done to one machine outside a decision: a morning or learned start,
    a learned start judged wasted. `rule`: the rule the start keeps the promise of, its trail's one step."""
    return Entry(
        at=at,
        kind=kind,
        instance_id=instance.instance_id,
        region=instance.region,
        mode=mode.value,
        applied=applied,
        owner=instance.owner(owner_tag_key),
        instance_type=instance.instance_type,
        reason=reason,
        idle_hours=idle_hours,
        gpu_hours=gpu_hours,
        trail=(Step(rule, kind.value, reason).to_json(),) if rule is not None else (),
    )
