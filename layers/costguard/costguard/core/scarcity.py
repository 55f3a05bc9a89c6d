"""Which instance types are scarce where: a stopped machine of a scarce type may not start again. Pure.

Evidence is a start that failed for capacity (`InsufficientInstanceCapacity`) in the last two weeks, from
CloudTrail (anyone's RunInstances or StartInstances) or from costguard's own starts. A failure whose
request named no Availability Zone (a RunInstances into a subnet) counts for every zone of its region.

EC2 runs short of a type at the hours people start it (a team's morning, another's after lunch), so the times of
day of the refusals are kept too: a start at a time of day no refusal came near in those two weeks is one EC2 is
not known to refuse (`refused_near`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# CloudTrail records the error as "Server.InsufficientInstanceCapacity"; the API answers without the prefix.
CAPACITY_ERRORS = frozenset({"Server.InsufficientInstanceCapacity", "InsufficientInstanceCapacity"})
SCARCE_FOR = timedelta(days=14)
# A day CloudTrail gave only in part (its busiest days are cut short: the oldest refusals unseen): kept as a
# failure of no type from this source, it makes the times of every refusal of its two weeks unknown.
UNSEEN = "CloudTrail, cut short"
NEAR = timedelta(hours=2)  # a refusal this near a start's time of day (either side) counts against it
DAY_MINUTES = 24 * 60


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
    times: tuple[datetime, ...] = ()  # when EC2 refused, oldest first; () when not known

    def refused_near(self, begin: datetime, end: datetime, margin: timedelta = NEAR) -> bool:
        """Whether EC2 refused this type here at a time of day (UTC) from `begin` to `end`, `margin` either side,
        on any day of the evidence. With no times known, or a span of a whole day: yes."""
        span = end - begin + 2 * margin
        if not self.times or span >= timedelta(days=1):
            return True
        low = _minute_of_day(begin - margin)
        length = int(span.total_seconds() // 60)
        return any((_minute_of_day(at) - low) % DAY_MINUTES <= length for at in self.times)

    def hours(self) -> str:
        """ "08:10-10:25, 13:40 UTC": the times of day EC2 refused, merged where an hour apart."""
        minutes = sorted({_minute_of_day(at) for at in self.times})
        runs: list[list[int]] = []
        for minute in minutes:
            if runs and minute - runs[-1][1] <= 60:  # an hour apart: one shortage
                runs[-1][1] = minute
            else:
                runs.append([minute, minute])
        said = [_clock(a) if a == b else f"{_clock(a)}-{_clock(b)}" for a, b in runs]
        return f"{', '.join(said)} UTC" if said else "unknown hours"

    def evidence(self, now: datetime) -> str:
        """ "6 p4d.24xlarge starts failed in us-east-1a this week"."""
        span = "this week" if now - self.first <= timedelta(days=7) else "in the last two weeks"
        where = f" in {self.zone}" if self.zone else ""
        starts = "start" if self.failures == 1 else "starts"
        return f"{self.failures} {self.instance_type} {starts} failed for capacity{where} {span}"


def scarcities(failures: Iterable[FailedStart], now: datetime) -> dict[tuple[str, str], Scarcity]:
    """(type, zone) -> the evidence of the last two weeks; a zone of "" holds the failures that named none."""
    seen: dict[tuple[str, str], list[datetime]] = {}
    unseen = False  # a day read in part: when EC2 refused is not all known
    for failure in failures:
        if not now - SCARCE_FOR <= failure.at <= now:
            continue
        unseen = unseen or failure.source == UNSEEN
        if failure.instance_type:
            seen.setdefault((failure.instance_type, failure.zone), []).append(failure.at)
    return {
        key: Scarcity(key[0], key[1], len(times), max(times), min(times), () if unseen else tuple(sorted(times)))
        for key, times in seen.items()
    }


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
        tuple(sorted(here.times + anywhere.times)) if here.times and anywhere.times else (),
    )


def _minute_of_day(at: datetime) -> int:
    moment = at.astimezone(UTC)
    return moment.hour * 60 + moment.minute


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"
