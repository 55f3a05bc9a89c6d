"""What a machine costs the bill, each hour: the money a stop would save. Pure: no I/O, no clock.

A stop saves what the bill would lose without the machine *now*, not its list price:

- a Spot instance: its Spot price;
- inside a Capacity Block for ML, or an On-Demand Capacity Reservation: $0 (the block is prepaid, the
  reservation is billed at the on-demand rate whether an instance runs in it or not);
- where Reserved Instances apply: $0 while the matching running instances need no more than the RIs
  give (regional Linux RIs float across sizes of a family in normalized units, zonal RIs stay in their
  zone and type), else the on-demand price of the part the RIs leave uncovered;
- where a Savings Plan applies: $0 while the plan-eligible usage running now leaves its hourly commitment room
  (the hour is paid whether it runs or not), else the on-demand price while what runs now spills past it;
  a plan whose commitment or rate is not known is judged on its recent use instead (`Bill._plan`);
- otherwise the on-demand price.

Several machines stopped in one sweep are priced in turn (`Bill.price` then `Bill.stopped`): with 5 p4d
running and 3 RIs, the first two stops save the on-demand price and the third saves nothing.
Every read that failed is named (`Billing.unread`), and the price falls back to on demand and says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from costguard.core.records import Instance

# Normalized units per size, as AWS applies a regional size-flexible Reserved Instance across a family
# (EC2 User Guide, "How Reserved Instances are applied"). A size not listed (metal) matches its exact type only.
NORMALIZATION_FACTOR: Mapping[str, float] = {
    "nano": 0.25,
    "micro": 0.5,
    "small": 1,
    "medium": 2,
    "large": 4,
    "xlarge": 8,
    "2xlarge": 16,
    "3xlarge": 24,
    "4xlarge": 32,
    "6xlarge": 48,
    "8xlarge": 64,
    "9xlarge": 72,
    "10xlarge": 80,
    "12xlarge": 96,
    "16xlarge": 128,
    "18xlarge": 144,
    "24xlarge": 192,
    "32xlarge": 256,
    "48xlarge": 384,
    "56xlarge": 448,
    "112xlarge": 896,
}
# A Savings Plan used at or above this share of its commitment is taken as used up: the next hour of
# usage it could cover spills to the on-demand rate (utilization is read per day, not per hour).
PLAN_USED_UP_PERCENT = 99.0
LINUX = "Linux/UNIX"
# Families whose regional RIs apply to their exact size only (EC2 User Guide, "Reserved Instance size
# flexibility": G4ad, G4dn, G5, G5g and Inf1 are excluded).
NOT_SIZE_FLEXIBLE = frozenset({"g4ad", "g4dn", "g5", "g5g", "inf1"})
# What the reads name when they fail (aws/billing.py): the caveat a price carries.
UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS, UNREAD_PLAN_USE = (
    "Reserved Instances",
    "capacity reservations",
    "Savings Plans",
    "Savings Plans' use",
)


class Basis(Enum):
    """Why a machine's hour costs what it does."""

    ON_DEMAND = "on demand"
    SPOT = "Spot"
    CAPACITY_BLOCK = "Capacity Block"
    CAPACITY_RESERVATION = "capacity reservation"
    RESERVED = "Reserved Instances"
    SAVINGS_PLAN = "Savings Plan"


@dataclass(frozen=True)
class Reserved:
    """Reserved Instances of one purchase, as the bill applies them."""

    reservation_id: str
    instance_type: str
    count: int
    start: datetime
    end: datetime
    zone: str = ""  # a zonal RI's Availability Zone; "" for a regional one
    platform: str = LINUX  # ProductDescription, "(Amazon VPC)" dropped
    tenancy: str = "default"

    def in_force(self, now: datetime) -> bool:
        return self.start <= now < self.end and self.count > 0

    @property
    def size_flexible(self) -> bool:
        """Regional Linux/UNIX RIs of default tenancy apply across the sizes of their family."""
        return (
            not self.zone
            and self.platform == LINUX
            and self.tenancy == "default"
            and units(self.instance_type) is not None
            and family(self.instance_type) not in NOT_SIZE_FLEXIBLE
        )


