"""The deep dive and the organization digest make the calls their floor says, operation by operation, at
their scale (testing/runs/scheduled.py: a payer account's quarter; a hub reading 100 accounts' weeks), each
handler whole in a fresh process against the stand-ins."""

from __future__ import annotations

from typing import Any

from testing.runs.scheduled import run_deep_dive, run_organization


def off_the_floor(run: dict[str, Any]) -> dict[str, Any]:
    return {op: c for op, c in run["calls"].items() if c["made"] != c["floor"]}


def test_the_deep_dive_prices_each_accelerated_type_once_whatever_the_regions_it_ran_in() -> None:
    run = run_deep_dive(0.0)
    assert off_the_floor(run) == {}
    assert (run["lines"], run["anomalies"]) == (1998, 60)  # every line of the quarter read, every finding


def test_the_organization_digest_deletes_the_weeks_it_kept_ten_a_call() -> None:
    run = run_organization(0.0)
    assert off_the_floor(run) == {}
    assert (run["accounts"], run["refused"]) == (100, 2)  # the two refused letters stay for the dead-letter queue
