"""The weekly digest's prices as the bill shows them (core/money.py, the idle stopper's model): what an idle
hour of each machine cost that a stop would have saved, and the idle hours on capacity already paid, which
go to the commitment advice instead. Pure.

The digest reads the bill once, as it stands when the digest runs (Reserved Instances, capacity reservations
and Capacity Blocks, Savings Plans and their recent use, Spot prices), not hour by hour: every idle hour of
the week is priced on it, and the digest says so. The idle machines of a region are priced in turn, the most
idle first, each as if the ones before it were stopped (the order a sweep would stop them in): with five
p4d idle on three Reserved Instances, two waste the on-demand price and three idle on hours already paid.
Nothing is claimed that the bill would not show: a price that cannot be had is the on-demand list, said.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from costguard.core.bill import Bill
from costguard.core.money import (
    UNREAD_HOLDS,
    UNREAD_PLANS,
    UNREAD_RIS,
    Basis,
    Billing,
    Marginal,
    family,
)
from costguard.core.records import Instance

# What pays an hour whether the machine runs or not: a stop saves nothing.
PAID = (Basis.CAPACITY_BLOCK, Basis.CAPACITY_RESERVATION, Basis.RESERVED, Basis.SAVINGS_PLAN)
# What to do about idle hours already paid, by what pays them: the commitment advice.
ADVICE = {
    Basis.CAPACITY_BLOCK: "book a shorter or smaller block next time",
    Basis.CAPACITY_RESERVATION: "release or shrink it: it is billed while it is held",
    Basis.RESERVED: "buy fewer at renewal, or move on-demand work onto them",
    Basis.SAVINGS_PLAN: "commit less at renewal",
}


@dataclass(frozen=True)
class IdlePrice:
    """What an idle hour of one machine cost that a stop would have saved, beside its on-demand price."""

    usd_per_hour: float | None  # on the bill; None: no price at all
    on_demand: float | None
    paid_by: str = ""  # what pays its hours anyway ("Capacity Block cr-1", "Reserved Instances (p4d)"); "" if none
    basis: Basis = Basis.ON_DEMAND


def idle_prices(
    billing: Billing,
    machines: Iterable[tuple[Instance, float | None]],
    idle: Mapping[str, float],
    before: Mapping[str, float],
    now: datetime,
) -> dict[str, IdlePrice]:
    """The price of each machine (instance, on-demand price) idle this week or last (`idle`, `before`: idle
    hours by instance): the most idle this week (in dollars at list, then hours) first, then last week's,
    each priced as if the ones before it were stopped. A busy machine keeps its share of the commitments, and
    its price counts in the Savings Plans' use now (`machines` holds every machine of the region, busy or idle)."""

    def order(m: tuple[Instance, float | None]) -> tuple[float, float, float, str]:
        iid, price = m[0].instance_id, m[1] or 0.0
        return (-idle.get(iid, 0.0) * price, -idle.get(iid, 0.0), -before.get(iid, 0.0) * price, iid)

    machines = list(machines)
    prices = {i.instance_id: price for i, price in machines}
    priced = sorted((m for m in machines if idle.get(m[0].instance_id) or before.get(m[0].instance_id)), key=order)
    bill = Bill(billing, now, list_price=lambda i: prices.get(i.instance_id))
    out: dict[str, IdlePrice] = {}
    for instance, on_demand in priced:
        marginal = bill.price(instance, on_demand)
        bill.stopped(instance, marginal)
        out[instance.instance_id] = _idle_price(instance, marginal)
    return out


def _idle_price(instance: Instance, marginal: Marginal) -> IdlePrice:
    if marginal.usd_per_hour == 0 and marginal.basis in PAID and not _past_the_spill(marginal):
        return IdlePrice(0.0, marginal.on_demand, _paid_by(instance, marginal), marginal.basis)
    if marginal.usd_per_hour is None:  # a Spot price not read: the list price, as the basis line says
        return IdlePrice(marginal.on_demand, marginal.on_demand, basis=marginal.basis)
    return IdlePrice(marginal.usd_per_hour, marginal.on_demand, basis=marginal.basis)


