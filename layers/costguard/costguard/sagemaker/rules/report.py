"""What a SageMaker sweep did in one region: an outcome per resource, and the summary the handler returns."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from costguard.sagemaker.rules.decision import Action


@dataclass
class Outcome:
    key: str
    action: Action
    reason: str
    applied: bool = True
    detail: str = ""  # "retry: …" when a later sweep must try again

    def retry(self, why: object) -> None:
        self.applied, self.detail = False, f"retry: {why}"


@dataclass
class SweepReport:
    region: str
    candidates: int = 0
    outcomes: list[Outcome] = field(default_factory=list)
    unwatched: list[str] = field(default_factory=list)  # GPU notebook instances that report no kernel activity
    idle_settings_reported: int = 0
    errors: list[str] = field(default_factory=list)  # reads that failed (the rest of the sweep went on)

    @property
    def retryable(self) -> list[str]:
        return [f"{o.key}: {o.detail[6:]}" for o in self.outcomes if o.detail.startswith("retry:")]

    def summary(self) -> dict[str, Any]:
        counts = Counter(o.action.value for o in self.outcomes)
        done = {a: [o.key for o in self.outcomes if o.action is a and o.applied] for a in (Action.WARN, Action.ACT)}
        return {
            "candidates": self.candidates,
            "actions": dict(sorted(counts.items())),
            "warned": done[Action.WARN],
            "acted": done[Action.ACT],
            "decisions": [
                {"key": o.key, "action": o.action.value, "reason": o.reason, "applied": o.applied, "detail": o.detail}
                for o in self.outcomes
                if o.action is not Action.NONE
            ],
            "unwatched_notebooks": self.unwatched,
            "idle_settings_reported": self.idle_settings_reported,
            "errors": self.errors + self.retryable,
        }
