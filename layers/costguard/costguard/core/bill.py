"""A region's bill, priced machine by machine: what each stop would save now, the stops already coming taken
off in turn (`Bill.price` then `Bill.stopped`), on the Reserved Instances (reserved.py), the Savings Plans
(plans.py), the holds and Spot the machines run on (money.py's model). Pure: no I/O, no clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from costguard.core.money import (
    PLAN_USED_UP_PERCENT,
    UNREAD_HOLDS,
    UNREAD_PLAN_USE,
    UNREAD_PLANS,
    UNREAD_RIS,
    Basis,
    Billing,
    Marginal,
)
from costguard.core.plans import PlanHours, layer_key
from costguard.core.records import Instance
from costguard.core.reserved import RiPool, RiSpill

# A week of quarter-hours: what the Savings Plans and RIs leave spilling is learned slot by slot (UTC).
SLOT = timedelta(minutes=15)
WEEK_SLOTS = 7 * 24 * 4
MAX_LAYERS = 16  # a region's profile holds at most this many plan layers and RI pools (its item stays small)


def slot_of(moment: datetime) -> int:
    """The quarter-hour of the week `moment` falls in (Monday 00:00 UTC is 0)."""
    at = moment.astimezone(UTC)
    return at.weekday() * 96 + at.hour * 4 + at.minute // 15


@dataclass(frozen=True)
class SpillProfile:
    """What a region's Savings Plans and Reserved Instances left billed on demand, by quarter-hour of the week:
    each plan layer's spill (USD/h at the on-demand rate, "sp:Compute") and each RI pool's need beyond what it
    gives (normalized units or machines, "ri:p4d/default"); None where no sweep has seen that quarter-hour yet."""

    region: str
    layers: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)

    def at(self, key: str, moment: datetime) -> float | None:
        """The layer's spill at this quarter-hour of the week, as sweeps saw it; None where none has seen it yet.
        Never taken from another day: on the commitments world's first week, a quarter-hour taken from the nearest
        day seen (of its kind, or any) made 28 to 38 of about 260 stops save nothing over their whole off-period
        (a Sunday priced as the Saturday some worked), where this hour's price alone made none."""
        slots = self.layers.get(key)
        return None if slots is None else slots[slot_of(moment)]

    def knows(self, keys: tuple[str, ...]) -> bool:
        """Whether every one of these layers has been seen in at least one quarter-hour."""
        return all(any(v is not None for v in self.layers.get(k, ())) for k in keys)

    def learned(self, spill: Mapping[str, float], moment: datetime) -> SpillProfile:
        """With the spill a sweep found now: its quarter-hour becomes the mean of what it held and what was
        found (one odd week does not make the next one's decisions), a new layer is added while there is room."""
        slot = slot_of(moment)
        layers = {k: list(v) for k, v in self.layers.items()}
        for key, value in sorted(spill.items()):
            if key not in layers:
                if len(layers) >= MAX_LAYERS:
                    continue
                layers[key] = [None] * WEEK_SLOTS
            old = layers[key][slot]
            layers[key][slot] = round(value if old is None else (old + value) / 2, 4)
        return SpillProfile(self.region, {k: tuple(v) for k, v in layers.items()})


@dataclass(frozen=True)
class Exposure:
    """What a machine's hour on the bill depends on beyond now: its marginal price now, the RI pool and the plan
    layers its usage goes through (with when each RI or plan ends and what it gives), as `Bill.exposure` finds
    them. Where `hourly` is False, a plan covering it is judged on its recent use: nothing is known by hour."""

    marginal: Marginal
    share_now: float = 1.0  # the share of its hour the RIs leave uncovered now
    ri: RiSpill | None = None
    plan_keys: tuple[str, ...] = ()
    plan_ends: tuple[tuple[str, datetime, float], ...] = ()  # (layer key, a plan's end, its room USD/h)
    spill_now: Mapping[str, float] = field(default_factory=dict)
    hourly: bool = True


