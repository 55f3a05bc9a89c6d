"""Two days of the simulated fleet (testing/week.py) under every fault at once (bench/faults.py runs the
whole week per fault): nothing lost, no work interrupted, no keep ignored, no sweep dead-lettered, at most one notice
posted twice per kill."""

from __future__ import annotations

import pytest

from testing.week import ROOT, costguard_week

# bench/faults.py's "all of the above at once": throttles, storms, writes applied then answered 500, kills,
# Slack failing, every sweep delivered twice.
EVERY_FAULT = {
    "throttle": 0.01,
    "storm_every": 12,
    "applied_then_500": 0.01,
    "kill": 0.005,
    "slack": True,
    "double": True,
}


@pytest.mark.slow
def test_two_days_under_every_fault_at_once_lose_nothing_and_repeat_little() -> None:
    figures = costguard_week(ROOT, 5, 0.0, {**EVERY_FAULT, "seed": 5}, days=2)
    assert figures["faults"]["kills"] > 0
    assert figures["faults"]["failed_calls"] > 0
    for lost in (
        "interruptions",
        "stops_after_a_keep",
        "stops_without_notice",
        "stops_without_ledger_record",
        "warnings_without_ledger_record",
        "duplicate_ledger_records",
        # A storm or a failed write ends the sweep normally; only a region it could not read fails it (so a
        # sweep killed or unreadable in all three attempts, the faults' draw, may still be dead-lettered).
        "attempts_raised_not_for_an_unreadable_region",
    ):
        assert figures[lost] == 0, lost
    assert figures["stopped_without_stopped_at_tag"] == 0
    duplicates = figures["duplicate_stop_notices"] + figures["duplicate_warnings"]
    assert duplicates <= figures["faults"]["kills"] + figures["faults"]["failed_calls"]
    assert figures["notices_posted_twice"] <= figures["faults"]["kills"]  # at most one message per kill
