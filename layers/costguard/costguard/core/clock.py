"""The time a run has left. Inside Lambda the runtime says (`Runtime.time_left`, the invocation's remaining
milliseconds); a run with no deadline (a test, the demo, a call outside Lambda) has all the time there is."""

from __future__ import annotations


def forever() -> float:
    """Seconds left to a run without a deadline: a step that checks its time never runs out of it."""
    return float("inf")
