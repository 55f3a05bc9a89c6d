"""Reserved Instance and Savings Plans use over a period, as the weekly digest and the quarterly deep
dive show it. A pure record: digest/spend.py reads it from Cost Explorer."""

from __future__ import annotations

from dataclasses import dataclass, field

from costguard.core.records import Commitment


@dataclass
class CommitmentUse:
    """Reserved Instance and Savings Plans use and coverage over the week, and what expires soon."""

    ri_utilization: float | None = None
    ri_coverage: float | None = None
    sp_utilization: float | None = None
    sp_coverage: float | None = None
    expiring: list[Commitment] = field(default_factory=list)
