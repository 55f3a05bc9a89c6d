"""What the week's team bought and where its machines run, for the commitments world (`World(seed,
commitments=True)` in testing/worlds/week.py): the bill's commitments as testing/bill.py applies them, and as
EC2, Savings Plans and CloudTrail tell them (boto3's shapes, for the stand-ins of testing/aws).

- Availability Zones: each machine in us-east-1a, 1b or 1c.
- Reserved Instances bought a year ago: two regional p3.8xlarge (size-flexible: 128 normalized units, for
  the team's four p3 machines that need 272), two regional g5.2xlarge (g5 is not size-flexible: the exact
  type only, eight of them run) and one zonal g5.12xlarge in us-east-1b. Each RI's fee is paid every hour.
- A Compute Savings Plan, sized when nobody stopped anything: 30 % of the always-on fleet's on-demand spend
  (what is left after the RIs), at its rate of 72 % of on demand.
- A Capacity Block for ML of two p5.48xlarge (its two machines, launched into it) that ends on Wednesday at
  11:30 UTC: EC2 terminates their instances 30 minutes before.
- A targeted On-Demand Capacity Reservation for one p4d.24xlarge in us-east-1a (the forgotten p4d runs in
  it), until Thursday 18:00 UTC: billed at on demand whether used or not, then the machine runs on demand.
- p4d.24xlarge capacity is short in us-east-1a: windows of InsufficientInstanceCapacity, most of them
  starting when people arrive in Paris or New York, some at any hour, over the history and the week; other
  accounts' users fail to launch or start p4d there in those windows (CloudTrail's records).
- Boot waits: minutes a person waits after starting a machine, by family.
- Some owners start their machines again at times the harness would not guess (an evening, an hour after
  the stop), not only when work comes due.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from testing.bill import Commitments, Held, Reserved, SavingsPlan

REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
SCARCE = ("p4d.24xlarge", "us-east-1a")
BOOT_MINUTES = {"p5": 10, "p4d": 8, "p3": 5, "g5": 3}
# The prices the bill is judged on (us-east-1 Linux on demand), the Capacity Block's fee an instance-hour.
ON_DEMAND = {
    "g5.xlarge": 1.006,
    "g5.2xlarge": 1.212,
    "g5.12xlarge": 5.672,
    "g5.48xlarge": 16.288,
    "p3.2xlarge": 3.06,
    "p3.8xlarge": 12.24,
    "p3.16xlarge": 24.48,
    "p4d.24xlarge": 21.96,
    "p5.48xlarge": 55.04,
}
BLOCK_FEE = 31.464
RI_RATE = 0.62  # an RI's hourly fee, of on demand
PLAN_DISCOUNT = 0.28
PLAN_SHARE = 0.30
# The team's own p3 machines and the Capacity Block's two p5, after the 55 of the week world.
EXTRA = [
    ("trainer", "p3.8xlarge"),
    ("notebook", "p3.2xlarge"),
    ("forgotten", "p3.16xlarge"),
    ("single_gpu", "p3.8xlarge"),
    ("trainer", "p5.48xlarge"),
    ("preprocess", "p5.48xlarge"),
]
BLOCK_MACHINES = 2  # the last two of EXTRA
ODCR_ID, BLOCK_ID, PLAN_ID = "cr-0a1b2c3d4e5f60001", "cr-0b10c4b10c4b10c42", "sp-0c0mpute0000001"


@dataclass
class Ice:
    start: datetime
    end: datetime


@dataclass
class Bought:
    """The commitments world's facts, beside its machines."""

    zone: dict[str, str]  # instance id -> Availability Zone
    commitments: Commitments
    reservation: dict[str, str]  # instance id -> the capacity reservation or block it runs in
    block_machines: list[str]
    gone: dict[str, datetime]  # instance id -> when EC2 terminated it (its block's end, less 30 minutes)
    ice: list[Ice]
    trail: list[dict[str, Any]] = field(default_factory=list)  # CloudTrail records (the harness adds its own)
    restless: set[str] = field(default_factory=set)  # owners who start machines again when they like

    def short(self, instance_type: str, zone: str, at: datetime) -> bool:
        """EC2 has no capacity for this type in this zone at `at`."""
        return (instance_type, zone) == SCARCE and any(w.start <= at < w.end for w in self.ice)

    def boot_minutes(self, instance_type: str) -> int:
        return BOOT_MINUTES.get(instance_type.partition(".")[0], 3)

    # ------------------------------------------------------------------ as the APIs tell them
    def reserved_instances(self) -> list[dict[str, Any]]:
        out = []
        for n, ri in enumerate(self.commitments.reserved):
            row: dict[str, Any] = {
                "ReservedInstancesId": f"ri-{n:08x}-0000-0000-0000-000000000000",
                "InstanceType": ri.instance_type,
                "InstanceCount": ri.count,
                "Start": ri.start,
                "End": ri.end,
                "Duration": int((ri.end - ri.start).total_seconds()),
                "ProductDescription": "Linux/UNIX",
                "InstanceTenancy": "default",
                "State": "active",
                "OfferingClass": "standard",
                "OfferingType": "No Upfront",
                "FixedPrice": 0.0,
                "UsagePrice": 0.0,
                "CurrencyCode": "USD",
                "RecurringCharges": [{"Amount": round(ri.fee, 4), "Frequency": "Hourly"}],
                "Scope": "Availability Zone" if ri.zone else "Region",
            }
            if ri.zone:
                row["AvailabilityZone"] = ri.zone
            out.append(row)
        return out

    def capacity_reservations(self, now: datetime, used: dict[str, int]) -> list[dict[str, Any]]:
        """`used`: running instances in each reservation now."""
        out = []
        for h in self.commitments.held:
            state = "active" if h.start <= now < h.end else "expired" if now >= h.end else "scheduled"
            out.append(
                {
                    "CapacityReservationId": h.reservation_id,
                    "OwnerId": "123456789012",
                    "InstanceType": h.instance_type,
                    "InstancePlatform": "Linux/UNIX",
                    "AvailabilityZone": h.zone,
                    "Tenancy": "default",
                    "TotalInstanceCount": h.count,
                    "AvailableInstanceCount": max(0, h.count - used.get(h.reservation_id, 0)),
                    "State": state,
                    "StartDate": h.start,
                    "EndDate": h.end,
                    "EndDateType": "limited",
                    "InstanceMatchCriteria": "targeted",
                    "ReservationType": "capacity-block" if h.block else "default",
                    "CreateDate": h.start,
                }
            )
        return out

    def savings_plans(self) -> list[dict[str, Any]]:
        return [
            {
                "savingsPlanId": PLAN_ID,
                "savingsPlanArn": f"arn:aws:savingsplans::123456789012:savingsplan/{PLAN_ID}",
                "savingsPlanType": "Compute",
                "state": "active",
                "start": f"{p.start:%Y-%m-%dT%H:%M:%S.000Z}",
                "end": f"{p.end:%Y-%m-%dT%H:%M:%S.000Z}",
                "commitment": f"{p.commitment:.3f}",
                "currency": "USD",
                "paymentOption": "No Upfront",
                "productTypes": ["EC2", "Fargate", "Lambda"],
                "termDurationInSeconds": 31536000,
                "upfrontPaymentAmount": "0.0",
                "recurringPaymentAmount": f"{p.commitment:.3f}",
            }
            for p in self.commitments.plans
        ]


