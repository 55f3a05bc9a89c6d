"""A stop of the commitments world's week is judged over its whole off-period (testing/measured.py): the world
goes on a day past the week (testing/worlds/week.py's `AFTER`), so that a stop off across the week's end is worth
the hours after it too; one still off when the run was last seen is censored, never a stop that saved nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from testing.measured import Judge, always_on, money
from testing.week import followed_until
from testing.worlds.week import SLOTS_PER_HOUR, World

DAY = 24 * SLOTS_PER_HOUR


@pytest.fixture(scope="module")
def world() -> World:
    return World(7, commitments=True)


@pytest.fixture(scope="module")
def judge(world: World) -> Judge:
    return Judge(world)


def _weekend_off(world: World, machine_off_until: int) -> tuple[dict[str, list[bool]], str, int]:
    """Everyone off from the week's Saturday until the next Monday at 08:00 (the Savings Plan unused all weekend,
    spilling again when the fleet comes back), and one g5.48xlarge (no RI for it) off from that Saturday until
    `machine_off_until` (a slot)."""
    first = world.index(world.start)
    saturday, back = first + 5 * DAY, first + 7 * DAY + 8 * SLOTS_PER_HOUR
    running = always_on(world)
    for on in running.values():
        on[saturday:back] = [False] * (back - saturday)
    machine = next(m for m in world.machines if m.instance_type == "g5.48xlarge")
    off_until = min(machine_off_until, world.slots)
    on = running[machine.instance_id]
    on[saturday:] = [False] * (off_until - saturday) + [True] * (world.slots - off_until)
    return running, machine.instance_id, saturday


def _judged(world: World, judge: Judge, running: dict[str, list[bool]], iid: str, at: int) -> dict[str, object]:
    return money(world, running, [(iid, at)], [], [], judge=judge, nobody=0.0)


def test_a_stop_off_across_the_weeks_end_whose_monday_hours_spill_saved_something(world: World, judge: Judge) -> None:
    first = world.index(world.start)
    running, iid, at = _weekend_off(world, first + 7 * DAY + 12 * SLOTS_PER_HOUR)  # on again Monday 12:00
    figures = _judged(world, judge, running, iid, at)
    assert figures["stops_in_week"] == 1
    assert figures["stops_that_saved_nothing"] == 0, figures["stops_that_saved_nothing_list"]
    assert figures["stops_censored"] == 0


def test_a_stop_off_across_the_weeks_end_whose_next_day_is_covered_saved_nothing(world: World, judge: Judge) -> None:
    first = world.index(world.start)
    running, iid, at = _weekend_off(world, first + 7 * DAY + 6 * SLOTS_PER_HOUR)  # on again Monday 06:00
    figures = _judged(world, judge, running, iid, at)
    assert figures["stops_that_saved_nothing_list"] == [{"instance_id": iid, "at": "Sat 00:00", "hours": 54.0}]
    assert figures["stops_censored"] == 0


def test_a_stop_still_off_when_the_run_was_last_seen_is_censored_not_saved_nothing(world: World, judge: Judge) -> None:
    first = world.index(world.start)
    running, iid, at = _weekend_off(world, world.slots)
    seen = first + 7 * DAY + 6 * SLOTS_PER_HOUR  # the run ended Monday 06:00, the machine still off
    figures = money(world, running, [(iid, at)], [], [], judge=judge, nobody=0.0, seen=seen)
    assert figures["stops_that_saved_nothing"] == 0
    assert figures["stops_censored"] == 1
    assert figures["stops_censored_hours"] == 54.0
    assert figures["stops_censored_list"] == [
        {"instance_id": iid, "at": "Sat 00:00", "hours": 54.0, "saved_so_far_usd": 0.0}
    ]


def test_the_world_past_its_week_repeats_the_weeks_first_day_and_leaves_the_week_as_it_was(world: World) -> None:
    cut = World(7, commitments=True, after=timedelta(0))
    week, first = 7 * DAY, world.index(world.start)
    assert world.slots == cut.slots + DAY
    for long, short in zip(world.machines, cut.machines, strict=True):
        assert long.slots[: cut.slots] == short.slots
        gone = world.bought.gone.get(long.instance_id) if world.bought else None
        if gone is None:
            assert long.slots[cut.slots :] == long.slots[cut.slots - week : world.slots - week]
        else:  # its Capacity Block took it in the week: it stays gone
            assert not any(s.work or s.gpu_agent for s in long.slots[cut.slots :])
    assert any(m.slots[first + week + 10 * SLOTS_PER_HOUR].work for m in world.machines), "a Monday's work"


def test_a_stop_whose_machine_ran_again_where_the_run_broke_off_is_judged_whole_not_censored(
    world: World, judge: Judge
) -> None:
    # The run after the week breaks off at the first slot where every stop's machine runs again: that slot was seen.
    first = world.index(world.start)
    back = first + 7 * DAY + 6 * SLOTS_PER_HOUR  # on again Monday 06:00 (the weekend's hours covered)
    running, iid, at = _weekend_off(world, back)
    assert running[iid][back]
    seen = followed_until(back, still_off=set())
    figures = money(world, running, [(iid, at)], [], [], judge=judge, nobody=0.0, seen=seen)
    assert figures["stops_censored"] == 0
    assert figures["stops_that_saved_nothing"] == 1
    assert followed_until(back, still_off={(iid, at)}) == back  # still off there: followed to it, censored