@dataclass(frozen=True)
class Hold:
    """An On-Demand Capacity Reservation or a Capacity Block for ML: capacity paid whether used or not."""

    reservation_id: str
    instance_type: str
    zone: str
    total: int
    available: int
    end: datetime | None  # None: until cancelled
    block: bool  # a Capacity Block for ML (prepaid), else an On-Demand Capacity Reservation
    state: str = "active"
    start: datetime | None = None

    def active(self, now: datetime) -> bool:
        started = self.start is None or self.start <= now
        return self.state == "active" and started and (self.end is None or now < self.end)

    @property
    def label(self) -> str:
        kind = "Capacity Block" if self.block else "capacity reservation"
        return f"{kind} {self.reservation_id}"


@dataclass(frozen=True)
class Plan:
    """A Savings Plan in force, its hourly commitment, and how much of it it used lately."""

    plan_id: str
    kind: str  # "Compute" or "EC2Instance" (SageMaker plans never cover EC2)
    end: datetime
    family: str = ""  # an EC2 Instance Savings Plan's family
    region: str = ""  # ... and region
    used_percent: float | None = None  # recent utilization; None: not read
    start: datetime | None = None
    commitment_usd_per_hour: float | None = None  # DescribeSavingsPlans' commitment; None: not read
    rate: float | None = None  # what a covered hour costs, of on demand (used commitment / its on-demand worth)

    @property
    def hourly(self) -> bool:
        """Whether its commitment and rate are known: its room is then judged on what runs now."""
        return bool(self.commitment_usd_per_hour and self.commitment_usd_per_hour > 0 and self.rate and self.rate > 0)

    def in_force(self, now: datetime) -> bool:
        return (self.start is None or self.start <= now) and now < self.end

    def covers(self, instance: Instance, now: datetime) -> bool:
        if not self.in_force(now):
            return False
        if self.kind == "Compute":
            return True
        if self.kind == "EC2Instance":
            return family(instance.instance_type) == self.family and instance.region == self.region
        return False


@dataclass(frozen=True)
class Billing:
    """What the bill knows of one region this hour, read once per sweep: the RIs, holds and plans in force,
    the Spot prices, every running instance an RI could apply to, and which reads failed."""

    region: str
    running: Sequence[Instance] = ()
    reserved: Sequence[Reserved] = ()
    holds: Sequence[Hold] = ()
    plans: Sequence[Plan] = ()
    spot_prices: Mapping[tuple[str, str], float] = field(default_factory=dict)  # (type, zone) -> USD/h
    plan_spill_usd_per_hour: float | None = None  # eligible usage billed on demand lately; None: not read
    unread: Sequence[str] = ()  # "Reserved Instances", "capacity reservations", "Savings Plans", "Spot prices"


@dataclass(frozen=True)
class Marginal:
    """What the bill loses per hour without this machine now, and why."""

    usd_per_hour: float | None  # None: unknown (no price could be had)
    on_demand: float | None  # the list price, for comparison
    basis: Basis
    why: str  # "on demand: 5 p4d.24xlarge run, 3 Reserved Instances"
    hold: Hold | None = None  # the block or reservation it runs in
    until: datetime | None = None  # when a $0 ends (a block's or reservation's end)
    caveat: str = ""  # "Reserved Instances not read: the on-demand price"

    @property
    def saves(self) -> bool:
        """Whether a stop saves money on the bill. An unknown price is taken to save, as before the model."""
        return self.usd_per_hour is None or self.usd_per_hour > 0

    @property
    def prepaid(self) -> bool:
        """Capacity paid whether it runs or not: a block or a reservation."""
        return self.basis in (Basis.CAPACITY_BLOCK, Basis.CAPACITY_RESERVATION)

    def text(self) -> str:
        if self.usd_per_hour is None:
            return "price unknown"
        return f"${self.usd_per_hour:,.2f}/h"


def family(instance_type: str) -> str:
    return instance_type.partition(".")[0]


def units(instance_type: str) -> float | None:
    """An instance type's normalized units (p4d.24xlarge: 192); None for a size without a factor."""
    return NORMALIZATION_FACTOR.get(instance_type.partition(".")[2])


def _platform_of(instance: Instance) -> str:
    return instance.platform or LINUX  # DescribeInstances says "Linux/UNIX"; older records say nothing