def failed_start_record(at: datetime, user: str, *, instance_id: str = "", instance_type: str = "") -> dict[str, Any]:
    """A CloudTrail record of a StartInstances (`instance_id`) or RunInstances (`instance_type`, in the scarce
    zone) that EC2 refused for capacity."""
    name = "StartInstances" if instance_id else "RunInstances"
    if instance_id:
        params: dict[str, Any] = {"instancesSet": {"items": [{"instanceId": instance_id}]}}
    else:
        params = {
            "instanceType": instance_type,
            "placement": {"availabilityZone": SCARCE[1]},
            "instancesSet": {"items": [{"imageId": "ami-0abcdef1234567890", "minCount": 1, "maxCount": 1}]},
        }
    return {
        "eventVersion": "1.09",
        "eventID": f"ice-{zlib.crc32(f'{name}{at.isoformat()}{user}{instance_id}'.encode()):08x}",
        "eventName": name,
        "eventSource": "ec2.amazonaws.com",
        "eventTime": f"{at:%Y-%m-%dT%H:%M:%SZ}",
        "awsRegion": REGION,
        "errorCode": "Server.InsufficientInstanceCapacity",
        "errorMessage": f"We currently do not have sufficient {SCARCE[0]} capacity in the Availability Zone you "
        f"requested ({SCARCE[1]}).",
        "userIdentity": {"type": "IAMUser", "userName": user, "arn": f"arn:aws:iam::210987654321:user/{user}"},
        "requestParameters": params,
        "readOnly": False,
    }


