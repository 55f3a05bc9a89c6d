"""What owner tagging did: an outcome per instance, and the summary the handler returns."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from costguard.owners.rules import OwnerDecision, OwnerSource

# Sources that name nobody a Slack message could reach: listed for the team to fix by hand.
UNATTRIBUTED = {OwnerSource.SERVICE, OwnerSource.UNKNOWN}


@dataclass(frozen=True)
class Tagging:
    """The outcome for one instance."""

    instance_id: str
    region: str
    instance_type: str
    launch_time: datetime
    decision: OwnerDecision
    written: Mapping[str, str]
    applied: bool


@dataclass
class TaggingReport:
    results: list[Tagging] = field(default_factory=list)
    volumes_tagged: int = 0
    lookup_pages: int = 0
    unreadable_events: int = 0
    deferred: list[str] = field(default_factory=list)  # not searched to the end: next run

    @property
    def unattributed(self) -> list[Tagging]:
        return [r for r in self.results if r.decision.source in UNATTRIBUTED]

    def summary(self) -> dict[str, Any]:
        by_source: dict[str, int] = defaultdict(int)
        for r in self.results:
            by_source[r.decision.source.value] += 1
        return {
            "instances": len(self.results),
            "tagged": sum(1 for r in self.results if r.written and r.applied),
            "by_source": dict(by_source),
            "volumes_tagged": self.volumes_tagged,
            "unattributed": [r.instance_id for r in self.unattributed],
            "cloudtrail_pages": self.lookup_pages,
            "unreadable_events": self.unreadable_events,
            "deferred": self.deferred,
        }
