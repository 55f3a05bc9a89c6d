"""Which instance types are scarce where: a stopped machine of a scarce type may not start again. Pure.

Evidence is a start that failed for capacity (`InsufficientInstanceCapacity`) in the last two weeks, from
CloudTrail (anyone's RunInstances or StartInstances) or from costguard's own starts. A failure whose
request named no Availability Zone (a RunInstances into a subnet) counts for every zone of its region.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

# CloudTrail records the error as "Server.InsufficientInstanceCapacity"; the API answers without the prefix.
CAPACITY_ERRORS = frozenset({"Server.InsufficientInstanceCapacity", "InsufficientInstanceCapacity"})
SCARCE_FOR = timedelta(days=14)


@dataclass(frozen=True)
class FailedStart:
    """A start or launch that EC2 refused for want of capacity."""

    instance_type: str
    zone: str  # "" when the request named no zone
    at: datetime
    source: str  # "CloudTrail" or "costguard"
    instance_id: str = ""
    region: str = ""


@dataclass(frozen=True)
class Scarcity:
    """The evidence that a type is scarce in a zone."""

    instance_type: str
    zone: str
    failures: int
    last: datetime
    first: datetime

    def evidence(self, now: datetime) -> str:
        """ "6 p4d.24xlarge starts failed in us-east-1a this week"."""
        span = "this week" if now - self.first <= timedelta(days=7) else "in the last two weeks"
        where = f" in {self.zone}" if self.zone else ""
        starts = "start" if self.failures == 1 else "starts"
        return f"{self.failures} {self.instance_type} {starts} failed for capacity{where} {span}"


def scarcities(failures: Iterable[FailedStart], now: datetime) -> dict[tuple[str, str], Scarcity]:
    """(type, zone) -> the evidence of the last two weeks; a zone of "" holds the failures that named none."""
    seen: dict[tuple[str, str], list[datetime]] = {}
    for failure in failures:
        if now - SCARCE_FOR <= failure.at <= now and failure.instance_type:
            seen.setdefault((failure.instance_type, failure.zone), []).append(failure.at)
    return {key: Scarcity(key[0], key[1], len(times), max(times), min(times)) for key, times in seen.items()}


def scarcity_of(instance_type: str, zone: str, table: Mapping[tuple[str, str], Scarcity]) -> Scarcity | None:
    """The evidence that this type is scarce in this zone: its own zone's failures with those that named
    no zone added; None where there is none."""
    here, anywhere = table.get((instance_type, zone)), table.get((instance_type, ""))
    if here is None or anywhere is None:
        return here or anywhere
    return Scarcity(
        instance_type,
        zone,
        here.failures + anywhere.failures,
        max(here.last, anywhere.last),
        min(here.first, anywhere.first),
    )
