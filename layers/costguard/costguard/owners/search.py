"""Finding the RunInstances events of given instances in CloudTrail's 90-day event history.

LookupEvents allows one lookup attribute per call and 2 calls per second per region, so instead of
one lookup per instance the backfill walks the RunInstances events of the period once, newest
first, 50 a page, and stops as soon as every wanted instance is found. In an account that launches
so much that the walk hits its page cap, the instances still missing are looked up one by one
(ResourceName), a bounded number per run; the rest wait for the next run and are not called unknown.

With a cursor store (the state table), the walk is resumable instead: it goes on while the invocation
has time, and where it stopped is kept, so the next run walks the events that came since, then carries
on down from where the last one stopped. An account with 100,000 launches in 90 days (2,000 pages, over
16 minutes at 2 calls a second) is walked once over a few runs, never from zero, none past its timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from costguard.aws.cloudtrail import CloudTrail
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger
from costguard.core.records import Skipped
from costguard.owners.launches import LaunchEvent, parse_lookup_event
from costguard.state.cursors import WalkCursor

# A walk stops taking pages with this much of its invocation left: enough to tag what it found.
RESERVE_SECONDS = 60.0


class Cursors(Protocol):
    def load(self) -> WalkCursor | None: ...
    def save(self, cursor: WalkCursor | None) -> None: ...


@dataclass
class LaunchSearch:
    found: dict[str, LaunchEvent] = field(default_factory=dict)
    pages: int = 0
    unreadable: int = 0
    # Instances whose search did not finish in this run: not found, but not known to be absent either.
    unsearched: set[str] = field(default_factory=set)


def find_launches(
    trail: CloudTrail,
    wanted: Collection[str],
    start: datetime,
    end: datetime,
    *,
    max_pages: int = 200,
    max_single_lookups: int = 100,
    cursors: Cursors | None = None,
    time_left: Callable[[], float] | None = None,
) -> LaunchSearch:
    search = LaunchSearch()
    remaining = set(wanted)
    if not remaining:
        return search
    if cursors is not None:
        forever = time_left or (lambda: float("inf"))
        return _resume(trail, remaining, start, end, search=search, cursors=cursors, time_left=forever)
    walked_all = _walk(
        trail,
        attribute=("EventName", "RunInstances"),
        start=start,
        end=end,
        remaining=remaining,
        search=search,
        max_pages=max_pages,
    )
    if walked_all or not remaining:
        return search
    for index, instance_id in enumerate(sorted(remaining)):
        if index >= max_single_lookups:
            search.unsearched.add(instance_id)
            continue
        found_all = _walk(
            trail,
            attribute=("ResourceName", instance_id),
            start=start,
            end=end,
            remaining={instance_id},
            search=search,
            max_pages=5,
        )
        if not found_all:
            search.unsearched.add(instance_id)
    return search


def _walk(
    trail: CloudTrail,
    *,
    attribute: tuple[str, str],
    start: datetime,
    end: datetime,
    remaining: set[str],
    search: LaunchSearch,
    max_pages: int,
) -> bool:
    """Walk pages until `remaining` is empty or the period is covered (True), or the cap is hit (False)."""
    for walked, (events, more) in enumerate(trail.pages(attribute, start, end), start=1):
        search.pages += 1
        _take(events, remaining, search)
        if not remaining:
            return True
        if walked >= max_pages and more:
            return False
    return True


def _resume(
    trail: CloudTrail,
    remaining: set[str],
    start: datetime,
    end: datetime,
    *,
    search: LaunchSearch,
    cursors: Cursors,
    time_left: Callable[[], float],
) -> LaunchSearch:
    """The walk carried on from where earlier runs stopped, for as long as this run has time."""
    cursor = cursors.load()
    if cursor is not None and cursor.reached <= start:
        cursor = None
    # The events since the last run first (few), then on down from where it stopped.
    segments = [(cursor.began, end), (start, cursor.reached)] if cursor else [(start, end)]
    for index, (low, high) in enumerate(segments):
        state, oldest = _timed_walk(trail, low, high, remaining=remaining, search=search, time_left=time_left)
        if state == "found":
            cursors.save(None)  # everything wanted is found; a later run starts from its own instances
            return search
        if state == "out of time":
            last = index == len(segments) - 1
            if last:  # everything from `end` down to `oldest` is walked now
                cursors.save(WalkCursor(began=end, reached=min(high, oldest + timedelta(seconds=1))))
            search.unsearched |= remaining
            return search
    cursors.save(None)  # the whole history walked: what is still missing is not in it
    return search


def _timed_walk(
    trail: CloudTrail,
    low: datetime,
    high: datetime,
    *,
    remaining: set[str],
    search: LaunchSearch,
    time_left: Callable[[], float],
) -> tuple[str, datetime]:
    oldest = high
    for events, more in trail.pages(("EventName", "RunInstances"), low, high):
        search.pages += 1
        _take(events, remaining, search)
        for event in events:
            at = event.get("EventTime")
            if isinstance(at, datetime):
                oldest = min(oldest, at)
        if not remaining:
            return "found", oldest
        if more and time_left() < RESERVE_SECONDS:
            return "out of time", oldest
    return "walked", oldest


def _take(events: Any, remaining: set[str], search: LaunchSearch) -> None:
    for result in events:
        try:
            parsed = parse_lookup_event(result)
        except EventValidationError as exc:
            search.unreadable += 1
            logger.warning("unreadable CloudTrail event", event_id=result.get("EventId"), error=str(exc))
            continue
        if isinstance(parsed, Skipped):
            continue
        for instance_id in parsed.instance_ids:
            if instance_id in remaining:
                search.found[instance_id] = parsed
                remaining.discard(instance_id)
