"""The backfill's walk of CloudTrail's RunInstances history: resumable across runs, never past the time left."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from costguard.owners.launches import LaunchEvent
from costguard.owners.search import find_launches
from testing.launches import MemoryCursors, iam_user, launch_record

END = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
START = END - timedelta(days=90)


def history(count: int) -> list[dict[str, Any]]:
    """`count` RunInstances events, one every 77 seconds back from END, newest first, as LookupEvents answers."""
    events = []
    for n in range(count):
        when = END - timedelta(seconds=77 * (n + 1))
        instance_id = f"i-{n:017x}"
        record = launch_record(
            instance_id=instance_id,
            region="us-east-1",
            instance_type="g5.xlarge",
            identity=iam_user(f"user{n % 40}"),
            when=when,
            event_id=f"e-{n}",
        )
        events.append({"EventId": f"e-{n}", "EventTime": when, "CloudTrailEvent": json.dumps(record)})
    return events


class Trail:
    """CloudTrail's pages, 50 events each, newest first, within [start, end); each page costs half a second."""

    def __init__(self, events: Sequence[Mapping[str, Any]], clock: list[float]) -> None:
        self.events, self.clock, self.pages_served = events, clock, 0

    def pages(
        self, attribute: tuple[str, str], start: datetime, end: datetime
    ) -> Iterator[tuple[Sequence[Mapping[str, Any]], bool]]:
        window = [e for e in self.events if start <= e["EventTime"] < end]
        for offset in range(0, len(window), 50):
            self.pages_served += 1
            self.clock[0] += 0.5  # LookupEvents: 2 calls a second
            yield window[offset : offset + 50], offset + 50 < len(window)


def test_a_long_history_is_walked_over_several_runs_never_past_the_time_left_and_never_from_zero() -> None:
    events = history(20_000)  # 400 pages: 200 s of LookupEvents at 2 a second
    clock = [0.0]
    trail, cursors = Trail(events, clock), MemoryCursors()
    oldest = "i-" + f"{19_990:017x}"
    wanted = ["i-" + f"{5:017x}", "i-" + f"{12_000:017x}", oldest]
    runs, served = 0, []
    found: dict[str, LaunchEvent] = {}
    while len(found) < len(wanted):
        runs += 1
        started = clock[0]

        def left(started: float = started) -> float:
            return 150.0 - (clock[0] - started)  # a 150 s invocation

        search = find_launches(
            cast(Any, trail),
            [w for w in wanted if w not in found],
            START,
            END,
            cursors=cursors,
            time_left=left,
        )
        assert clock[0] - started <= 150.0 - 60.0 + 0.5, "stopped with its reserve left"
        found.update(search.found)
        served.append(trail.pages_served)
        assert runs < 5
    assert runs == 3
    assert found[oldest].identity.user_name == "user30"
    # The pages walked add up to the history once (plus the new events' top page each run), not once a run.
    assert trail.pages_served <= 400 + runs
    assert cursors.load() is None  # the walk is over: nothing to carry on


def test_instances_not_in_a_history_walked_to_its_end_are_absent_and_the_rest_only_deferred() -> None:
    clock = [0.0]
    trail, cursors = Trail(history(6_000), clock), MemoryCursors()
    search = find_launches(
        cast(Any, trail), ["i-0ffffffffffffffff"], START, END, cursors=cursors, time_left=lambda: 70.0 - clock[0]
    )
    assert search.unsearched == {"i-0ffffffffffffffff"}  # out of time: not found, but not called unknown
    assert cursors.load() is not None
    while cursors.load() is not None:
        clock[0] = 0.0
        search = find_launches(
            cast(Any, trail), ["i-0ffffffffffffffff"], START, END, cursors=cursors, time_left=lambda: 70.0 - clock[0]
        )
    assert search.unsearched == set()
    assert search.found == {}
