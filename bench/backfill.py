"""The owner backfill's walk of CloudTrail over an account with 100,000 launches in 90 days.

CloudTrail is an in-process stand-in on a simulated clock: LookupEvents answers 50 RunInstances events
a page, newest first, at 2 calls a second (AWS's LookupEvents quota per account and region) plus 30 ms,
so a run's time is what AWS would make it without the benchmark taking it. Each run is one backfill
invocation (600 s, its timeout) with the state-table cursor in memory; 500 instances nobody tagged are
wanted, launched all over the 90 days (the oldest near the start of the history). Runs follow each
other a day apart, as the daily schedule runs them; no launch happens meanwhile.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from costguard.owners.search import RESERVE_SECONDS, find_launches
from testing.launches import MemoryCursors, iam_user, launch_record

LAUNCHES = 100_000
WANTED = 500
PAGE = 50
CALL_SECONDS = 0.5 + 0.03  # 2 calls a second, and 30 ms an answer
TIMEOUT = 600.0
T0 = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
SPACING = timedelta(days=90) / LAUNCHES  # about 78 s between launches


def instance_id(n: int) -> str:
    return f"i-{n:017x}"


class Trail:
    """The n-th newest launch happened at T0 - (n + 1) x SPACING; its page is built when asked for."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.calls = 0
        self.template = launch_record(
            instance_id=instance_id(0),
            region="us-east-1",
            instance_type="g5.xlarge",
            identity=iam_user("someone"),
            when=T0,
            event_id="e-0",
        )

    def _event(self, n: int) -> dict[str, Any]:
        when = T0 - SPACING * (n + 1)
        record = dict(self.template, eventID=f"e-{n}", eventTime=when.strftime("%Y-%m-%dT%H:%M:%SZ"))
        record["userIdentity"] = iam_user(f"user{n % 300}")
        record["responseElements"] = {"instancesSet": {"items": [{"instanceId": instance_id(n)}]}}
        return {"EventId": f"e-{n}", "EventTime": when, "CloudTrailEvent": json.dumps(record)}

    def pages(
        self, _attribute: tuple[str, str], start: datetime, end: datetime
    ) -> Iterator[tuple[Sequence[Mapping[str, Any]], bool]]:
        # Launches within [start, end): n from first to last.
        first = max(0, math.ceil((T0 - end) / SPACING - 1 + 1e-9))
        last = min(LAUNCHES - 1, math.floor((T0 - start) / SPACING - 1))
        for offset in range(first, last + 1, PAGE):
            self.calls += 1
            self.clock += CALL_SECONDS
            top = min(offset + PAGE, last + 1)
            yield [self._event(n) for n in range(offset, top)], top <= last


def main() -> dict[str, Any]:
    trail, cursors = Trail(), MemoryCursors()
    wanted = {instance_id(n) for n in range(LAUNCHES - 1, 0, -(LAUNCHES // WANTED))}
    found: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    absent: set[str] = set()
    while len(runs) < 10:
        now = T0 + timedelta(days=len(runs))
        # What the backfill asks for: untagged instances launched within CloudTrail's 90 days.
        horizon = now - timedelta(days=90)
        asked = {w for w in wanted - found.keys() - absent if T0 - SPACING * (int(w[2:], 16) + 1) >= horizon}
        if not asked:
            break
        started, calls = trail.clock, trail.calls
        search = find_launches(
            cast(Any, trail),
            sorted(asked),
            now - timedelta(days=90),
            now,
            cursors=cursors,
            time_left=lambda started=started: TIMEOUT - (trail.clock - started),  # type: ignore[misc]
        )
        found.update(search.found)
        absent |= asked - search.found.keys() - search.unsearched  # walked to the end: not in the history
        runs.append(
            {
                "run": len(runs) + 1,
                "seconds": round(trail.clock - started, 1),
                "lookup_events_calls": trail.calls - calls,
                "found": len(search.found),
                "deferred": len(search.unsearched),
            }
        )
    floor = math.ceil(LAUNCHES / PAGE)
    result = {
        "launches": LAUNCHES,
        "wanted": len(wanted),
        "found": len(found),
        "not_in_history": len(absent),
        "aged_out": len(wanted - found.keys() - absent),  # older than 90 days by the run that would reach them
        "runs": runs,
        "longest_run_s": max(r["seconds"] for r in runs),
        "timeout_s": TIMEOUT,
        "reserve_s": RESERVE_SECONDS,
        "lookup_events_calls": trail.calls,
        "history_pages": floor,
    }
    print(
        f"  backfill over {LAUNCHES:,} launches: {len(found)}/{len(wanted)} found "
        f"({result['aged_out']} aged past 90 days first) in {len(runs)} runs, longest "
        f"{result['longest_run_s']} s of {TIMEOUT:.0f}; LookupEvents {trail.calls} calls "
        f"(the whole history: {floor} pages)"
    )
    return result


if __name__ == "__main__":
    main()
