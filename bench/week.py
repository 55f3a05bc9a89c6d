"""A week of a realistic fleet (testing/worlds/week.py) driven through costguard's real idle sweep, every
15 minutes, with owners who answer some warnings (the harness is testing/week.py, which the safety tests
share); and the same week under an oracle and two baselines: a night-and-weekend schedule, and a
CPU-average rule like Cloud Custodian's.

Figures, for each tool: % of idle GPU-hours reclaimed (the machine was stopped while it would have
been idle), interruptions of real work (a stop while the machine was at work, or work that came due
while it stayed stopped), GPU-hours of work lost, warnings per owner per day, warnings about machines
that were at work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testing.week import (
    HARDER_NO_SSM_SHARE,
    NO_SSM_AGENT_SHARE,
    ROOT,
    SWEEP_EVERY,
    costguard_week,
    outcome,
    restart_slot,
)
from testing.worlds.week import World
from testing.worlds.week import harder as harder_knobs

__all__ = ["ROOT", "compare", "costguard_week", "harder", "main", "measure"]


def oracle_baseline(world: World, window: int = 24) -> dict[str, Any]:
    """An oracle that knows the truth: it stops a machine after exactly 2 hours of true idleness, and has
    it running again the moment work comes due (no warning, no interruption, no restart by anyone)."""
    return outcome(world, *oracle_running(world, window), []) | {"owner_restarts": 0}


def oracle_running(world: World, window: int = 24) -> tuple[dict[str, list[bool]], list[tuple[str, int]]]:
    """The oracle's machines, running or not in each slot, and its stops."""
    running = {m.instance_id: [True] * world.slots for m in world.machines}
    stops = []
    for m in world.machines:
        on = running[m.instance_id]
        i = 0
        while i < world.slots:
            if m.slots[i].work:
                i += 1
                continue
            end = next((j for j in range(i, world.slots) if m.slots[j].work), world.slots)
            if end - i > window:
                stops.append((m.instance_id, i + window))
                for j in range(i + window, end):
                    on[j] = False
            i = end
    return running, stops


def schedule_baseline(world: World) -> dict[str, Any]:
    """Off from 20:00 to 08:00 on weekdays and all weekend, in each owner's zone; no warning."""
    return outcome(world, *schedule_running(world), [])


def schedule_running(world: World) -> tuple[dict[str, list[bool]], list[tuple[str, int]]]:
    """The schedule's machines, running or not in each slot, and its stops."""
    running = {m.instance_id: [True] * world.slots for m in world.machines}
    stops = []
    for m in world.machines:
        for i in range(world.slots):
            local = world.local(m, i)
            on = local.weekday() < 5 and 8 <= local.hour < 20
            running[m.instance_id][i] = on or i < world.index(world.start)
            if i and running[m.instance_id][i - 1] and not running[m.instance_id][i]:
                stops.append((m.instance_id, i))
    return running, stops


def cpu_average_baseline(world: World, threshold: float = 10.0, window: int = 24) -> dict[str, Any]:
    """Stop when CPUUtilization stayed under 10 % for 2 hours (checked every 15 minutes), no warning;
    the owner starts it again as with costguard."""
    return outcome(world, *cpu_average_running(world, threshold, window), [])


def cpu_average_running(
    world: World, threshold: float = 10.0, window: int = 24
) -> tuple[dict[str, list[bool]], list[tuple[str, int]]]:
    """The CPU rule's machines, running or not in each slot, and its stops."""
    running = {m.instance_id: [True] * world.slots for m in world.machines}
    stops: list[tuple[str, int]] = []
    for m in world.machines:
        on = running[m.instance_id]
        launched = -10_000
        i = world.index(world.start)
        while i < world.slots:
            if on[i] and i - launched >= window and all(m.slots[j].cpu < threshold for j in range(i - window, i)):
                stops.append((m.instance_id, i))
                back = restart_slot(world, m, i)
                for j in range(i, min(back, world.slots)):
                    on[j] = False
                launched, i = back, back
                continue
            i += SWEEP_EVERY
    return running, stops


def measure(code_root: Path = ROOT, seed: int = 7) -> dict[str, Any]:
    world = World(seed)
    return {
        "seed": seed,
        "oracle": oracle_baseline(world),
        "costguard": costguard_week(code_root, seed, 0.0),
        f"costguard, {NO_SSM_AGENT_SHARE:.0%} of machines without the SSM agent": costguard_week(
            code_root, seed, NO_SSM_AGENT_SHARE
        ),
        "night_and_weekend_schedule": schedule_baseline(world),
        "cpu_average_rule": cpu_average_baseline(world),
    }


