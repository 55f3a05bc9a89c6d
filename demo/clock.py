"""The demo's clock: the moment its story happens, what time it is for the handlers, and what their waits cost.

The story is pinned to one moment, `PRESENT`, in the team's zone: every scene, every date the demo shows
and every handler's `now` derive from it, so `make demo` tells the same story whenever it is started (a
story that followed the wall clock ran into bob's learned afternoon work at 14:55 UTC on a Thursday, and
its scene never happened). The handlers ask the Runtime for the time (`Runtime.now`) and wait through it
(`Runtime.sleep` and `Runtime.monotonic`: the activity check's polls, one Slack post a second per
channel). Installed, this clock answers all three, and moto's clock-dependent corrections (a start's
LaunchTime, ListMetrics' two weeks) and the Slack stand-in's message timestamps read it too. The demo
moves it forward from scene to scene instead of letting an hour pass, and a wait moves it forward by
the seconds waited, at once. Production keeps the wall clock.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from costguard.runtime import Runtime
from testing import moto_fixes

TEAM_ZONE = "Europe/Paris"
# Monday 16 November 2026, 09:00 at the team's office: the fleet's metrics run up to here. A Monday morning
# (the weekly digest's day; machines idle since Friday; an office machine's working hours about to open),
# a fortnight clear of a change of clocks (the learned starts and the digest read two weeks back), away
# from the work bob's notebook does every weekday afternoon (14:00 UTC), so that his idle notebook is
# warned and stopped.
PRESENT = datetime(2026, 11, 16, 9, 0, tzinfo=ZoneInfo(TEAM_ZONE)).astimezone(UTC)


class DemoClock:
    def __init__(self, start: datetime) -> None:
        self.at = start
        self.waited = 0.0  # seconds the handlers waited, all of them on this clock
        self.waits = 0
        self._lock = threading.Lock()  # the sweep's notices wait in threads

    def now(self) -> datetime:
        return self.at

    def timestamp(self) -> float:
        """Now, in epoch seconds (what a Slack message's ts says)."""
        return self.at.timestamp()

    def monotonic(self) -> float:
        """Seconds waited so far: never goes back, whatever time a scene sets."""
        return self.waited

    def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        with self._lock:
            self.waited += seconds
            self.waits += 1
            self.at += timedelta(seconds=seconds)

    def install(self) -> None:
        """From now on the handlers (every Runtime, the member account's too) read and wait on this clock, and
        moto's corrections that need the time read it as well."""
        Runtime.now = staticmethod(self.now)  # type: ignore[method-assign]
        Runtime.sleep = staticmethod(self.sleep)  # type: ignore[method-assign]
        Runtime.monotonic = staticmethod(self.monotonic)  # type: ignore[method-assign]
        moto_fixes.launch_time_at_start(self.now)  # a machine started again is one just started, as in AWS
        moto_fixes.list_metrics_as_of(self.now)  # "the last two weeks" of ListMetrics are the story's
