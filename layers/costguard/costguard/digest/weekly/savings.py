"""What costguard's stops saved this week: hours each stopped machine stayed off, at its hourly price."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.state.entries import Entry


def saved_by_stops(
    entries: Sequence[Entry], raw: Mapping[str, Instance], end: datetime, prices: PriceBook
) -> tuple[float, float]:
    """Hours each stopped machine stayed stopped this week, and what that saved at its hourly price
    (the price the stop recorded; the price book's for stops pressed in Slack, which record none)."""
    hours = usd = 0.0
    for entry in entries:
        if not entry.kind.stopped or not entry.applied:
            continue
        instance = raw.get(entry.instance_id)
        if instance is None:
            continue  # terminated since: nothing more to say about it
        if instance.state == "stopped":
            until = end
        elif instance.launch_time > entry.at:
            until = instance.launch_time
        else:
            continue
        stopped = max(0.0, (until - entry.at).total_seconds() / 3600)
        hours += stopped
        price = entry.hourly_saving or prices.hourly(entry.instance_type, entry.region).usd_per_hour or 0.0
        usd += stopped * price
    return hours, usd
