"""The true bill of an hour (or part of one): what the account pays, given which machines run. Pure.

The benchmarks' judge of what a stop saved, written apart from costguard's own pricing (core/money.py is
not imported): the bill as AWS applies the commitments, in this order.

1. A Capacity Block for ML is prepaid: its fee for every instance it holds, for every hour it lasts,
   whether anything runs in it. An instance in it costs nothing more.
2. A targeted On-Demand Capacity Reservation is billed at the on-demand rate for its whole count while it
   is active, used or not. An instance that runs in it costs nothing more. (AWS would also let Savings
   Plans and regional RIs discount the reservation's charge: none of this world's commitments match it.)
3. Reserved Instances: each one's fee is paid every hour of its term, used or not. Zonal RIs apply first,
   to running instances of their exact type in their zone; then regional ones, across a family's sizes in
   normalized units where they are size-flexible (smallest instances first), by exact type elsewhere.
4. A Savings Plan's commitment ($/h) is paid every hour. It covers the eligible on-demand usage left,
   at the plan's rate (a discount off on demand), until the commitment is used up; the rest is on demand.
5. A Spot instance pays its Spot price; every other instance the on-demand price of what is left of it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

# Normalized units of a size (EC2 User Guide, "How Reserved Instances are applied").
UNITS = {"xlarge": 8, "2xlarge": 16, "4xlarge": 32, "8xlarge": 64, "12xlarge": 96, "16xlarge": 128,
         "24xlarge": 192, "48xlarge": 384}  # fmt: skip


@dataclass(frozen=True)
class Machine:
    """One instance as the bill sees it."""

    instance_id: str
    instance_type: str
    zone: str
    on_demand: float  # USD an hour
    lifecycle: str = ""  # "spot", "capacity-block" or "" (on demand)
    reservation: str = ""  # the capacity reservation or Capacity Block it runs in
    spot: float = 0.0  # a Spot instance's price, USD an hour


@dataclass(frozen=True)
class Reserved:
    instance_type: str
    count: int
    fee: float  # USD an hour, each
    start: datetime
    end: datetime
    zone: str = ""  # "" for a regional RI
    size_flexible: bool = False  # a regional RI of a size-flexible family


@dataclass(frozen=True)
class Held:
    """A Capacity Block (`block`, its fee an instance-hour) or a targeted On-Demand Capacity Reservation (billed
    at `fee`, the type's on-demand price, for each instance of its count)."""

    reservation_id: str
    instance_type: str
    zone: str
    count: int
    fee: float
    start: datetime
    end: datetime
    block: bool


@dataclass(frozen=True)
class SavingsPlan:
    commitment: float  # USD an hour
    discount: float  # the plan's rate is (1 - discount) x on demand
    start: datetime
    end: datetime


@dataclass(frozen=True)
class Commitments:
    reserved: Sequence[Reserved] = ()
    held: Sequence[Held] = ()
    plans: Sequence[SavingsPlan] = ()


@dataclass
class HourBill:
    """What one hour (or `hours` of one) cost, by part. `plan_used`: the on-demand value of the usage the plans
    covered; `plan_spill`: the eligible usage they left at the on-demand rate."""

    blocks: float = 0.0
    reservations: float = 0.0
    ri_fees: float = 0.0
    plan_fees: float = 0.0
    spot: float = 0.0
    on_demand: float = 0.0
    plan_used: float = 0.0
    plan_spill: float = 0.0
    by_machine: dict[str, float] = field(default_factory=dict)  # the on-demand and Spot part of each

    @property
    def total(self) -> float:
        return self.blocks + self.reservations + self.ri_fees + self.plan_fees + self.spot + self.on_demand


def family(instance_type: str) -> str:
    return instance_type.partition(".")[0]


def units(instance_type: str) -> int:
    return UNITS.get(instance_type.partition(".")[2], 0)


def bill(running: Iterable[Machine], commitments: Commitments, at: datetime, hours: float = 1.0) -> HourBill:
    """What the account pays for `hours` of the hour at `at`, with `running` the instances that run then."""
    out = HourBill()
    held = {h.reservation_id: h for h in commitments.held if h.start <= at < h.end}
    for h in held.values():  # 1, 2: paid whatever runs
        if h.block:
            out.blocks += h.count * h.fee * hours
        else:
            out.reservations += h.count * h.fee * hours
    # What each instance still owes an hour, at the on-demand rate, before the RIs and plans.
    owed: dict[str, float] = {}
    plain: list[Machine] = []
    for m in running:
        if m.reservation in held and held[m.reservation].instance_type == m.instance_type:
            continue  # in paid capacity: nothing more
        if m.lifecycle == "capacity-block":
            raise ValueError(f"{m.instance_id} runs in a Capacity Block that is not active at {at}")
        if m.lifecycle == "spot":
            out.spot += m.spot * hours
            out.by_machine[m.instance_id] = m.spot * hours
            continue
        plain.append(m)
        owed[m.instance_id] = 1.0  # the share of its hour still to pay
    ris = [r for r in commitments.reserved if r.start <= at < r.end]
    out.ri_fees = sum(r.count * r.fee for r in ris) * hours
    _zonal(plain, ris, owed)
    _regional(plain, ris, owed)
    eligible = sum(m.on_demand * owed[m.instance_id] for m in plain) * hours
    plans = [p for p in commitments.plans if p.start <= at < p.end]
    covered = 0.0
    for plan in plans:  # 4.
        out.plan_fees += plan.commitment * hours
        room = plan.commitment * hours / (1 - plan.discount)  # on-demand value the commitment pays for
        take = min(room, eligible - covered)
        covered += take
    out.plan_used, out.plan_spill = covered, eligible - covered
    out.on_demand = eligible - covered
    share = (eligible - covered) / eligible if eligible else 0.0  # one rate: the spill is spread evenly
    for m in plain:
        out.by_machine[m.instance_id] = m.on_demand * owed[m.instance_id] * hours * share
    return out


def _zonal(plain: Sequence[Machine], ris: Sequence[Reserved], owed: dict[str, float]) -> None:
    left: dict[tuple[str, str], int] = defaultdict(int)
    for r in ris:
        if r.zone:
            left[(r.instance_type, r.zone)] += r.count
    for m in sorted(plain, key=lambda m: m.instance_id):
        key = (m.instance_type, m.zone)
        if left[key] > 0:
            left[key] -= 1
            owed[m.instance_id] = 0.0


def _regional(plain: Sequence[Machine], ris: Sequence[Reserved], owed: dict[str, float]) -> None:
    flexible: dict[str, float] = defaultdict(float)  # family -> units an hour
    exact: dict[str, int] = defaultdict(int)  # type -> instances
    for r in ris:
        if r.zone:
            continue
        if r.size_flexible:
            flexible[family(r.instance_type)] += r.count * units(r.instance_type)
        else:
            exact[r.instance_type] += r.count
    # Smallest instances first, as AWS applies a size-flexible RI.
    for m in sorted(plain, key=lambda m: (units(m.instance_type), m.instance_id)):
        if owed[m.instance_id] <= 0:
            continue
        if exact[m.instance_type] > 0:
            exact[m.instance_type] -= 1
            owed[m.instance_id] = 0.0
            continue
        pool, size = family(m.instance_type), units(m.instance_type)
        if flexible[pool] > 0 and size:
            need = size * owed[m.instance_id]
            take = min(need, flexible[pool])
            flexible[pool] -= take
            owed[m.instance_id] = (need - take) / size


def week_bill(
    machines: Sequence[Machine],
    running: Sequence[Sequence[bool]],
    commitments: Commitments,
    times: Sequence[datetime],
    hours: float,
) -> list[float]:
    """The bill of each slot (`times`, each `hours` long), `running[k][i]`: machine k runs in slot i."""
    return [
        bill([m for m, on in zip(machines, running, strict=True) if on[i]], commitments, at, hours).total
        for i, at in enumerate(times)
    ]
