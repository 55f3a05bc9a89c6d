"""Finding the RunInstances events of given instances in CloudTrail's 90-day event history.

LookupEvents allows one lookup attribute per call and 2 calls per second per region, so instead of
one lookup per instance the backfill walks the RunInstances events of the period once, newest
first, 50 a page, and stops as soon as every wanted instance is found. In an account that launches
so much that the walk hits its page cap, the instances still missing are looked up one by one
(ResourceName), a bounded number per run; the rest wait for the next run and are not called unknown.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from costguard.aws.cloudtrail import CloudTrail
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger
from costguard.core.records import Skipped
from costguard.owners.launches import LaunchEvent, parse_lookup_event


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
) -> LaunchSearch:
    search = LaunchSearch()
    remaining = set(wanted)
    if not remaining:
        return search
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
    walked = 0
    for events, more in trail.pages(attribute, start, end):
        search.pages += 1
        walked += 1
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
        if not remaining:
            return True
        if walked >= max_pages and more:
            return False
    return True
