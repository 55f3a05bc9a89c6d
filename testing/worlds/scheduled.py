"""The accounts the other scheduled digests read, at their scale. Deterministic, like testing/worlds/digest.py.

- QuarterWorld: a payer (management) account's quarter of EC2 compute in Cost Explorer: 300 linked
  accounts, 16 regions, 120 instance types (20 accelerated, each run in 5 regions), 1,500 owners and
  60 teams by tag, three months each; Cost Anomaly Detection on, with 60 findings; 13 weekly records;
  three governed regions.
- OrganizationWorld: a hub whose figures queue holds this week's hand-off of each of 100 member
  accounts, and two it must refuse (one not JSON, one from an account it does not expect).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property

HUB = "123456789012"
REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "eu-west-1", "eu-west-2", "eu-west-3",
    "eu-central-1", "eu-north-1", "ap-south-1", "ap-northeast-1", "ap-northeast-2", "ap-southeast-1",
    "ap-southeast-2", "sa-east-1",
)  # fmt: skip
ACCELERATED = (
    "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.12xlarge", "g5.48xlarge", "g6.xlarge", "g6.12xlarge",
    "g6e.xlarge", "g6e.12xlarge", "g4dn.xlarge", "g4dn.12xlarge", "p3.2xlarge", "p3.8xlarge", "p4d.24xlarge",
    "p4de.24xlarge", "p5.48xlarge", "inf2.xlarge", "inf2.48xlarge", "trn1.2xlarge", "trn1.32xlarge",
)  # fmt: skip
OTHER_FAMILIES = ("m5", "m6i", "m7i", "c5", "c6i", "c7i", "r5", "r6i", "r7i", "t3")
SIZES = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "metal", "medium")


def _amount(*keys: str) -> float:
    """A deterministic monthly amount for a line, from its keys."""
    digest = sum((k + 1) * ord(c) for k, c in enumerate("|".join(keys)))
    return float(50 + digest % 4_950) + (digest % 100) / 100


@dataclass
class QuarterWorld:
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 2, 9, 5, tzinfo=UTC))  # first Monday of Nov
    accounts: int = 300
    owners: int = 1_500
    teams: int = 60
    governed: tuple[str, ...] = ("us-east-1", "us-west-2", "eu-west-1")
    anomalies: int = 60

    @cached_property
    def months(self) -> tuple[date, ...]:
        return (date(2026, 8, 1), date(2026, 9, 1), date(2026, 10, 1))

    @cached_property
    def types(self) -> tuple[str, ...]:
        others = tuple(f"{f}.{s}" for f in OTHER_FAMILIES for s in SIZES)
        return ACCELERATED + others

    def type_regions(self, instance_type: str) -> tuple[str, ...]:
        """The five regions a type ran in: the first governed one, then four more, spread by type."""
        k = self.types.index(instance_type)
        rest = [r for r in REGIONS if r != self.governed[k % len(self.governed)]]
        return (self.governed[k % len(self.governed)], *(rest[(k * 3 + j * 5) % len(rest)] for j in range(4)))

    def rows(self, keys: tuple[str, ...]) -> list[tuple[tuple[str, ...], tuple[float, float, float]]]:
        """Cost Explorer's groups for GroupBy keys ("LINKED_ACCOUNT", "REGION", "INSTANCE_TYPE", "TAG:Owner",
        "TAG:Team", or INSTANCE_TYPE and REGION), each with its three months."""
        names: list[tuple[str, ...]]
        if keys == ("INSTANCE_TYPE", "REGION"):
            names = [(t, r) for t in self.types for r in self.type_regions(t)]
        elif keys == ("LINKED_ACCOUNT",):
            names = [(f"{100000000000 + k:012d}",) for k in range(self.accounts)]
        elif keys == ("REGION",):
            names = [(r,) for r in REGIONS]
        elif keys == ("INSTANCE_TYPE",):
            names = [(t,) for t in self.types]
        elif keys == ("TAG:Owner",):
            names = [(f"Owner${f'user{k}@example.com' if k else ''}",) for k in range(self.owners + 1)]
        elif keys == ("TAG:Team",):
            names = [(f"Team${f'team{k:02d}' if k else ''}",) for k in range(self.teams + 1)]
        else:
            raise ValueError(f"no such grouping in the quarter's world: {keys}")
        out = []
        for name in names:
            base = _amount(*name)
            # one line in seven more than doubles in the last month: the jumps and the fastest growing
            jump = 2.5 if sum(map(len, name)) % 7 == 0 else 1.0
            out.append((name, (base, base * 1.1, base * 1.2 * jump)))
        return out

    def price(self, instance_type: str, region: str) -> float:
        k = self.types.index(instance_type)
        return round(1.0 + k * 1.37 + REGIONS.index(region) * 0.07, 4)

    def week_bodies(self) -> list[tuple[str, str]]:
        """The weekly records of the quarter (sort key, body), as the weekly digest keeps them."""
        out = []
        first = datetime(2026, 8, 3, tzinfo=UTC)
        for w in range(13):
            start = first + timedelta(days=7 * w)
            body = {
                "v": 1, "kind": "costguard.week", "account": HUB, "label": "payer", "start": start.isoformat(),
                "end": (start + timedelta(days=7)).isoformat(), "regions": list(self.governed), "machines": 900,
                "gpu_hours": 120000.0 + w, "idle_gpu_hours": 30000.0 + w, "waste_usd": 61000.0 + w,
                "avg_gpu_util": 41.5, "warned": 80, "stopped": 30 + w, "kept": 5, "saved_hours": 900.0,
                "saved_usd": 8000.0 + w, "spend_usd": 90000.0, "days": [], "top_owners": [], "gaps": [],
            }  # fmt: skip
            out.append((start.date().isoformat(), json.dumps(body, separators=(",", ":"))))
        return out


@dataclass
class OrganizationWorld:
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 23, 11, 0, tzinfo=UTC))
    members: int = 100

    @cached_property
    def accounts(self) -> list[str]:
        return [f"{200000000000 + k:012d}" for k in range(self.members)]

    def hand_offs(self) -> list[str]:
        """The figures queue, in order: each member's week, and two letters the hub must refuse."""
        start = (self.now - timedelta(days=7)).replace(hour=0, minute=0)
        letters = []
        for k, account in enumerate(self.accounts):
            days = [[(start + timedelta(days=d)).date().isoformat(), 100.0 + d + k, 40.0 + k % 9] for d in range(8)]
            owners = [[f"owner{k}-{j}@example.com", 30.0 - j, 90.0 - j * 7] for j in range(5)]
            body = {
                "v": 1, "kind": "costguard.week", "account": account, "label": f"team-{k}",
                "start": start.isoformat(), "end": (self.now - timedelta(hours=2)).isoformat(),
                "regions": ["us-east-1", "eu-west-1"], "machines": 40 + k, "gpu_hours": 3000.0 + k * 11,
                "idle_gpu_hours": 800.0 + k * 3, "waste_usd": 2400.0 + k * 9.5, "avg_gpu_util": 33.0 + k % 20,
                "warned": 12, "stopped": 4 + k % 5, "kept": 1, "saved_hours": 60.0, "saved_usd": 180.0 + k,
                "spend_usd": 9000.0 + k, "days": days, "top_owners": owners, "gaps": [],
            }  # fmt: skip
            letters.append(json.dumps(body, separators=(",", ":")))
            if k == 33:
                letters.append("{not json")
            if k == 66:
                letters.append(letters[-1].replace(account, "999999999999"))
        return letters

    def refused(self, letter: str) -> bool:
        return letter.startswith("{not") or "999999999999" in letter
