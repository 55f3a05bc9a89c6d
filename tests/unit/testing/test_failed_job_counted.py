"""The bench's count of interruptions (testing/week.py): a job that finds its box stopped in its owner's office hours
fails, and is an interruption even though its owner, told of it at their desk, starts the box again."""

from __future__ import annotations

from testing.week import Fleet, outcome
from testing.worlds.week import World, harder


def test_a_job_that_finds_its_box_stopped_in_its_owners_office_hours_counts_as_an_interruption() -> None:
    world = World(101, **harder())
    fleet = Fleet(world, 101, 0.0)
    first = world.index(world.start)
    # An automation box whose job begins in its owner's office hours, after an idle hour: stopped just before it.
    box, due = next(
        (m, i)
        for m in world.machines
        if m.automation
        for i in range(first + 12, len(m.slots))
        if m.slots[i].work and not m.slots[i - 1].work and world.office_hours(m, i)
    )
    fleet.now = world.at(due - 6)
    fleet.stop(box.instance_id)
    fleet.advance(world.at(due + 2))
    assert fleet.owner_restarts == [(box.instance_id, fleet.owner_restarts[0][1])]  # its owner started it again
    figures = outcome(world, fleet.running, fleet.stops, [])
    assert figures["interruptions"] == 1
    assert figures["interrupted"][0].startswith(f"{box.instance_id} ")
    assert not any(fleet.running[box.instance_id][due - 6 : due + 1])  # the job found it stopped
