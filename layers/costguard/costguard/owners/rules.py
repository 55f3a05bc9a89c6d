"""Who owns an instance: the rules live in core.ownership (SageMaker's owner tagging shares them)."""

from __future__ import annotations

from costguard.core.ownership import (
    Identity,
    OwnerDecision,
    OwnerSource,
    decide_owner,
    owner_needs_correction,
)

__all__ = ["Identity", "OwnerDecision", "OwnerSource", "decide_owner", "owner_needs_correction"]
