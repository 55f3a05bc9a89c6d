"""The week on the bill as it is paid (issue 32, "Measured"): the commitments world (testing/worlds/
commitments.py: RIs, a Savings Plan, a Capacity Block, a capacity reservation, short p4d capacity, boot waits)
through costguard's real sweep, costguard with its bill reader off (as before it priced on the bill), an
oracle priced the same way, and the two baselines, each judged on the true bill (testing/bill.py).

Figures (testing/measured.py): dollars truly saved, stops that saved nothing over their whole off-period (the world
and the run go on a day past the week; a stop still off then is counted apart), person-hours blocked (boot
waits and work blocked by short capacity), restarts owners made, interruptions, and costguard's claimed
saving (the figure its real weekly digest posted to Slack at the week's end, parsed from the message)
against the true one. The worst seed is the one where costguard saved the least of the oracle's dollars.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.week import cpu_average_running, schedule_running
from testing.measured import CENT, Judge, always_on, money, week_slots, with_capacity
from testing.week import ROOT, costguard_week, outcome
from testing.worlds.week import World

SEEDS = (7, 11, 23)
WINDOW = 24  # slots: 2 hours of true idleness


def oracle(world: World, judge: Judge) -> dict[str, Any]:
    """Knows the truth: stops a machine after 2 hours of true idleness, only where the stop lowers the true
    bill (the other stops taken so far held fixed), and has it running again when work comes due, or before
    short capacity would keep it from starting then."""
    bought = world.bought
    assert bought is not None
    running = always_on(world)
    stops = []
    first = world.index(world.start)
    for m in world.machines:
        on = running[m.instance_id]
        i = first
        while i < world.slots:
            if m.slots[i].work or not world.exists(m, i):
                i += 1
                continue
            end = next((j for j in range(i, world.slots) if m.slots[j].work), world.slots)
            back = end
            while back > i + WINDOW and bought.short(m.instance_type, m.az, world.at(back)):
                back -= 1  # started before the window of short capacity that covers the work's start
            slots = list(range(i + WINDOW, back))
            if slots:
                for j in slots:
                    on[j] = False
                if judge.saved_by(running, m.instance_id, slots) < CENT:
                    for j in slots:
                        on[j] = True
                else:
                    stops.append((m.instance_id, i + WINDOW))
            i = end
    return {"running": running, "stops": stops, "restarts": [], "blocked": set()}


def _baseline(world: World, run: Any, *, by_owner: bool) -> dict[str, Any]:
    running, stops = run(world)
    restarts, blocked = with_capacity(world, running, by_owner)
    return {"running": running, "stops": stops, "restarts": restarts, "blocked": blocked}


def measure(
    seed: int, days: int = 7, code_root: Any = ROOT, before: Path | None = None, warm_days: int = 0
) -> dict[str, Any]:
    """One seed's week for each tool; `before`: a tree of costguard before issue 32 (no money, no scarcity);
    `warm_days`: costguard enforced that many days before the week with its state table carried into it (what it
    learned: the spill profile, runs, people's days), the week measured being its second (testing/week.py)."""
    world = World(seed, commitments=True)
    judge = Judge(world)
    nobody = judge.total(always_on(world), week_slots(world, days))
    out: dict[str, Any] = {"seed": seed, "warm_days": warm_days}
    for name, run in (
        ("oracle", oracle(world, judge)),
        ("night_and_weekend_schedule", _baseline(world, schedule_running, by_owner=False)),
        ("cpu_average_rule", _baseline(world, cpu_average_running, by_owner=True)),
    ):
        figures = money(
            world, run["running"], run["stops"], run["restarts"], run["blocked"], days=days, judge=judge, nobody=nobody
        )
        figures["interruptions"] = outcome(world, run["running"], run["stops"], [], days=days)["interruptions"]
        out[name] = figures
    runs = [("costguard", code_root, True), ("costguard_as_before", code_root, False)]
    if before is not None:
        runs.append(("costguard_before_issue_32", before, True))
    for name, tree, bill in runs:
        week = costguard_week(tree, seed, 0.0, None, days, commitments=True, bill=bill, warm_days=warm_days)
        figures = dict(week["money"])
        figures["interruptions"] = week["interruptions"]
        figures["interruptions_by_cause"] = week["interruptions_by_cause"]
        figures["interrupted"] = week.get("interrupted", [])  # machine, type, when, cause (older trees: none)
        claimed = figures.get("claimed_usd")  # as the weekly digest posted it (None: it said nothing)
        figures["claimed_over_true"] = (
            round(claimed / figures["saved_usd"], 3) if figures["saved_usd"] and claimed is not None else None
        )
        out[name] = figures
    return out


COLUMNS = (
    ("saved_usd", "true $ saved"),
    ("stops_in_week", "stops"),
    ("stops_that_saved_nothing", "saved $0"),
    ("stops_censored", "still off at the end"),
    ("person_hours_blocked", "person-h blocked"),
    ("owner_restarts_in_week", "owner restarts"),
    ("interruptions", "interruptions"),
    ("claimed_over_true", "claimed/true"),
)
TOOLS = (
    "oracle",
    "costguard",
    "costguard_as_before",
    "costguard_before_issue_32",
    "night_and_weekend_schedule",
    "cpu_average_rule",
)
BEFORE = "b506484"  # the last commit before issue 32's work: costguard as it was, measured on the same world


def targets(week: dict[str, Any]) -> dict[str, bool]:
    """The issue's done-when targets, for one seed."""
    cg, oracle_ = week["costguard"], week["oracle"]
    before = week.get("costguard_before_issue_32") or week["costguard_as_before"]
    return {
        # of the stops judged: those still off when the run was last seen (censored) are neither
        "at most 5 % of stops saved nothing over their whole off-period": cg["stops_that_saved_nothing"]
        <= 0.05 * (cg["stops_in_week"] - cg.get("stops_censored", 0)),
        "true $ saved >= 95 % of oracle": cg["saved_usd"] >= 0.95 * oracle_["saved_usd"],
        "claimed within 5 % of true": cg["claimed_over_true"] is not None and abs(cg["claimed_over_true"] - 1) <= 0.05,
        "person-hours blocked <= half of before": cg["person_hours_blocked"] <= before["person_hours_blocked"] / 2,
        "0 interruptions": cg["interruptions"] == 0,
    }


def main(seeds: tuple[int, ...] = SEEDS, days: int = 7, warm_days: int = 0) -> dict[str, Any]:
    """Every tool on each seed's week; `warm_days=7`: costguard's second week (its first enforced on the world's
    history, its state carried), the oracle's and the baselines' the same week."""
    with tree_at(BEFORE) as before:
        weeks = [measure(seed, days, before=before, warm_days=warm_days) for seed in seeds]
    worst = min(weeks, key=lambda w: w["costguard"]["saved_usd"] / max(1.0, w["oracle"]["saved_usd"]))
    for week in weeks:
        print(f"  seed {week['seed']}: bill with nobody stopping ${week['oracle']['bill_nobody_stops']:,.0f}")
        print(f"    {'tool':<28}" + "".join(f"{title:>17}" for _, title in COLUMNS))
        for tool in (t for t in TOOLS if t in week):
            row = week[tool]
            cells = "".join(f"{'-' if row.get(key) is None else row[key]!s:>17}" for key, _ in COLUMNS)
            print(f"    {tool:<28}{cells}")
        week["targets"] = targets(week)
        print("    targets: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in week["targets"].items()))
    print(f"  worst seed: {worst['seed']} (costguard saved the least of the oracle's dollars)")
    return {"seeds": list(seeds), "days": days, "warm_days": warm_days, "worst_seed": worst["seed"], "weeks": weeks}


@contextlib.contextmanager
def tree_at(commit: str) -> Iterator[Path | None]:
    """A checkout of `commit` beside this one (a git worktree, removed after); None, said, where git has no
    such commit (a shallow clone)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "before"
        made = subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), commit], cwd=ROOT, capture_output=True, check=False
        )
        if made.returncode != 0:
            print(f"  costguard before issue 32 not measured: no commit {commit} here ({made.stderr.decode()[:200]})")
            yield None
            return
        try:
            yield path
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, check=False)
