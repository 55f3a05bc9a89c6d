"""What holds a week's idle GPU-hours (testing/holds.py): each idle five minutes a machine ran, put to the oracle's
two hours after work or to the sweep's decision in force; and the log the week writes them from."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from costguard.idle.acts import notices
from costguard.idle.rules.decision import Action
from costguard.idle.rules.trail import Rule, Step
from testing.holds import ORACLE, ORACLE_SLOTS, UNDECIDED, Decided, attribute, is_care, read_decisions
from testing.week import log_decisions, outcome
from testing.worlds.week import SLOTS_PER_HOUR, Machine, Slot, World, harder

HOUR = SLOTS_PER_HOUR


def machine(work: list[bool], instance_id: str = "i-1") -> Machine:
    m = Machine(instance_id, "a@example.com", "UTC", "g5.12xlarge", "trainer")  # 4 GPUs
    m.slots = [Slot(work="training" if w else "") for w in work]
    return m


def test_the_first_two_idle_hours_are_the_oracles_and_the_rest_the_decision_in_force() -> None:
    box = machine([True] * HOUR + [False] * 5 * HOUR)  # an hour of work, then five idle hours, running throughout
    made = {"i-1": [Decided(3 * HOUR, "i-1", "none", "its own night work", "held for its night")]}
    found = attribute([box], {"i-1": [True] * 6 * HOUR}, made, ["i-1"], 0, 6 * HOUR)
    gpus_hours = 4 / SLOTS_PER_HOUR
    assert found.idle == pytest.approx(5 * 4)
    assert found.held[ORACLE] == pytest.approx(2 * HOUR * gpus_hours)
    # from 3 h to 3 h 15 the decision stands (made at 3 h, in force until the next sweep's); before and after it
    # none is in force
    assert found.held["no agent: its own night work (none)"] == pytest.approx(HOUR // 4 * gpus_hours)
    assert found.held[UNDECIDED] == pytest.approx((3 * HOUR - HOUR // 4) * gpus_hours)
    assert found.reclaimed_percent == pytest.approx(0.0)


def test_a_stopped_five_minutes_is_reclaimed_and_held_by_nothing() -> None:
    box = machine([True] * HOUR + [False] * 5 * HOUR)
    running = [True] * 4 * HOUR + [False] * 2 * HOUR
    made = {"i-1": [Decided(k, "i-1", "wait", "idle verdict", "") for k in range(0, 6 * HOUR, 3)]}
    found = attribute([box], {"i-1": running}, made, [], 0, 6 * HOUR)
    assert found.reclaimed_percent == pytest.approx(40.0)  # 2 of the 5 idle hours stopped
    assert set(found.held) == {ORACLE, "agent: idle verdict (wait)"}  # the machine answers the check


def test_only_the_slots_of_the_week_count_though_work_before_it_starts_the_oracles_two_hours() -> None:
    box = machine([True] * HOUR + [False] * 5 * HOUR)
    found = attribute([box], {"i-1": [True] * 6 * HOUR}, {}, [], 2 * HOUR, 6 * HOUR)
    assert found.idle == pytest.approx(4 * 4)
    assert found.held[ORACLE] == pytest.approx(4 * HOUR / SLOTS_PER_HOUR)  # its second idle hour is the week's


def test_a_week_run_as_the_oracle_runs_it_holds_the_oracles_hours_alone_and_reclaims_what_its_figures_say() -> None:
    world = World(7, **harder())
    first = world.index(world.start)
    running = {}
    for m in world.machines:  # stopped two hours into each idle stretch, running again when its work comes
        idle_for, on = 0, []
        for slot in m.slots:
            idle_for = 0 if slot.work else idle_for + 1
            on.append(idle_for <= ORACLE_SLOTS)
        running[m.instance_id] = on
    found = attribute(world.machines, running, {}, [], first, first + 7 * 24 * SLOTS_PER_HOUR)
    assert set(found.held) == {ORACLE}  # nothing held past the oracle's own two hours, nothing undecided
    assert round(found.reclaimed_percent, 1) == outcome(world, running, [], [])["reclaimed_percent"]


def test_the_care_for_work_costguard_cannot_see_is_its_rules_and_what_no_check_can_say() -> None:
    assert is_care("no agent: its own night work (none)")
    assert is_care("agent: its own night work (none)")  # a box that runs by itself, not yet watched a week
    assert is_care("no agent: its owner's morning (wait)")
    assert is_care("no agent: machine's check (none)")  # GPU memory held, read from its metrics alone
    assert is_care("no agent: certain idleness (none)")  # the full window, no check to shorten it
    assert not is_care("agent: machine's check (none)")  # its own check saw work
    assert not is_care("no agent: after an undo (none)")
    assert not is_care(ORACLE)
    assert not is_care(UNDECIDED)


def test_the_bound_keeps_the_oracles_hours_and_the_care_and_gives_up_everything_else() -> None:
    box = machine([True] * HOUR + [False] * 9 * HOUR)  # 9 idle hours, 36 GPU-hours
    made = {
        "i-1": [Decided(k, "i-1", "none", "its own night work", "") for k in range(3 * HOUR, 6 * HOUR, 3)]
        + [Decided(k, "i-1", "none", "after an undo", "") for k in range(6 * HOUR, 10 * HOUR, 3)]
    }
    found = attribute([box], {"i-1": [True] * 10 * HOUR}, made, ["i-1"], 0, 10 * HOUR)
    assert found.reclaimed_percent == pytest.approx(0.0)
    assert found.care == pytest.approx(3 * 4)
    assert found.held["no agent: after an undo (none)"] == pytest.approx(4 * 4)
    assert found.bound_percent() == pytest.approx(100 * (36 - 2 * 4 - 3 * 4) / 36)  # the undo's 4 hours given up


def test_the_decision_log_is_read_by_machine_in_time_order() -> None:
    start = datetime(2026, 11, 9, tzinfo=UTC)
    lines = [
        json.dumps({"at": (start + timedelta(minutes=30)).isoformat(), "instance_id": "i-1", "action": "stop"}),
        "",
        json.dumps({"at": start.isoformat(), "instance_id": "i-1", "action": "warn", "rule": "the bill"}),
    ]
    made = read_decisions(lines, lambda at: int((at - start) / timedelta(minutes=5)))
    assert [(d.slot, d.action, d.rule) for d in made["i-1"]] == [(0, "warn", "the bill"), (6, "stop", "")]


def test_the_week_logs_each_decision_the_sweep_hands_to_be_carried_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    carried: list[str] = []
    monkeypatch.setattr(notices.SweepNotices, "act", lambda self, instance, decision, now, *a: carried.append("acted"))
    log = tmp_path / "decisions.jsonl"
    log_decisions(log)
    log_decisions(log)  # asked again: still one line a decision
    decision = SimpleNamespace(
        action=Action.NONE,
        reason="held until its night's work has run",
        trail=(Step(Rule.VERDICT, "warn", "idle"), Step(Rule.NIGHT_WORK, "none", "its night")),
    )
    now = datetime(2026, 11, 9, 18, 15, tzinfo=UTC)
    notices.SweepNotices.act(None, SimpleNamespace(instance_id="i-9"), decision, now, None, None)  # type: ignore[arg-type]
    assert carried == ["acted"]  # carried out as before
    assert json.loads(log.read_text()) == {
        "at": "2026-11-09T18:15:00+00:00",
        "instance_id": "i-9",
        "action": "none",
        "rule": "its own night work",
        "reason": "held until its night's work has run",
    }


def test_a_decision_that_cannot_be_logged_is_still_carried_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    carried: list[str] = []
    monkeypatch.setattr(notices.SweepNotices, "act", lambda self, instance, decision, now, *a: carried.append("acted"))
    log_decisions(tmp_path / "no such folder" / "decisions.jsonl")
    now = datetime(2026, 11, 9, 18, 15, tzinfo=UTC)
    decision = SimpleNamespace(action=Action.STOP, reason="idle", trail=())
    notices.SweepNotices.act(None, SimpleNamespace(instance_id="i-9"), decision, now, None, None)  # type: ignore[arg-type]
    assert carried == ["acted"]
    assert "a decision could not be logged: FileNotFoundError" in capsys.readouterr().err
