"""The week costguard runs second (testing/week.py's `warm_days`): days enforced on the world's history before the
measured week, the state table carried into it; only the measured week's figures are reported."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testing import week
from testing.worlds.week import World


@pytest.fixture(scope="module")
def world() -> World:
    return World(7)


def _stopped(world: World, instance_id: str, off: range) -> dict[str, list[bool]]:
    running = {m.instance_id: [True] * world.slots for m in world.machines}
    for i in off:
        running[instance_id][i] = False
    return running


def _warm_stop(world: World) -> tuple[str, int, int]:
    """A machine idle a day before the week, and the first work it has in the week."""
    first = world.index(world.start)
    for m in world.machines:
        at = first - 24 * 12
        due = next((i for i in range(first, world.slots) if m.slots[i].work), None)
        if not m.slots[at].work and due is not None:
            return m.instance_id, at, due
    raise AssertionError("no machine idle the day before the week")


def test_a_warm_days_stop_back_on_before_the_week_is_no_stop_or_interruption_of_the_week(world: World) -> None:
    iid, at, _ = _warm_stop(world)
    back = at + 1  # on again 5 minutes later, before the week
    figures = week.outcome(world, _stopped(world, iid, range(at, back)), [(iid, at)], [])
    assert figures["stops"] == 0
    assert figures["interruptions"] == 0


def test_a_warm_days_stop_still_off_when_work_comes_due_in_the_week_is_its_interruption(world: World) -> None:
    iid, at, due = _warm_stop(world)
    figures = week.outcome(world, _stopped(world, iid, range(at, due + 1)), [(iid, at)], [])
    assert figures["stops"] == 0, "the stop was the warm days', not the week's"
    assert figures["interruptions"] == 1
    machine = next(m for m in world.machines if m.instance_id == iid)
    assert list(figures["interruptions_by_cause"]) == [f"stopped before {machine.slots[due].work}"]


def test_the_week_is_run_second_with_warm_days_given_to_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, str]] = []

    def child(args: list[str], **kwargs: Any) -> None:
        seen.append(kwargs["env"])
        Path(args[4]).write_text(json.dumps({"interruptions": 0}))

    monkeypatch.setattr(subprocess, "run", child)
    week.costguard_week(week.ROOT, 31, 0.0, None, 7, commitments=True, warm_days=7)
    week.costguard_week(week.ROOT, 31, 0.0, None, 7, commitments=True)
    assert seen[0]["BENCH_WARM_DAYS"] == "7"
    assert seen[0]["BENCH_WORLD"] == "commitments"
    assert "BENCH_WARM_DAYS" not in seen[1]
