"""One message a second per channel, as Slack asks of chat.postMessage ("generally allows posting one
message per second per channel"): a sweep that tells the alerts channel about dozens of machines whose
owners Slack does not know sends them a second apart instead of in a burst Slack answers with 429s.

Threads share the pace: each takes the next free second of its channel before it posts. A second is also
counted from each post's answer (`answered`): a post that took long, or waited out a 429 and was sent again,
reached Slack later than its slot, and the next one must not follow it closer than a second (a digest's
replies, posted one after another in one thread, met Slack's limit that way).
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

    def answered(self, channel: str) -> None:
        """A post to `channel` was answered now: the next waits a second from here, at least."""
        with self._lock:
            self._free_at[channel] = max(self._free_at.get(channel, 0.0), self.clock() + self.interval)