@dataclass
class _Layer:
    """Savings Plans applied together this hour: all the Compute plans, or the EC2 Instance plans of one family
    and region (AWS applies these first, and what they leave to the Compute plans)."""

    commitment: float  # USD/h
    room: float  # the on-demand worth of usage the commitment pays for, USD/h
    spill: float = 0.0  # the eligible usage beyond it now, at the on-demand rate, USD/h: what stops can save

    def text(self) -> str:
        return f"the Savings Plan's ${self.commitment:,.2f}/h commitment"


COMPUTE = "Compute"


class PlanHours:
    """The Savings Plans of a region judged hour by hour on what runs now, where each plan's commitment and
    rate are known and every machine's on-demand price is given.

    A plan's eligible usage now is the on-demand price of every machine of the pool it covers (running, not
    Spot, not in a block or a paid reservation), less the share the RIs cover (attributed once, machine by
    machine: `ri_uncovered`), at the plan's rate; what exceeds its commitment is billed on demand (the spill),
    and a stop saves that spill while it lasts. EC2 Instance plans apply first, what they spill goes to the
    Compute plans (`_Layer`). Usage costguard does not see (other regions, non-GPU EC2, Fargate, Lambda on a
    Compute plan) is taken as none: conservative, a stop is never priced as saving while the GPU fleet alone
    leaves the plan room. A machine whose price is unknown is taken as using none of it."""

    def __init__(self, layers: dict[str, _Layer], list_price: Callable[[Instance], float | None]) -> None:
        self.layers = layers
        self._list_price = list_price

    @classmethod
    def build(
        cls,
        plans: Sequence[Plan],
        pool: Sequence[Instance],
        reserved: Sequence[Reserved],
        list_price: Callable[[Instance], float | None] | None,
        now: datetime,
    ) -> PlanHours | None:
        """The layers and their spill now; None where a plan covering the pool lacks its commitment or rate,
        or the machines' prices are not given: the plans are then judged on their recent use."""
        applied = [p for p in plans if p.in_force(now) and any(p.covers(i, now) for i in pool)]
        if list_price is None or not applied or not all(p.hourly for p in applied):
            return None
        layers: dict[str, _Layer] = {}
        for p in applied:
            layer = layers.setdefault(_layer_key(p), _Layer(0.0, 0.0))
            layer.commitment += p.commitment_usd_per_hour or 0.0
            layer.room += (p.commitment_usd_per_hour or 0.0) / (p.rate or 1.0)
        hours = cls(layers, list_price)
        use: dict[str, float] = defaultdict(float)
        uncovered = ri_uncovered(reserved, pool)
        for i in pool:
            use[hours._inner(i) or COMPUTE] += (list_price(i) or 0.0) * uncovered[i.instance_id]
        for key, layer in layers.items():
            if key != COMPUTE:
                layer.spill = max(0.0, use[key] - layer.room)
                use[COMPUTE] += layer.spill
        if COMPUTE in layers:
            layers[COMPUTE].spill = max(0.0, use[COMPUTE] - layers[COMPUTE].room)
        return hours

    def judges(self, plans: Sequence[Plan]) -> bool:
        """Whether every plan covering a machine is one of these layers (else it is judged on recent use)."""
        return all(_layer_key(p) in self.layers for p in plans)

    def price(self, instance: Instance, on_demand: float | None, share: float) -> tuple[float | None, str]:
        """Its share of the spill now: what its stop takes off the on-demand bill (the tightest layer's)."""
        tightest = min(self._chain(instance), key=lambda layer: layer.spill)
        if tightest.spill <= 0:
            return (0.0, f"covered: {tightest.text()} is not used up by what runs now")
        why = f"on demand: {tightest.text()} is used up by what runs now"
        if on_demand is None:
            return (None, why)
        return (round(min(on_demand * share, tightest.spill), 4), why)

    def spend(self, instance: Instance, share: float) -> None:
        """A stop takes its eligible usage (`share` of its price: what the RIs leave) off each layer in turn:
        the first layer's spill shrinks by it, and the next one's by what the first one spilled of it."""
        flow = (self._list_price(instance) or 0.0) * share
        for layer in self._chain(instance):
            taken = min(layer.spill, flow)
            layer.spill -= taken
            flow = taken

    def _inner(self, instance: Instance) -> str | None:
        """The EC2 Instance plans' layer that applies to this machine first, if any."""
        key = f"{family(instance.instance_type)}@{instance.region}"
        return key if key in self.layers else None

    def _chain(self, instance: Instance) -> list[_Layer]:
        """The layers this machine's usage goes through: its family's EC2 Instance plans, then the Compute ones."""
        return [self.layers[k] for k in (self._inner(instance), COMPUTE) if k is not None and k in self.layers]


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