@dataclass(frozen=True)
class OffWorth:
    """What a stop is expected to save over the hours it keeps the machine off, against what its restart is
    expected to cost. `usd` None: no profile of the bill's week for its hours off yet (none, or an hour of them
    not seen), the stop was priced on this hour alone."""

    usd: float | None
    until: datetime
    restart_usd: float = 0.0
    spills_from: datetime | None = None  # the first quarter-hour it saves in, where that is not now
    what: str = ""  # "the Savings Plan", "the Reserved Instances", "the capacity reservation"
    room_taken_usd: float = 0.0  # what it would save more were the machines costguard keeps stopped running
    taken_by: int = 0  # how many of those machines take of the spill it draws on

    @property
    def profiled(self) -> bool:
        return self.usd is not None

    @property
    def worth_it(self) -> bool:
        return self.usd is not None and self.usd > 0 and self.usd > self.restart_usd

    def text(self) -> str:
        """ "saves about $130 by Mon 09:00 UTC on the bill: the Savings Plan spills from 08:00 UTC"."""
        if self.usd is None:
            return "no profile of the bill's week for its hours off yet: priced on this hour alone"
        out = f"saves about ${self.usd:,.0f} by {self.until:%a %H:%M} UTC on the bill"
        if self.spills_from is not None and self.what:
            out += f": {self.what} spills from {self.spills_from:%H:%M} UTC"
        room = self.room_text()
        return f"{out}; {room}" if room else out

    def room_text(self) -> str:
        """ "12 machines costguard keeps stopped already take $45 of that spill", or "" where none takes of it."""
        if not self.taken_by or self.room_taken_usd <= 0:
            return ""
        who = "1 machine" if self.taken_by == 1 else f"{self.taken_by} machines"
        take = "takes" if self.taken_by == 1 else "take"
        return f"{who} costguard keeps stopped already {take} ${self.room_taken_usd:,.0f} of that spill"


