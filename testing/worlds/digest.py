"""The weekly digest's account: N GPU machines and a fortnight of their hourly metrics, 200 owners, 20
teams, the ledger's week, and what Cost Explorer, SSM and Slack know. Deterministic: machine k is the
same machine in every run, so a capture from one code tree can be compared with another's.

Each machine does one kind of thing, hour by hour (UTC), over the fortnight the digest reads:

- trainer: 14-hour runs from 06:00 on three days in four, idle in between (no Spot advice: a run of 14 hours
  is more than an interruption may cost, docs/rules.md)
- office: works 09:00-18:00 on weekdays, idle nights and weekends (working-hours advice)
- idle: nobody has used it for weeks (the waste)
- one_gpu: a multi-GPU machine whose first GPU works 08:00-20:00 and the others never (fewer GPUs)
- low_util: works around the clock with its GPUs at about 10 % (a cheaper GPU)
- silent: no CloudWatch agent at all, so no GPU telemetry nor busiest core (the hygiene section; idle on
  CPU alone, under the threshold one busy core cannot hide under: 50 % / vCPUs)
- gappy: an office machine whose GPU agent misses one hour in seven (missing data is never idleness)
- stopped: idle, then stopped by costguard three days ago (the ledger's stops, what they saved)
- fresh: launched two days ago, busy since

Every machine with the agent also publishes its busiest core (`cpu_usage_active` rolled up by
InstanceId, docs/cloudwatch-agent.json): at full load while it works, and one hour in seventeen of its
idle time (a single-threaded job under a low CPU average: work, by the stopper's rule and the digest's).

Tags, Spot, zones, SSM agents and Slack accounts are spread over the fleet by index: ~3 % without an
owner, 2 % with working hours, ~1 % exempt, ~1 % kept, 3 % Auto Scaling members, 10 % Spot, 10 %
without an SSM agent, 5 % of owners unknown to Slack.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cached_property
from typing import Any

HOUR = 3600
# (type, GPUs, share of the fleet); about 2.45 GPUs an instance: about six series each.
TYPES = (
    ("g5.xlarge", 1, 0.35),
    ("g6.xlarge", 1, 0.15),
    ("g5.12xlarge", 4, 0.25),
    ("p4d.24xlarge", 8, 0.10),
    ("g5.2xlarge", 1, 0.10),
    ("g4dn.xlarge", 1, 0.05),
)
KINDS = (
    ("trainer", 0.25),
    ("office", 0.20),
    ("idle", 0.12),
    ("one_gpu", 0.10),
    ("low_util", 0.10),
    ("silent", 0.05),
    ("gappy", 0.05),
    ("stopped", 0.08),
    ("fresh", 0.05),
)
GPU_NAMES = {"g5": "NVIDIA A10G", "g6": "NVIDIA L4", "p4d": "NVIDIA A100-SXM4-40GB", "g4dn": "Tesla T4"}
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d")
REGION = "us-east-1"
ACCOUNT = "123456789012"
GPU_METRIC = "nvidia_smi_utilization_gpu"
CORE_METRIC = "cpu_usage_active"  # the agent's per-core CPU, rolled up by InstanceId: the busiest core
# Bundled on-demand prices (costguard's table): the Pricing API stand-in answers nothing, as when unreachable.
SPOT_SHARE_OF_ON_DEMAND = 0.35


def _pick(k: int, n: int, table: tuple[tuple[str, float], ...]) -> str:
    """Deterministic spread: the k-th machine's choice by where k falls in the cumulative shares."""
    position = (k * 7919) % n / n if n else 0.0
    total = 0.0
    for name, share in table:
        total += share
        if position < total:
            return name
    return table[-1][0]


@dataclass(frozen=True)
class Machine:
    index: int
    instance_id: str
    instance_type: str
    gpus: int
    kind: str
    owner: str  # "" for none
    team: str
    zone: str
    spot: bool
    managed: bool  # its SSM agent answers
    tags: dict[str, str]
    first_slot: int  # the first hour it published (its launch)
    last_slot: int  # the hour after its last (its stop), or the world's slots

    @property
    def state(self) -> str:
        return "stopped" if self.kind == "stopped" else "running"

    @property
    def telemetry(self) -> bool:
        return self.kind != "silent"


