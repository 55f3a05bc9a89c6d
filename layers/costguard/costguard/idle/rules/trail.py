"""The trail of a decision: which rule changed it, to what, why, and on what evidence. Pure.

Every rule of the pipeline (`pipeline.py`, which writes the steps) leaves a step where it changes the decision
about a machine, and the first verdict always leaves one; the steps, in order, are the answer to "why did
costguard stop my machine" (the ledger keeps them, the log line of each decision carries them, the *Why?*
button reads them back in the message's thread).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

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
    NIGHT_WORK = (
        "its own night work"  # a machine that cannot answer the check: the work it runs at night (automation.py)
    )
    MORNING = "its owner's morning"  # a machine that cannot answer: not stopped then (automation.py)
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


def as_json(trail: Sequence[Step]) -> list[dict[str, Any]]:
    return [s.to_json() for s in trail]


def read(raw: Iterable[Any]) -> tuple[Step, ...]:
    """A trail as the ledger kept it: the steps that can be read, in order."""
    steps = (Step.from_json(r) for r in raw if isinstance(r, Mapping))
    return tuple(s for s in steps if s is not None)
