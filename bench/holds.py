"""What holds the harder week's idle GPU-hours, seed by seed, read from the sweeps' own decisions.

Each week runs the real sweep (testing.week.costguard_week, the harder week) with its decisions logged; each idle
five minutes a machine ran is put to the oracle's own two hours after work, or to the decision in force then
(testing/holds.py). The bound is what the week would reclaim if costguard held nothing but those two hours and its
care for work it cannot see (machines that cannot answer the activity check, and boxes that run by themselves not
yet watched a week), counted again on the week's own decisions: an estimate, not a week run again without the
other rules (their absence would change later decisions).

`python -c "from bench import holds; holds.main()"` (about a minute and a half a seed, alone on 2 cores).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.week import oracle_baseline, oracle_running
from testing.holds import ORACLE, attribute, is_care, read_decisions
from testing.week import HARDER_NO_SSM_SHARE, costguard_week
from testing.worlds.week import SLOTS_PER_HOUR, World, harder

SEEDS = (7005, 7003, 7)  # the harder week's worst seeds (one day of history), and the rules' first
TOP = 12


def holds(
    seed: int, share: float = HARDER_NO_SSM_SHARE, history_days: float | None = 1.0, code_root: Path = ROOT
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        decisions, dumped = Path(tmp) / "decisions.jsonl", Path(tmp) / "week.json"
        decisions.touch()
        figures = costguard_week(
            code_root, seed, share, hard=True, history_days=history_days, dump=dumped, decisions=decisions
        )
        record = json.loads(dumped.read_text())
        world = World(seed, copies=int(os.environ.get("BENCH_COPIES", "1")), **harder())  # the world the week ran
        made = read_decisions(decisions.read_text().splitlines(), world.index)
    if not made:
        raise RuntimeError(f"the code tree at {code_root} logged no decision (testing.week.log_decisions)")
    first = world.index(world.start)
    last = first + 7 * 24 * SLOTS_PER_HOUR
    found = attribute(world.machines, record["running"], made, record["without_agent"], first, last)
    held = dict(sorted(found.held.items(), key=lambda kv: -kv[1]))
    # The oracle's own week through the same attribution: its two hours after work are all it holds. costguard
    # runs fewer of them (a sooner stop where the check saw nothing alive).
    oracle = attribute(world.machines, oracle_running(world)[0], {}, (), first, last)
    if set(oracle.held) - {ORACLE}:
        raise RuntimeError(f"the oracle's week held more than its two hours: {sorted(oracle.held)}")
    return {
        "seed": seed,
        "no_ssm_share": share,
        "history_days": history_days,
        "reclaimed_percent": figures["reclaimed_percent"],  # the week's own figure
        "reclaimed_percent_attributed": round(found.reclaimed_percent, 1),  # the same, summed here: they agree
        "interruptions": figures["interruptions"],
        "oracle_reclaimed_percent": oracle_baseline(world)["reclaimed_percent"],
        "idle_gpu_hours": round(found.idle),
        "held_gpu_hours": round(sum(found.held.values())),
        "held_by_the_oracles_two_hours": round(found.held.get(ORACLE, 0.0)),  # those of them costguard ran
        "the_oracle_holds": round(oracle.held.get(ORACLE, 0.0)),
        "held_by_the_care_for_work_it_cannot_see": round(found.care),
        "of_which_on_machines_without_the_agent": round(found.care_without_agent),
        "held_by_everything_else": round(sum(found.held.values()) - found.held.get(ORACLE, 0.0) - found.care),
        "bound_percent": round(found.bound_percent(), 1),
        "held_by_cause": {label: round(hours, 1) for label, hours in held.items()},
    }


def main(seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    weeks = []
    for seed in seeds:
        week = holds(seed)
        weeks.append(week)
        print(
            f"  seed {seed}: reclaimed {week['reclaimed_percent']} % (attributed {week['reclaimed_percent_attributed']}"
            f" %, oracle {week['oracle_reclaimed_percent']} %), {week['interruptions']} interruptions; of "
            f"{week['idle_gpu_hours']} idle GPU-h held {week['held_gpu_hours']}: the oracle's 2 h "
            f"{week['held_by_the_oracles_two_hours']}, care for work it cannot see "
            f"{week['held_by_the_care_for_work_it_cannot_see']}, the rest {week['held_by_everything_else']};"
            f" bound {week['bound_percent']} %",
            flush=True,
        )
        for label, hours in list(week["held_by_cause"].items())[:TOP]:
            print(f"    {hours:8.0f}  {label}{'  [care]' if is_care(label) else ''}")
    return {"no_ssm_share": HARDER_NO_SSM_SHARE, "history_days": 1.0, "weeks": weeks}