def buy(seed: int, begin: datetime, start: datetime, end: datetime, machines: list[Any]) -> Bought:
    """The commitments of the world whose `machines` (testing/worlds/week.py's) run from `begin`; the week
    from `start` to `end`. Its own random numbers: the machines' weeks are not changed by it."""
    rng = random.Random(seed * 1009 + 17)
    zone: dict[str, str] = {}
    p4d = 0
    for k, m in enumerate(machines):
        if m.instance_type == "p4d.24xlarge":
            zone[m.instance_id] = ZONES[p4d % 2]  # half of them in the short zone
            p4d += 1
        else:
            zone[m.instance_id] = ZONES[k % 3]
    year_ago, in_a_year = begin - timedelta(days=300), start + timedelta(days=200)
    block_machines = [m.instance_id for m in machines[-BLOCK_MACHINES:]]
    for iid in block_machines:
        zone[iid] = "us-east-1a"
    block_end = start + timedelta(days=2, hours=11, minutes=30)
    odcr_machine = next(
        m.instance_id
        for m in machines
        if m.persona == "forgotten" and m.instance_type == "p4d.24xlarge" and zone[m.instance_id] == SCARCE[1]
    )
    block_start, odcr_end = begin - timedelta(days=1), start + timedelta(days=3, hours=18)
    held = [
        Held(BLOCK_ID, "p5.48xlarge", "us-east-1a", BLOCK_MACHINES, BLOCK_FEE, block_start, block_end, True),
        Held(ODCR_ID, "p4d.24xlarge", SCARCE[1], 1, ON_DEMAND["p4d.24xlarge"], year_ago, odcr_end, False),
    ]
    reserved = [
        Reserved("p3.8xlarge", 2, RI_RATE * ON_DEMAND["p3.8xlarge"], year_ago, in_a_year, size_flexible=True),
        Reserved("g5.2xlarge", 2, RI_RATE * ON_DEMAND["g5.2xlarge"], year_ago, in_a_year),
        Reserved("g5.12xlarge", 1, RI_RATE * ON_DEMAND["g5.12xlarge"], year_ago, in_a_year, zone="us-east-1b"),
    ]
    reservation = dict.fromkeys(block_machines, BLOCK_ID) | {odcr_machine: ODCR_ID}
    # The plan: 30 % of what the fleet, always on, paid on demand once the RIs took their part.
    from testing.bill import Machine, bill  # noqa: PLC0415 (one module's helpers, read once)

    everyone = [
        Machine(m.instance_id, m.instance_type, zone[m.instance_id], ON_DEMAND[m.instance_type])
        for m in machines
        if m.instance_id not in reservation
    ]
    left = bill(everyone, Commitments(reserved=reserved), start).on_demand
    plan = SavingsPlan(round(PLAN_SHARE * left * (1 - PLAN_DISCOUNT), 1), PLAN_DISCOUNT, year_ago, in_a_year)
    ice = _windows(rng, begin, end)
    trail = []
    for w in ice:  # other accounts' users, failing in the window
        for _ in range(rng.randint(1, 4)):
            at = w.start + (w.end - w.start) * rng.random()
            user = rng.choice(("mlops-ci", "researcher-a", "researcher-b", "batch-runner"))
            if rng.random() < 0.5:
                trail.append(failed_start_record(at, user, instance_type=SCARCE[0]))
            else:
                trail.append(failed_start_record(at, user, instance_id=f"i-0e{rng.randrange(16**15):015x}"))
    owners = sorted({m.owner for m in machines})
    restless = set(rng.sample(owners, max(1, len(owners) // 4)))
    return Bought(
        zone=zone,
        commitments=Commitments(reserved=reserved, held=held, plans=[plan]),
        reservation=reservation,
        block_machines=block_machines,
        gone={iid: block_end - timedelta(minutes=30) for iid in block_machines},
        ice=ice,
        trail=trail,
        restless=restless,
    )


def _windows(rng: random.Random, begin: datetime, end: datetime) -> list[Ice]:
    """Capacity short in the scarce zone: on weekdays, often right when Paris (08:00-09:30 UTC) or New York
    (13:00-14:30 UTC) arrives, for 1 to 4 hours; now and then at any hour, for 1 to 6."""
    out: list[Ice] = []
    day = begin.replace(hour=0, minute=0, second=0, microsecond=0)
    while day < end:
        if day.weekday() < 5:
            for arrival in (8.0, 13.0):
                if rng.random() < 0.45:
                    at = day + timedelta(hours=arrival + rng.uniform(0, 1.5))
                    out.append(Ice(at, at + timedelta(hours=rng.uniform(1, 4))))
        if rng.random() < 0.25:
            at = day + timedelta(hours=rng.uniform(0, 24))
            out.append(Ice(at, at + timedelta(hours=rng.uniform(1, 6))))
        day += timedelta(days=1)
    return sorted(out, key=lambda w: w.start)


def restart_when(bought: Bought, owner: str, instance_id: str, stopped: int, due: int, per_hour: int) -> int:
    """When a restless owner starts a machine again (a slot): an hour or so after the stop (they saw the notice
    and want it back), or some evening hour, before the work comes due; else when it comes due."""
    if owner not in bought.restless or due <= stopped + 1:
        return due
    rng = random.Random(zlib.crc32(f"{instance_id}/{stopped}".encode()))
    if rng.random() < 0.5:
        return due
    return min(due, stopped + rng.randint(per_hour // 2, 6 * per_hour))


def utc(value: datetime) -> datetime:
    return value.astimezone(UTC)