def _layer_key(plan: Plan) -> str:
    return COMPUTE if plan.kind == COMPUTE else f"{plan.family}@{plan.region}"


# ------------------------------------------------------------------------------ Reserved Instances, as applied
def ri_share(instance: Instance, reserved: Sequence[Reserved], running: Sequence[Instance]) -> tuple[float, str]:
    """The share of `instance`'s hour that the RIs in force leave uncovered (0 to 1), and why, with `running`
    the machines they apply to: zonal RIs first (exact type, in their zone), then regional ones (in normalized
    units across a family where size-flexible, by exact type elsewhere). The bill's uncovered usage is what
    the machines need beyond what the RIs give; without this machine it shrinks by its size, at most. (A
    caller pricing many machines of one fleet keeps a `RiPool` instead: this one counts `running` again.)"""
    if not reserved:
        return 1.0, ""
    return RiPool(running, reserved).share(instance)


# (type, zone, platform, tenancy): the machines that count alike for the RIs
_Key = tuple[str, str, str, str]


class RiPool:
    """The running machines the RIs apply to, counted by what `share` asks of them (how many of a type run in
    a zone; what a family or a type needs of the regional RIs once the zonal ones took theirs), built once
    and shrunk by each stop: pricing a fleet in turn costs one pass, not one walk of the fleet per machine."""

    def __init__(self, running: Iterable[Instance], reserved: Sequence[Reserved]) -> None:
        self.reserved = reserved
        self._count: dict[_Key, int] = defaultdict(int)
        self._keys: dict[str, set[_Key]] = defaultdict(set)  # family -> the keys counted in it
        self._types: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))  # family -> type -> count
        self._zonal_left: dict[tuple[str, str], int] = defaultdict(int)  # (type, zone) -> zonal RIs
        self._zonal_exact: set[_Key] = set()  # the keys a zonal RI matches exactly
        for r in reserved:
            if r.zone:
                self._zonal_left[(r.instance_type, r.zone)] += r.count
                self._zonal_exact.add((r.instance_type, r.zone, r.platform, r.tenancy))
        for instance in running:
            self.add(instance)

    def add(self, instance: Instance) -> None:
        key = _key(instance)
        self._count[key] += 1
        self._keys[family(instance.instance_type)].add(key)
        self._types[family(instance.instance_type)][instance.instance_type] += 1

    def remove(self, instance: Instance) -> None:
        key = _key(instance)
        if self._count.get(key, 0) <= 0:
            return
        self._count[key] -= 1
        self._types[family(instance.instance_type)][instance.instance_type] -= 1

    def share(self, instance: Instance) -> tuple[float, str]:
        """`ri_share` of this machine, over the machines counted now."""
        reserved = self.reserved
        if not reserved:
            return 1.0, ""
        zonal = [r for r in reserved if r.zone and _matches(r, instance, exact=True)]
        if zonal:
            same = self._count.get(_key(instance), 0)
            count = sum(r.count for r in zonal)
            if same <= count:
                return 0.0, f"covered: {same} {instance.instance_type} run in {instance.zone}, " + _ris(count, "zonal ")
        pool = _pooled(instance, reserved)
        regional = [r for r in reserved if not r.zone and _matches(r, instance, exact=not pool)]
        if not regional:
            return 1.0, ""
        mine = (units(instance.instance_type) or 1.0) if pool else 1.0
        need = self._regional_need(instance, pool=pool)
        give = sum(r.count * ((units(r.instance_type) or 0) if pool else 1) for r in regional)
        over = max(0.0, need - give)
        what = family(instance.instance_type) if pool else instance.instance_type
        counts = f"{_count(need / mine)} {what} run, " + _ris(give / mine, "")
        if pool and sum(1 for n in self._types[what].values() if n > 0) > 1:
            counts += f" (in {instance.instance_type} sizes)"
        if over <= 0:
            return 0.0, f"covered: {counts}"
        return min(mine, over) / mine, f"on demand: {counts}"

    def _regional_need(self, instance: Instance, *, pool: bool) -> float:
        """What the running machines the regional RIs could cover need of them (units, or machines), once the
        zonal RIs took the machines they cover. Within what one machine asks about, a (type, zone) has one
        platform and tenancy: the zonal RIs of that slot go to its machines up to their count."""
        platform, tenancy = _platform_of(instance), instance.tenancy
        need = 0.0
        for key in self._keys.get(family(instance.instance_type), ()):
            kind, zone, its_platform, its_tenancy = key
            if pool:
                if its_platform != LINUX or its_tenancy != "default" or not units(kind):
                    continue
            elif (kind, its_platform, its_tenancy) != (instance.instance_type, platform, tenancy):
                continue
            n = self._count[key]
            if n <= 0:
                continue
            if key in self._zonal_exact:
                n -= min(n, self._zonal_left.get((kind, zone), 0))
            need += n * ((units(kind) or 0) if pool else 1)
        return need


