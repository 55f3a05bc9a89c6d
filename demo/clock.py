"""The demo's clock: what time it is for the handlers, and what their waits cost.

The handlers ask the Runtime for the time (`Runtime.now`) and wait through it (`Runtime.sleep` and
`Runtime.monotonic`: the activity check's polls, one Slack post a second per channel). Installed, this
clock answers all three: the demo moves it forward from scene to scene instead of letting 40 minutes
pass, and a wait moves it forward by the seconds waited, at once. Every scene, the ones to come
included, runs on it without asking; production keeps the wall clock.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from costguard.runtime import Runtime


class DemoClock:
    def __init__(self, start: datetime) -> None:
        self.at = start
        self.waited = 0.0  # seconds the handlers waited, all of them on this clock
        self.waits = 0
        self._lock = threading.Lock()  # the sweep's notices wait in threads

    def now(self) -> datetime:
        return self.at

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
        """From now on the handlers (every Runtime, the member account's too) read and wait on this clock."""
        Runtime.now = staticmethod(self.now)  # type: ignore[method-assign]
        Runtime.sleep = staticmethod(self.sleep)  # type: ignore[method-assign]
        Runtime.monotonic = staticmethod(self.monotonic)  # type: ignore[method-assign]
