"""The trail of a decision: which rule changed it, to what, why, and on what evidence. Pure.

Every rule of the pipeline (`pipeline.py`) leaves a step where it changes the decision about a machine, and
the first verdict always leaves one; the steps, in order, are the answer to "why did costguard stop my
machine" (the ledger keeps them, the log line of each decision carries them, the *Why?* button reads them
back in the message's thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from costguard.idle.rules.decision import Decision

WHY_LENGTH = 400  # a step's words, at most: the ledger keeps every step of every decision
EVIDENCE_LENGTH = 200


class Rule(StrEnum):
    """The rules of the pipeline, in their order (`pipeline.ORDER` runs them so)."""

    VERDICT = "idle verdict"  # metrics, the protections, the warning and its grace (decision.py)
    MACHINE_CHECK = "machine's check"  # what the machine itself says: work saves it (review.py)
    CERTAIN = "certain idleness"  # a sooner warning, or GPUs only the check sees, borne out or not (review.py)
    RECURRING = "recurring work"  # learned runs: held before one, or started again for it (recurring.py)
    PERSONS_DAY = "person's day"  # started again before its person's weekday (arrival.py)
    AFTER_UNDO = "after an undo"  # its person undid costguard's last stop: wait until idling pays (restarts.py)
    PROMISED = "start promised"  # a start again kept among the promises costguard honours
    MACHINE_JOBS = "machine's jobs"  # its crontab, timers, at queue (machine_jobs.py)
    SCARCE = "scarce capacity"  # a type EC2 lately could not start (capacity.py)
    BILL = "the bill"  # what a stop saves on the bill now (money.py)


@dataclass(frozen=True)
class Step:
    """One rule's mark on a decision: the action it left (`verdict`), why, and what it went on."""

    rule: Rule
    verdict: str
    why: str
    evidence: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rule": self.rule.value, "verdict": self.verdict, "why": self.why[:WHY_LENGTH]}
        if self.evidence:
            out["evidence"] = [e[:EVIDENCE_LENGTH] for e in self.evidence]
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Step | None:
        """A step as the ledger kept it; None for one that cannot be read (an older or damaged record)."""
        try:
            rule = Rule(str(raw["rule"]))
        except (KeyError, ValueError, TypeError):
            return None
        evidence = raw.get("evidence") or ()
        if not isinstance(evidence, list | tuple):
            evidence = ()
        return cls(rule, str(raw.get("verdict", "")), str(raw.get("why", "")), tuple(str(e) for e in evidence))


def first(decision: Decision) -> Decision:
    """The first verdict's step: what the metrics and the protections said."""
    step = Step(Rule.VERDICT, decision.action.value, decision.reason, _evidence(decision))
    return replace(decision, trail=(step,))


def stepped(rule: Rule, before: Decision, after: Decision) -> Decision:
    """`after`, with the step `rule` left on the way from `before` (none where the rule changed nothing)."""
    if _same(before, after):
        return replace(after, trail=before.trail) if after.trail != before.trail else after
    return replace(after, trail=(*before.trail, _step(rule, before, after)))


def _same(before: Decision, after: Decision) -> bool:
    return before is after or all(getattr(before, name) == getattr(after, name) for name in _WATCHED)


# What a rule may change that a person would ask about (the judgement is the first step's evidence).
_WATCHED = (
    "action",
    "reason",
    "stop_after",
    "will_stop",
    "activity",
    "learned",
    "start_at",
    "start_for",
    "bill",
    "scarce",
    "kept_for",
)


def _step(rule: Rule, before: Decision, after: Decision) -> Step:
    if after.action is not before.action or after.reason != before.reason:
        why = after.reason
    elif after.start_at != before.start_at:
        why = _start(after.learned, after.start_at)
    elif after.bill is not None and after.bill != before.bill:
        why = f"a stop saves {after.bill.text()} on the bill now: {after.bill.why}"
    elif after.activity != before.activity:
        why = after.activity
    else:
        why = after.reason
    return Step(rule, after.action.value, why, _evidence(after, before))


def _start(learned: str, start_at: datetime | None) -> str:
    if start_at is None:
        return f"{learned}: no start again promised" if learned else "no start again promised"
    return (
        f"{learned}: costguard starts it again at {start_at:%a %H:%M} UTC"
        if learned
        else (f"costguard starts it again at {start_at:%a %H:%M} UTC")
    )


def _evidence(after: Decision, before: Decision | None = None) -> tuple[str, ...]:
    """What the rule went on, as far as the decision says: the signals judged (first step), the machine's own
    answer, the bill's reasoning, the scarcity seen, the runs known."""
    out: list[str] = []
    if before is None and after.judgement is not None:
        out += [f"{s.label}: {s.reason}" for s in after.judgement.signals]
    if after.activity and (before is None or after.activity != before.activity):
        out.append(after.activity)
    if after.bill is not None and (before is None or after.bill != before.bill):
        out.append(f"bill: {after.bill.text()} ({after.bill.why})")
    if after.scarce and (before is None or after.scarce != before.scarce):
        out.append(f"capacity: {after.scarce}")
    if after.learned and (before is None or after.learned != before.learned):
        out.append(after.learned)
    return tuple(out)


def as_json(trail: Sequence[Step]) -> list[dict[str, Any]]:
    return [s.to_json() for s in trail]


def read(raw: Iterable[Any]) -> tuple[Step, ...]:
    """A trail as the ledger kept it: the steps that can be read, in order."""
    steps = (Step.from_json(r) for r in raw if isinstance(r, Mapping))
    return tuple(s for s in steps if s is not None)