SEEDS = (7, 11, 23)  # the weeks the rules were checked on
UNSEEN = (31, 47, 59, 71)  # weeks looked at only at the end
KEPT = (
    "reclaimed_percent",
    "interruptions",
    "owner_restarts",
    "owner_boot_wait_minutes",
    "exempted_by_owners",
    "costguard_starts",
    "costguard_starts_wasted",
    "warnings_about_busy_machines",
    "warnings_per_owner_per_day",
    "machines_checked_per_sweep",
    "reclaimed_percent_by_kind",
    "calls",
)


def compare(before_root: Path, seeds: tuple[int, ...] = SEEDS + UNSEEN, after_root: Path = ROOT) -> dict[str, Any]:
    """The same weeks (every machine with the SSM agent) through two code trees, next to the oracle:
    `python -c "from bench import week; week.compare(Path('/tmp/base'))"` with a `git worktree add` of the
    commit before."""
    out: dict[str, Any] = {"seeds_checked_on": list(SEEDS), "seeds_unseen": list(UNSEEN), "weeks": {}}
    for seed in seeds:
        oracle = oracle_baseline(World(seed))
        before = costguard_week(before_root, seed, 0.0)
        after = costguard_week(after_root, seed, 0.0)
        out["weeks"][str(seed)] = {
            "oracle": {k: oracle[k] for k in ("reclaimed_percent", "idle_gpu_hours", "reclaimed_percent_by_kind")},
            "before": {k: before[k] for k in KEPT},
            "after": {k: after[k] for k in KEPT},
        }
        print(
            f"  seed {seed}: reclaimed {before['reclaimed_percent']} % -> {after['reclaimed_percent']} % "
            f"(oracle {oracle['reclaimed_percent']} %), interruptions {before['interruptions']} -> "
            f"{after['interruptions']}, owner restarts {before['owner_restarts']} -> {after['owner_restarts']} "
            f"({before.get('owner_boot_wait_minutes', '?')} -> {after['owner_boot_wait_minutes']} boot-wait min), "
            f"learned starts {after['costguard_starts']} ({after['costguard_starts_wasted']} wasted)",
            flush=True,
        )
    return out


HARDER_SEEDS = (7, 11, 23, 101, 202)  # the rules' weeks, and two never used to build any


def harder(
    code_root: Path = ROOT, seeds: tuple[int, ...] = HARDER_SEEDS, history_days: float | None = 1.0
) -> dict[str, Any]:
    """The harder week (issue 44: testing/worlds/week.py's harder(), one machine in five without the SSM
    agent) on each seed, one week at a time, worst first (most interruptions, then least reclaimed):
    `python -c "from bench import week; week.harder()"`. `history_days`: what CloudWatch has before the week
    (1: a deploy on a fresh account; None: the world's two weeks, an agent installed earlier)."""
    rows = []
    for seed in seeds:
        oracle = oracle_baseline(World(seed, **harder_knobs()))
        figures = costguard_week(code_root, seed, HARDER_NO_SSM_SHARE, hard=True, history_days=history_days)
        row = {
            "seed": seed,
            "oracle_reclaimed_percent": oracle["reclaimed_percent"],
            **{k: figures[k] for k in ("reclaimed_percent", "interruptions", "owner_restarts")},
            "interrupted": figures["interrupted"],
            "exempted_by_owners": figures["exempted_by_owners"],
            "machines_without_ssm_agent": figures["machines_without_ssm_agent"],
            "reclaimed_percent_by_kind": figures["reclaimed_percent_by_kind"],
            "oracle_reclaimed_percent_by_kind": oracle["reclaimed_percent_by_kind"],
        }
        print(f"  seed {seed}: {row}", flush=True)
        rows.append(row)
    rows.sort(key=lambda r: (-r["interruptions"], r["reclaimed_percent"]))
    return {"history_days": history_days, "no_ssm_share": HARDER_NO_SSM_SHARE, "weeks": rows}


def main() -> dict[str, Any]:
    result = measure()
    for tool, figures in result.items():
        if isinstance(figures, dict):
            print(
                f"  {tool:<28} reclaimed {figures['reclaimed_percent']:5.1f}% of {figures['idle_gpu_hours']:.0f} idle "
                f"GPU-h, {figures['interruptions']} interruptions, {figures['work_gpu_hours_lost']:.0f} GPU-h of work "
                f"lost, {figures['warnings_per_owner_per_day']} warnings/owner/day "
                f"({figures['warnings_about_busy_machines']} about busy machines)"
            )
    return result
