"""Two days of the simulated fleet under every fault at once (bench/faults.py runs the whole week per
fault): nothing lost, no work interrupted, no keep ignored, no sweep dead-lettered, at most one notice
posted twice per kill."""

from __future__ import annotations

import pytest

from bench.faults import PROFILES
from bench.week import ROOT, costguard_week


@pytest.mark.slow
def test_two_days_under_every_fault_at_once_lose_nothing_and_repeat_little() -> None:
    figures = costguard_week(ROOT, 5, 0.0, {**PROFILES["all of the above at once"], "seed": 5}, days=2)
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
