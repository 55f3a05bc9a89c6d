"""One message a second per channel, as Slack asks of chat.postMessage ("generally allows posting one
message per second per channel"): a sweep that tells the alerts channel about dozens of machines whose
owners Slack does not know sends them a second apart instead of in a burst Slack answers with 429s.

Threads share the pace: each takes the next free second of its channel before it posts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

PER_CHANNEL_SECONDS = 1.0


class ChannelPace:
    def __init__(
        self,
        interval: float = PER_CHANNEL_SECONDS,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval, self.clock, self.sleep = interval, clock, sleep
        self._free_at: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, channel: str) -> float:
        """Wait for the channel's next free slot; the seconds waited."""
        with self._lock:
            now = self.clock()
            slot = max(now, self._free_at.get(channel, now))
            self._free_at[channel] = slot + self.interval
        waited = slot - now
        if waited > 0:
            self.sleep(waited)
        return waited
