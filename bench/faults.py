"""The fault-injection suite over a simulated week (testing/week.py): the same fleet, owners and sweeps,
with AWS calls that fail after botocore's retries, storms on one write operation, writes applied whose
answer is a 500, the Lambda killed before or right after any call, Slack failing (429 with
Retry-After, 5xx) and every sweep delivered twice. It counts what the faults cost: interrupted work,
stops after a keep, stops without their notice, ledger record or tag, duplicate notices, and messages left
promising a stop that did not happen (read from Slack's final state: each message as last edited)."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
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


PROMISE = "costguard stops it"
DATE = re.compile(r"<!date\^(\d+)\^")
STILL_TO_COME = 30 * 60  # a promise for the last half hour of the run may still be kept after it
EARLY, LATE = 5 * 60, 60 * 60  # a stop this close to the time promised keeps the promise


def promises_not_kept(
    messages: Sequence[Mapping[str, Any]], ledger: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The warnings whose part, as last edited, still says "costguard stops it <T>", T at least half an hour
    before the last message, with no stop of their machine in the ledger from T - 5 min to T + 60 min."""
    stops: dict[str, list[float]] = {}
    for entry in ledger:
        if entry.get("kind") in ("stop", "stop-from-slack"):
            stops.setdefault(entry["instance_id"], []).append(datetime.fromisoformat(entry["at"]).timestamp())
    end = max((float(m["ts"]) for m in messages), default=0.0)
    unkept = []
    for message in messages:
        blocks = message.get("blocks") or []
        for k, block in enumerate(blocks):
            marker = str(block.get("block_id", ""))
            if not marker.startswith("cg-warn-"):
                continue
            # A part alone is a header then its section; among several, its line is the block itself.
            said = json.dumps(blocks[k + 1] if block.get("type") == "header" and k + 1 < len(blocks) else block)
            if PROMISE not in said:
                continue
            found = DATE.search(said[said.index(PROMISE) :])
            at = float(found[1]) if found else 0.0
            machine = marker.removeprefix("cg-warn-").rsplit("-", 1)[0]
            if at > end - STILL_TO_COME or any(at - EARLY <= s <= at + LATE for s in stops.get(machine, [])):
                continue
            unkept.append({"machine": machine, "stop_promised": at, "message_ts": message["ts"]})
    return unkept


def profile(plan: Mapping[str, Any] | None, days: int, seed: int) -> dict[str, Any]:
    """One profile's run (None: no fault), with the promises its messages did not keep."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.json"
        faults = {**plan, "seed": seed} if plan is not None else None
        figures = costguard_week(ROOT, seed, 0.0, faults, days, dump=dump)
        raw = json.loads(dump.read_text())
    figures.pop("calls", None)
    unkept = promises_not_kept(raw["messages"], raw["ledger"])
    return figures | {"promises_not_kept": len(unkept), "promises_not_kept_which": unkept[:20]}


def main(days: int = 7, seed: int = 7, names: Sequence[str] | None = None) -> dict[str, Any]:
    """Every profile (or those `names`; "none": the run without faults)."""
    results = {}
    for name in names or ["none", *PROFILES]:
        figures = profile(PROFILES.get(name), days, seed)
        results[name] = figures
        counts = ", ".join(f"{k.replace('_', ' ')} {figures.get(k, '-')}" for k in (*COUNTED, "promises_not_kept"))
        print(f"  {name}: {figures['stops']} stops, {figures.get('faults', {}).get('kills', 0)} kills; {counts}")
    return {"days": days, "seed": seed, "profiles": results}
