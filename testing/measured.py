"""What a week of the commitments world cost, on the true bill (testing/bill.py), for any tool's running
machines: the harness's costguard week (testing/week.py) and the benchmarks' oracle and baselines
(bench/commitments.py) are judged by the same figures.

- dollars truly saved: the bill with nobody stopping anything, less the tool's bill, over the week (every
  figure but a stop's worth is the week's);
- stops that saved nothing: a stop whose stopped hours lowered the true bill by $0 (less than a cent),
  the rest of that run held fixed, over its whole off-period: from the stop until its machine ran again, past
  the week's end where it stayed off across it (the world goes on, testing/worlds/week.py's `AFTER`, and so
  does the run); a stop still off when the run was last seen is censored (its worth not known): counted apart,
  with its hours, never as one that saved nothing nor as one that saved;
- person-hours blocked: the boot waits of the restarts people made, and the hours work was due on a machine
  that someone tried to start while EC2 had no capacity for it;
- restarts owners made.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from testing.bill import HourBill, Machine, bill
from testing.worlds.commitments import ON_DEMAND
from testing.worlds.week import SLOTS_PER_HOUR, STEP, World

HOURS = 1 / SLOTS_PER_HOUR
CENT = 0.01


def machines(world: World) -> list[Machine]:
    bought = world.bought
    assert bought is not None
    return [
        Machine(
            m.instance_id,
            m.instance_type,
            m.az,
            ON_DEMAND[m.instance_type],
            lifecycle="capacity-block" if m.instance_id in bought.block_machines else "",
            reservation=bought.reservation.get(m.instance_id, ""),
        )
        for m in world.machines
    ]


class Judge:
    """The true bill of the commitments world's slots, for running machines given as {id: [bool per slot]}."""

    def __init__(self, world: World) -> None:
        assert world.bought is not None
        self.world, self.commitments = world, world.bought.commitments
        self.machines = machines(world)
        self.present = [[world.exists(m, i) for i in range(world.slots)] for m in world.machines]

    def slot(self, running: Mapping[str, Sequence[bool]], i: int, *, also: str = "") -> HourBill:
        """Slot i's bill; `also`: this machine counted as running (a stop undone)."""
        on = [
            m
            for m, here in zip(self.machines, self.present, strict=True)
            if here[i] and (running[m.instance_id][i] or m.instance_id == also)
        ]
        return bill(on, self.commitments, self.world.at(i), HOURS)

    def total(self, running: Mapping[str, Sequence[bool]], slots: Iterable[int]) -> float:
        return sum(self.slot(running, i).total for i in slots)

    def off_run(self, running: Mapping[str, Sequence[bool]], instance_id: str, at: int, last: int) -> list[int]:
        out = []
        for i in range(at, last):
            if running[instance_id][i]:
                break
            out.append(i)
        return out

    def saved_by(self, running: Mapping[str, Sequence[bool]], instance_id: str, slots: Sequence[int]) -> float:
        """What the machine being off in `slots` saved, the rest held fixed."""
        return sum(self.slot(running, i, also=instance_id).total - self.slot(running, i).total for i in slots)


def week_slots(world: World, days: int) -> range:
    first = world.index(world.start)
    return range(first, min(world.slots, first + days * 24 * SLOTS_PER_HOUR))


def always_on(world: World) -> dict[str, list[bool]]:
    return {m.instance_id: [True] * world.slots for m in world.machines}


def money(
    world: World,
    running: Mapping[str, Sequence[bool]],
    stops: Sequence[tuple[str, int]],
    owner_restarts: Sequence[tuple[str, int]],
    blocked: Iterable[tuple[str, int]],
    *,
    days: int = 7,
    judge: Judge | None = None,
    nobody: float | None = None,
    seen: int | None = None,
) -> dict[str, Any]:
    """The week's figures on the true bill (`nobody`: the bill with nobody stopping anything, if known). `seen`:
    the slot the run was last seen in (exclusive; None: the week's end and the world's time after it), to which a
    stop's off-period is followed."""
    judge = judge or Judge(world)
    slots = week_slots(world, days)
    if seen is None:
        seen = min(world.slots, slots.stop + int(world.after / STEP))
    if nobody is None:
        nobody = judge.total(always_on(world), slots)
    paid = judge.total(running, slots)
    by_id = {m.instance_id: m for m in world.machines}
    assert world.bought is not None
    nothing, censored, censored_hours = [], [], 0.0
    for iid, at in stops:
        if at not in slots:
            continue
        off = judge.off_run(running, iid, at, seen)
        told = {"instance_id": iid, "at": f"{world.at(at):%a %H:%M}", "hours": round(len(off) / SLOTS_PER_HOUR, 1)}
        if off and off[-1] == seen - 1:  # still off when last seen: what it will save is not known
            censored.append(told | {"saved_so_far_usd": round(judge.saved_by(running, iid, off), 2)})
            censored_hours += len(off) / SLOTS_PER_HOUR
        elif off and judge.saved_by(running, iid, off) < CENT:
            nothing.append(told)
    restarts = [(iid, at) for iid, at in owner_restarts if at in slots]
    waits = sum(world.bought.boot_minutes(by_id[iid].instance_type) for iid, _ in restarts) / 60
    blocked_hours = sum(1 for _, i in set(blocked) if i in slots) / SLOTS_PER_HOUR
    return {
        "bill_nobody_stops": round(nobody, 2),
        "bill": round(paid, 2),
        "saved_usd": round(nobody - paid, 2),
        "stops_in_week": sum(1 for _, at in stops if at in slots),
        "stops_that_saved_nothing": len(nothing),
        "stops_that_saved_nothing_list": nothing,
        "stops_censored": len(censored),
        "stops_censored_hours": round(censored_hours, 1),
        "stops_censored_list": censored,
        "owner_restarts_in_week": len(restarts),
        "boot_wait_person_hours": round(waits, 2),
        "ice_blocked_work_hours": round(blocked_hours, 2),
        "person_hours_blocked": round(waits + blocked_hours, 2),
    }


def with_capacity(
    world: World, running: dict[str, list[bool]], by_owner: bool
) -> tuple[list[tuple[str, int]], set[tuple[str, int]]]:
    """A baseline's starts, where EC2 had no capacity, put off until it has (the machine stays stopped, the
    tool or its owner trying again): its starts (by owners when `by_owner`) and the work slots blocked."""
    bought = world.bought
    assert bought is not None
    first = world.index(world.start)
    restarts: list[tuple[str, int]] = []
    blocked: set[tuple[str, int]] = set()
    for m in world.machines:
        on = running[m.instance_id]
        i = first
        while i < world.slots:
            if on[i] and not on[i - 1] and world.exists(m, i):
                start = i
                while start < world.slots and bought.short(m.instance_type, m.az, world.at(start)):
                    if m.slots[start].work:
                        blocked.add((m.instance_id, start))
                    on[start] = False
                    start += 1
                if by_owner:
                    restarts.append((m.instance_id, start))
                i = start + 1
                continue
            i += 1
    return restarts, blocked