def _past_the_spill(marginal: Marginal) -> bool:
    """A Savings Plan used up, its recent on-demand spill taken by the machines priced before: $0, but not idle
    committed capacity (the plan has none to spare, buying less would be wrong); not counted, conservatively."""
    return marginal.basis is Basis.SAVINGS_PLAN and not marginal.why.startswith("covered")


def _paid_by(instance: Instance, marginal: Marginal) -> str:
    if marginal.hold is not None:
        return marginal.hold.label
    if marginal.basis is Basis.CAPACITY_BLOCK:
        return f"Capacity Block {instance.capacity_reservation_id}".strip()
    if marginal.basis is Basis.CAPACITY_RESERVATION:
        return f"capacity reservation {instance.capacity_reservation_id}".strip()
    if marginal.basis is Basis.RESERVED:
        return f"Reserved Instances ({family(instance.instance_type)}, {instance.region})"
    return "a Savings Plan"


@dataclass(frozen=True)
class PaidIdle:
    """Idle hours on capacity one commitment already paid: nothing a stop saves, something to buy less of."""

    paid_by: str
    basis: Basis
    idle_hours: float
    on_demand_usd: float  # what those hours would have cost on demand: the size of the lesson
    machines: tuple[str, ...]

    @property
    def advice(self) -> str:
        return ADVICE.get(self.basis, "buy less at renewal")


def paid_idle(
    prices: Mapping[str, IdlePrice], idle_hours: Mapping[str, float], on_demand: Mapping[str, float | None]
) -> list[PaidIdle]:
    """The idle hours already paid, by what pays them, the most hours first."""
    hours: dict[tuple[str, Basis], float] = defaultdict(float)
    worth: dict[tuple[str, Basis], float] = defaultdict(float)
    machines: dict[tuple[str, Basis], list[str]] = defaultdict(list)
    for iid, price in sorted(prices.items()):
        if not price.paid_by:
            continue
        key = (price.paid_by, price.basis)
        hours[key] += idle_hours.get(iid, 0.0)
        worth[key] += idle_hours.get(iid, 0.0) * (on_demand.get(iid) or 0.0)
        machines[key].append(iid)
    out = [PaidIdle(k[0], k[1], hours[k], worth[k], tuple(machines[k])) for k in hours]
    return sorted(out, key=lambda p: (-p.idle_hours, p.paid_by))


def basis_line(billings: Sequence[Billing], now: datetime) -> str:
    """The one line that names what the digest's dollars are: the bill as it stands, or the on-demand list.
    What was not read is named, never why (an AWS error code is no sentence for the channel: a refused
    permission goes to the alerts channel, digest/gaps.py)."""
    if not billings or all(_unread_whole(b) for b in billings):
        return "Prices: on-demand list (the bill was not read)."
    ris = sum(r.count for b in billings for r in b.reserved if r.in_force(now))
    holds = [h for b in billings for h in b.holds if h.active(now)]
    blocks = sum(1 for h in holds if h.block)
    plans = {p.plan_id: p for b in billings for p in b.plans if p.start is None or p.start <= now < p.end}
    less = [
        _many(ris, "Reserved Instance"),
        _many(len(holds) - blocks, "capacity reservation"),
        _many(blocks, "Capacity Block"),
        _many(len(plans), "Savings Plan"),
    ]
    less = [x for x in less if x]
    # A plan whose room is judged on what runs now needs no word more: "now" says it. One judged on its recent
    # use says so.
    if plans and not all(p.hourly for p in plans.values()) and any(p.used_percent is not None for p in plans.values()):
        less[-1] += " (its recent use from Cost Explorer)"
    line = "Prices as your bill shows them now, not hour by hour"
    line += f": on demand less {_and(less)}" if less else ": on demand (no commitments in force)"
    line += "; Spot at its price"
    unread = sorted({u for b in billings for u in b.unread})
    if unread:
        line += f". Not read: {', '.join(unread)}: on demand there"
    return line + "."


def _unread_whole(billing: Billing) -> bool:
    return all(u in billing.unread for u in (UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS))


def _many(count: int, what: str) -> str:
    if count <= 0:
        return ""
    return f"a {what}" if count == 1 else f"{count} {what}s"


def _and(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