class Bill:
    """Prices the machines of one region at the margin, in turn: each one priced as if the ones priced
    before it (and marked `stopped`) were gone. Built from one `Billing`; holds no clock.

    `list_price` gives each machine's on-demand price (None: unknown): with it, the Savings Plans whose
    commitment and rate are known are judged on what runs now (`PlanHours`), else on their recent use."""

    def __init__(
        self, billing: Billing, now: datetime, list_price: Callable[[Instance], float | None] | None = None
    ) -> None:
        self.billing = billing
        self.now = now
        self._gone: set[str] = set()
        self._spill_left = billing.plan_spill_usd_per_hour
        self._holds = {h.reservation_id: h for h in billing.holds}
        self._reserved = [r for r in billing.reserved if r.in_force(now)]
        # The machines RIs apply to, built once and shrunk by each stop: neither Spot nor a Capacity Block,
        # nor a machine in a paid hold (the hold's: the RIs and plans apply to the others).
        ended = {h.reservation_id for h in billing.holds if not h.active(now)}
        self._pool = {
            i.instance_id: i
            for i in billing.running
            if i.state == "running"
            and not i.lifecycle
            and not (i.capacity_reservation_id and i.capacity_reservation_id not in ended)
        }
        self._hours = PlanHours.build(billing.plans, list(self._pool.values()), self._reserved, list_price, now)
        self._running = RiPool(self._pool.values(), self._reserved)  # what ri_share asks of them, counted once
        self._first_spill: dict[str, float] | None = None

    @property
    def judges_plans_hourly(self) -> bool:
        """Whether every Savings Plan in force is judged on what runs now (its commitment and rate known)."""
        return self._hours is not None and self._hours.judges([p for p in self.billing.plans if p.in_force(self.now)])

    def stopped(self, instance: Instance, marginal: Marginal) -> None:
        """This machine is priced as gone from now on (a stop decided in this sweep, at `marginal`): the
        RIs it used are free for the others, and the Savings Plan spill it took is gone."""
        if instance.instance_id in self._gone:
            return
        self._gone.add(instance.instance_id)
        if self._hours is not None and instance.instance_id in self._pool:
            self._hours.spend(instance, self._running.share(instance)[0])
        if self._pool.pop(instance.instance_id, None) is not None:
            self._running.remove(instance)
        if self._hours is None and marginal.basis is Basis.SAVINGS_PLAN and self._spill_left is not None:
            self._spill_left = max(0.0, self._spill_left - (marginal.usd_per_hour or 0.0))

    def spill_now(self) -> dict[str, float]:
        """What the plans and RIs leave billed on demand now, by layer (`SpillProfile`'s keys): the plan layers
        judged on what runs now, and every regional RI pool the running machines draw on."""
        out = dict(self._hours.spills()) if self._hours is not None else {}
        for instance in self._pool.values():
            ri = self._running.spill(instance)
            if ri is not None and ri.key not in out:
                out[ri.key] = round(ri.over, 4)
        return out

    def exposure(self, instance: Instance, on_demand: float | None) -> Exposure:
        """The machine's price now (`price`), with the RI pool and the plan layers it draws on."""
        marginal = self.price(instance, on_demand)
        if marginal.prepaid or marginal.basis is Basis.SPOT or instance.instance_id not in self._pool:
            return Exposure(marginal)
        share_now = self._running.share(instance)[0]
        ri = self._running.spill(instance)
        plans = [p for p in self.billing.plans if p.covers(instance, self.now)]
        if self._first_spill is None:  # a fallback for the quarter-hours a profile has not seen: found once
            self._first_spill = self.spill_now()
        spill_now = self._first_spill
        if not plans:
            return Exposure(marginal, share_now, ri, spill_now=spill_now)
        if self._hours is None or not self._hours.judges(plans):
            return Exposure(marginal, share_now, ri, hourly=False)
        ends = tuple((f"sp:{layer_key(p)}", p.end, (p.commitment_usd_per_hour or 0.0) / (p.rate or 1.0)) for p in plans)
        return Exposure(marginal, share_now, ri, self._hours.chain_keys(instance), ends, spill_now)

    def price(self, instance: Instance, on_demand: float | None) -> Marginal:
        """The machine's marginal price this hour, `on_demand` being its list price (None: unknown)."""
        hold = self._hold_of(instance, on_demand)
        if hold is not None:
            return hold
        if instance.lifecycle == "spot":
            return self._spot(instance, on_demand)
        share, why, caveats = self._uncovered_share(instance)
        if share == 0:
            return Marginal(0.0, on_demand, Basis.RESERVED, why, caveat="; ".join(caveats))
        plan = self._plan(instance, on_demand, share)
        if plan is not None:
            return Marginal(plan[0], on_demand, Basis.SAVINGS_PLAN, plan[1], caveat="; ".join(caveats))
        if UNREAD_PLANS in self.billing.unread or UNREAD_PLAN_USE in self.billing.unread:
            caveats.append("Savings Plans not read")
        usd = None if on_demand is None else round(on_demand * share, 4)
        text = why or "on demand"
        if caveats:
            caveats.append("priced on demand")
        return Marginal(usd, on_demand, Basis.ON_DEMAND, text, caveat="; ".join(caveats))

    # ------------------------------------------------------------------------------------------ the cases
    def _hold_of(self, instance: Instance, on_demand: float | None) -> Marginal | None:
        """$0 in paid capacity. `on_demand` rides along: what an idle hour of it costs."""
        rid = instance.capacity_reservation_id
        block = instance.lifecycle == "capacity-block"
        if not rid and not block:
            return None
        hold = self._holds.get(rid)
        if hold is None and UNREAD_HOLDS not in self.billing.unread:
            return None  # read whole and not there: ended or cancelled, the machine runs on demand
        if hold is not None and not hold.active(self.now):
            return None  # ended or cancelled: the machine runs on demand (or is about to end with its block)
        if hold is None:
            # The instance's own fields say it runs in reserved capacity; its details could not be read.
            kind = "Capacity Block" if block else "capacity reservation"
            basis = Basis.CAPACITY_BLOCK if block else Basis.CAPACITY_RESERVATION
            why = f"in {kind} {rid}".strip() + (": prepaid" if block else ": billed whether used or not")
            return Marginal(0.0, on_demand, basis, why, caveat="capacity reservations not read")
        basis = Basis.CAPACITY_BLOCK if hold.block else Basis.CAPACITY_RESERVATION
        paid = "prepaid" if hold.block else "billed whether used or not"
        return Marginal(0.0, on_demand, basis, f"in {hold.label}: {paid}", hold=hold, until=hold.end)

    def _spot(self, instance: Instance, on_demand: float | None) -> Marginal:
        price = self.billing.spot_prices.get((instance.instance_type, instance.zone))
        if price is None:
            return Marginal(None, on_demand, Basis.SPOT, "Spot", caveat="Spot price not read")
        return Marginal(price, on_demand, Basis.SPOT, f"Spot price in {instance.zone}")

    def _uncovered_share(self, instance: Instance) -> tuple[float, str, list[str]]:
        """The share of this machine's hour the Reserved Instances leave to other rates (0 to 1), and why."""
        caveats = ["Reserved Instances not read"] if UNREAD_RIS in self.billing.unread else []
        share, why = self._running.share(instance)
        return share, why, caveats

    def _plan(self, instance: Instance, on_demand: float | None, share: float) -> tuple[float | None, str] | None:
        """What a Savings Plan makes of the share the RIs left: judged on what runs now where the plans'
        commitment and rate are known (`PlanHours`), else on their recent use: $0 while a plan covering it had
        room lately, else the on-demand price while the plan's recent spill lasts. None where no plan applies
        or its use is unknown."""
        plans = [p for p in self.billing.plans if p.covers(instance, self.now)]
        if not plans or instance.lifecycle:  # Savings Plans never apply to Spot or capacity blocks
            return None
        if self._hours is not None and self._hours.judges(plans):
            return self._hours.price(instance, on_demand, share)
        known = [p for p in plans if p.used_percent is not None]
        room = [p for p in known if (p.used_percent or 0) < PLAN_USED_UP_PERCENT]
        if room:
            used = min(p.used_percent or 0 for p in room)
            return (0.0, f"covered: Savings Plan used {used:.0f} % lately, its hours are paid whether used or not")
        if not known:
            return None  # its use not read: priced on demand, said by the caller
        if on_demand is None:
            return (None, "Savings Plan used up lately")
        full = on_demand * share
        if self._spill_left is None:
            return (round(full, 4), "on demand: Savings Plan used up lately")
        saved = min(full, self._spill_left)
        return (round(saved, 4), "on demand: Savings Plan used up lately")