@dataclass
class DigestWorld:
    n: int
    now: datetime = field(default_factory=lambda: datetime(2026, 11, 23, 9, 17, tzinfo=UTC))  # a Monday morning
    owners: int = 200
    teams: int = 20

    def __post_init__(self) -> None:
        self.start = (self.now - timedelta(days=7)).replace(hour=0, minute=0, second=0, microsecond=0)
        self.origin = self.start - timedelta(days=7)  # the digest reads a fortnight: this week and last
        self.origin_epoch = int(self.origin.timestamp())
        # Hour slots from the origin to the hour that holds `now`, as the digest's GetMetricData asks for.
        self.slots = int((self.now - self.origin).total_seconds() // HOUR) + 1
        self.stopped_at = (self.now - timedelta(days=3)).replace(minute=12, second=0, microsecond=0)
        self.machines = [self._machine(k) for k in range(self.n)]
        self.by_id = {m.instance_id: m for m in self.machines}

    # ------------------------------------------------------------------ the machines
    def _machine(self, k: int) -> Machine:
        n = self.n
        instance_type = _pick((k * 31 + 7) % n, n, tuple((t, s) for t, _, s in TYPES))
        gpus = next(g for t, g, _ in TYPES if t == instance_type)
        kind = _pick(k, n, KINDS)
        if kind == "one_gpu" and gpus == 1:
            kind = "office"
        owner = "" if k % 37 == 5 else f"user{k % self.owners}@example.com"
        team = f"team{k % self.teams:02d}"
        tags = {"Name": f"ml-{k}", "Team": team}
        if owner:
            tags["Owner"] = owner
        if k % 50 == 1:
            tags["costguard:schedule"] = "weekdays 09:00-18:00 UTC"
        if k % 97 == 2:
            tags["costguard:exempt"] = "benchmark fixture"
        if k % 89 == 3:
            tags["costguard:keep-until"] = (self.now + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
            tags["costguard:kept-by"] = owner or "someone"
        if k % 33 == 4:
            tags["aws:autoscaling:groupName"] = f"asg-{k % 5}"
        first = 0
        if kind == "fresh":
            first = self._slot(self.now - timedelta(days=2))
        last = self._slot(self.stopped_at) if kind == "stopped" else self.slots
        return Machine(
            k,
            f"i-{k:017x}",
            instance_type,
            gpus,
            kind,
            owner,
            team,
            ZONES[k % len(ZONES)],
            k % 10 == 3,
            k % 10 != 7,
            tags,
            first,
            last,
        )

    def _slot(self, moment: datetime) -> int:
        return int((moment - self.origin).total_seconds() // HOUR)

    def launch_time(self, machine: Machine) -> datetime:
        if machine.kind == "fresh":
            return self.origin + timedelta(hours=machine.first_slot, minutes=5)
        return self.origin - timedelta(days=30)

    # ------------------------------------------------------------------ the metrics
    def hours(self, machine: Machine) -> range:
        return range(machine.first_slot, min(machine.last_slot, self.slots))

    def working(self, machine: Machine, slot: int) -> bool:
        """Whether the machine works in this hour (its GPUs busy)."""
        at = self.origin + timedelta(hours=slot)
        day, hour = (at - self.origin).days, at.hour
        kind = machine.kind
        if kind == "trainer":
            return (day + machine.index) % 4 != 3 and 6 <= hour < 20
        if kind in ("office", "gappy"):
            return at.weekday() < 5 and 9 <= hour < 18
        if kind == "one_gpu":
            return 8 <= hour < 20
        return kind in ("low_util", "fresh")

    def cpu(self, machine: Machine, slot: int) -> float:
        if machine.kind == "silent":
            return 3.0 + (slot + machine.index) % 4 * 0.5
        if machine.kind == "low_util":
            return 22.0
        if self.working(machine, slot):
            return 25.0 if machine.kind == "one_gpu" else 45.0 + (slot % 5)
        if slot % 13 == 6:
            return 10.0  # exactly the CPU threshold: not idle
        return 1.5 + slot * 7 % 10 / 10

    def busiest_core(self, machine: Machine, slot: int) -> float | None:
        """The hourly Maximum of the agent's per-core CPU, None where no agent runs."""
        if not machine.telemetry:
            return None
        if machine.kind == "low_util" or self.working(machine, slot):
            return 100.0
        if slot % 17 == 9:
            return 100.0  # one core at full load under a CPU average of 2 %: work
        return 6.0 + slot % 4

    def gpu(self, machine: Machine, index: int, slot: int, stat: str) -> float | None:
        """The hourly Maximum or Average of one GPU, None when its agent sent nothing that hour."""
        if machine.kind == "silent":
            return None
        if machine.kind == "gappy" and slot % 7 == machine.index % 7:
            return None
        busy = self.working(machine, slot)
        if machine.kind == "one_gpu":
            busy = busy and index == 0
        if machine.kind == "low_util":
            return 30.0 if stat == "Maximum" else 9.0 + (slot + index) % 4
        if busy:
            return 96.0 - index if stat == "Maximum" else 81.0 + (slot + index) % 9
        if stat == "Maximum" and slot % 11 == 5:
            return 5.0  # exactly the GPU threshold: in use
        return 1.0 + (slot + index) % 3 * 0.5 if stat == "Maximum" else 0.4

    def series(self, machine: Machine) -> Iterator[tuple[tuple[tuple[str, str], ...], int | None]]:
        """The GPU series the agent publishes: per GPU (InstanceId, index, name, arch), and the
        InstanceId-only aggregate of `aggregation_dimensions` (None for its index)."""
        if not machine.telemetry:
            return
        iid = machine.instance_id
        name = GPU_NAMES[machine.instance_type.partition(".")[0]]
        for g in range(machine.gpus):
            yield (("InstanceId", iid), ("index", str(g)), ("name", name), ("arch", "x86_64")), g
        yield (("InstanceId", iid),), None

    @cached_property
    def listed_series(self) -> int:
        return sum(1 for m in self.machines for _ in self.series(m))

    # ------------------------------------------------------------------ the rest of the account
    def ledger_items(self) -> list[dict[str, Any]]:
        """The week's ledger (DynamoDB items, as costguard's Ledger writes them): a warning for every idle
        machine, a stop for every stopped one, keeps pressed in Slack on some idle and office machines."""
        entries: list[dict[str, Any]] = []
        for m in self.machines:
            if m.kind in ("idle", "stopped"):
                entries.append(self._entry(m, "warn", self.start + timedelta(days=m.index % 3, hours=10)))
            if m.kind == "stopped":
                entries.append(self._entry(m, "stop", self.stopped_at, hourly_saving=1.006 if m.gpus == 1 else 0.0))
            if m.kind in ("idle", "office") and m.index % 53 == 0:
                pressed = self.start + timedelta(days=1 + m.index % 4, hours=17)
                until = pressed + timedelta(hours=14)
                entries.append(
                    self._entry(m, "keep", pressed, reason=f"kept from Slack by {m.owner}", until=until.isoformat())
                )
        return entries

    def _entry(self, m: Machine, kind: str, at: datetime, **extra: Any) -> dict[str, Any]:
        item: dict[str, Any] = {
            "pk": {"S": f"action#{at:%Y-%m-%d}"},
            "sk": {"S": f"{at.isoformat()}#{m.instance_id}#{kind}"},
            "expires_at": {"N": str(int(at.timestamp()) + 400 * 86400)},
            "at": {"S": at.isoformat()},
            "kind": {"S": kind},
            "instance_id": {"S": m.instance_id},
            "region": {"S": REGION},
            "mode": {"S": "enforce"},
            "applied": {"BOOL": True},
            "owner": {"S": m.owner},
            "instance_type": {"S": m.instance_type},
            "reason": {"S": str(extra.get("reason", f"{kind} by costguard"))},
            "idle_hours": {"N": str(Decimal("2.5"))},
            "hourly_saving": {"N": str(Decimal(str(extra.get("hourly_saving", 0.0))))},
            "until": {"S": str(extra.get("until", ""))},
        }
        return item

    @property
    def slack_users(self) -> dict[str, str]:
        """Slack's members: every owner but one in twenty."""
        return {f"user{k}@example.com": f"U{k:06d}" for k in range(self.owners) if k % 20 != 19}

    def owners_with_machines(self) -> set[str]:
        return {m.owner for m in self.machines if m.owner}

    def spot_price(self, on_demand: float) -> float:
        return round(on_demand * SPOT_SHARE_OF_ON_DEMAND, 4)