def _key(instance: Instance) -> _Key:
    return (instance.instance_type, instance.zone, _platform_of(instance), instance.tenancy)


def ri_uncovered(reserved: Sequence[Reserved], running: Sequence[Instance]) -> dict[str, float]:
    """Each running machine's share the RIs leave uncovered (0 to 1), the RIs attributed once, machine by
    machine in the order given: zonal RIs to the machines of their type and zone, then regional ones (in
    normalized units across a family where size-flexible, by exact type elsewhere). The shares add up to the
    uncovered usage `ri_share` counts; which machine of a group gets the RI is an attribution, not the bill's."""
    out = {i.instance_id: 1.0 for i in running}
    if not reserved:
        return out
    zonal: dict[tuple[str, str, str, str], int] = defaultdict(int)
    regional: dict[tuple[str, ...], float] = defaultdict(float)
    for r in reserved:
        if r.zone:
            zonal[(r.instance_type, r.zone, r.platform, r.tenancy)] += r.count
        elif r.size_flexible:
            regional[("family", family(r.instance_type))] += r.count * (units(r.instance_type) or 0)
        else:
            regional[("type", r.instance_type, r.platform, r.tenancy)] += r.count
    for i in running:
        slot = (i.instance_type, i.zone, _platform_of(i), i.tenancy)
        if zonal.get(slot, 0) > 0:
            zonal[slot] -= 1
            out[i.instance_id] = 0.0
            continue
        if _pooled(i, reserved):
            key: tuple[str, ...] = ("family", family(i.instance_type))
            mine = units(i.instance_type) or 1.0
        else:
            key, mine = ("type", i.instance_type, _platform_of(i), i.tenancy), 1.0
        taken = min(mine, regional.get(key, 0.0))
        if taken > 0:
            regional[key] -= taken
            out[i.instance_id] = 1.0 - taken / mine
    return out


def _pooled(instance: Instance, reserved: Sequence[Reserved]) -> bool:
    """Whether size-flexible regional RIs of its family apply to this machine."""
    return (
        units(instance.instance_type) is not None
        and family(instance.instance_type) not in NOT_SIZE_FLEXIBLE
        and _platform_of(instance) == LINUX
        and instance.tenancy == "default"
        and any(r.size_flexible and family(r.instance_type) == family(instance.instance_type) for r in reserved)
    )


def _matches(ri: Reserved, instance: Instance, *, exact: bool) -> bool:
    if ri.platform != _platform_of(instance) or ri.tenancy != instance.tenancy:
        return False
    if ri.zone and ri.zone != instance.zone:
        return False
    if exact:
        return ri.instance_type == instance.instance_type
    return ri.size_flexible and family(ri.instance_type) == family(instance.instance_type)


def _same_type(other: Instance, instance: Instance) -> bool:
    return (
        other.instance_type == instance.instance_type
        and _platform_of(other) == _platform_of(instance)
        and other.tenancy == instance.tenancy
    )


def _count(value: float) -> str:
    return f"{value:,.0f}" if abs(value - round(value)) < 0.05 else f"{value:,.1f}"


def _ris(count: float, kind: str) -> str:
    return f"{_count(count)} {kind}Reserved Instance{'' if abs(count - 1) < 0.05 else 's'}"
