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

from collections.abc import Mapping, Sequence
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


def platform_of(instance: Instance) -> str:
    return instance.platform or LINUX  # DescribeInstances says "Linux/UNIX"; older records say nothing
