"""The fault-injection suite over a simulated week (testing/week.py): the same fleet, owners and sweeps,
with AWS calls that fail after botocore's retries, storms on one write operation, writes applied whose
answer is a 500, the Lambda killed before or right after any call, Slack failing (429 with
Retry-After, 5xx) and every sweep delivered twice. It counts what the faults cost: interrupted work,
stops after a keep, stops without their notice, ledger record or tag, and duplicate notices."""

from __future__ import annotations

from typing import Any

from testing.week import ROOT, STORM_OPS, costguard_week

PROFILES: dict[str, dict[str, Any]] = {
    "1 % of AWS calls fail after botocore's retries": {"throttle": 0.01},
    "a 1-hour storm on one write operation every 3 hours": {"storm_every": 12, "storm_sweeps": 4},
    **{
        f"a 1-hour storm on {op} every 3 hours": {"storm_every": 12, "storm_sweeps": 4, "storm_ops": [op]}
        for op in STORM_OPS
    },
    "1 % of writes applied, then answered 500": {"applied_then_500": 0.01},
    "killed before or right after 0.5 % of calls": {"kill": 0.005},
    "Slack: 429 with Retry-After and 5xx, in 30 % of sweeps": {"slack": True},
    "every sweep delivered twice": {"double": True},
    "all of the above at once": {
        "throttle": 0.01,
        "storm_every": 12,
        "applied_then_500": 0.01,
        "kill": 0.005,
        "slack": True,
        "double": True,
    },
}
COUNTED = (
    "interruptions",
    "stops_after_a_keep",
    "stops_without_notice",
    "stops_without_ledger_record",
    "stopped_without_stopped_at_tag",
    "warnings_without_ledger_record",
    "duplicate_ledger_records",
    "duplicate_stop_notices",
    "duplicate_warnings",
    "notices_posted_twice",
    "dead_lettered_sweeps",
    "dead_lettered_by_a_raise_of_costguard",
    "attempts_raised_not_for_an_unreadable_region",
)


def main(days: int = 7, seed: int = 7) -> dict[str, Any]:
    results = {}
    for name, plan in PROFILES.items():
        figures = costguard_week(ROOT, seed, 0.0, {**plan, "seed": seed}, days)
        figures.pop("calls", None)
        results[name] = figures
        counts = ", ".join(f"{k.replace('_', ' ')} {figures[k]}" for k in COUNTED)
        print(f"  {name}: {figures['stops']} stops, {figures['faults']['kills']} kills; {counts}")
    return {"days": days, "seed": seed, "profiles": results}
