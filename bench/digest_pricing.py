"""The weekly digest's pricing of a region's idle machines on the bill (digest/weekly/rules/bill.idle_prices
over core/money.py), at 2,500, 5,000, 10,000 and 20,000 machines: a fleet of p4d, p5, g5 and g6 machines in
three zones, with regional and zonal Reserved Instances, a Compute and an EC2 Instance Savings Plan (their
commitment and rate known: judged on what runs now), a capacity reservation, a Capacity Block and Spot
machines; 40 % of the machines idle this week, 30 % last week. Reported: the best of 3 runs' CPU seconds at
each size, and the ratio of each size to the one half its size (linear: about 2).

`python -m bench.digest_pricing [N ...]`; `make bench` runs it into bench/results/digest_pricing.json.
"""

from __future__ import annotations

import itertools
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from costguard.core.money import Billing, Hold, Plan, Reserved
from costguard.core.records import Instance
from costguard.digest.weekly.rules.bill import idle_prices

SIZES = (2_500, 5_000, 10_000, 20_000)
NOW = datetime(2026, 11, 23, 9, tzinfo=UTC)
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
TYPES = {"p4d.24xlarge": 21.96, "p5.48xlarge": 55.04, "g5.xlarge": 1.006, "g5.12xlarge": 5.672, "g6.2xlarge": 0.978}
RUNS = 3


def fleet(
    n: int, seed: int = 43
) -> tuple[Billing, list[tuple[Instance, float | None]], dict[str, float], dict[str, float]]:
    """A region of `n` machines and its bill (commitments scaled with the fleet), and the idle hours of this
    week and last by machine."""
    rng = random.Random(seed)
    machines: list[Instance] = []
    for k in range(n):
        kind = rng.choice(list(TYPES))
        draw = rng.random()
        lifecycle = "spot" if draw < 0.05 else "capacity-block" if draw < 0.07 else ""
        held = "cr-held" if 0.07 <= draw < 0.09 else "cr-block" if lifecycle == "capacity-block" else ""
        machines.append(
            Instance(
                f"i-{k:08x}",
                REGION,
                kind,
                "running",
                NOW - timedelta(days=9),
                lifecycle=lifecycle,
                zone=rng.choice(ZONES),
                capacity_reservation_id=held,
            )
        )
    scale = n / 1_000
    end = NOW + timedelta(days=300)
    start = NOW - timedelta(days=65)
    reserved = [
        Reserved("ri-p4d", "p4d.24xlarge", int(60 * scale), start, end),
        Reserved("ri-g6", "g6.xlarge", int(200 * scale), start, end),
        Reserved("ri-g5z", "g5.xlarge", int(30 * scale), start, end, zone="us-east-1a"),
        Reserved("ri-g5", "g5.12xlarge", int(40 * scale), start, end),
    ]
    holds = [
        Hold("cr-held", "p5.48xlarge", "us-east-1a", int(25 * scale), 0, None, block=False),
        Hold("cr-block", "p5.48xlarge", "us-east-1b", int(25 * scale), 0, end, block=True),
    ]
    plans = [
        Plan("sp-compute", "Compute", end, commitment_usd_per_hour=900 * scale, rate=0.7, start=start),
        Plan(
            "sp-p5",
            "EC2Instance",
            end,
            family="p5",
            region=REGION,
            commitment_usd_per_hour=1_500 * scale,
            rate=0.6,
            start=start,
        ),
    ]
    spot = {(t, z): round(price * 0.4, 4) for t, price in TYPES.items() for z in ZONES}
    billing = Billing(REGION, tuple(machines), tuple(reserved), tuple(holds), tuple(plans), spot)
    idle = {m.instance_id: float(rng.randint(1, 150)) for m in machines if rng.random() < 0.4}
    before = {m.instance_id: float(rng.randint(1, 150)) for m in machines if rng.random() < 0.3}
    return billing, [(m, TYPES[m.instance_type]) for m in machines], idle, before


def priced(n: int) -> tuple[float, int]:
    """The best of RUNS runs' CPU seconds pricing `n` machines, and how many were priced."""
    billing, machines, idle, before = fleet(n)
    best, count = float("inf"), 0
    for _ in range(RUNS):
        started = time.process_time()
        count = len(idle_prices(billing, machines, idle, before, NOW))
        best = min(best, time.process_time() - started)
    return best, count


def main(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    curve: list[dict[str, Any]] = []
    for n in sizes:
        seconds, count = priced(n)
        curve.append({"machines": n, "priced": count, "cpu_s": round(seconds, 3)})
    for smaller, larger in itertools.pairwise(curve):
        larger["over_half_size"] = round(larger["cpu_s"] / smaller["cpu_s"], 2) if smaller["cpu_s"] else None
    for row in curve:
        ratio = f", {row['over_half_size']}x the half size" if "over_half_size" in row else ""
        print(f"  idle machines priced on the bill: {row['machines']:,} machines ({row['priced']:,} priced) "
              f"in {row['cpu_s']} s of CPU{ratio}")  # fmt: skip
    return {"pricing": curve, "target": "20,000 machines <= 2.2x 10,000"}


if __name__ == "__main__":
    main(tuple(int(a) for a in sys.argv[1:]) or SIZES)
