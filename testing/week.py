"""The week harness: a week of a realistic fleet (testing/worlds/week.py) driven through costguard's real
idle sweep, every 15 minutes, with owners who answer some warnings. The safety test "a simulated week
interrupts no real work" (tests/integration/test_week.py), the fault week (tests/faults/test_fault_week.py)
and the benchmarks (bench/week.py, bench/faults.py) all run it.

costguard runs in a child process per code tree (`python -m testing.week CODE_ROOT OUT.json SEED SHARE
[FAULTS DAYS]`), so the same week can be run against today's code and against an older commit. AWS is
answered in process by the stand-ins of testing/aws over the world (EC2, CloudWatch, SSM, DynamoDB,
Secrets Manager, Pricing), with fault injection; Slack is the Slack stand-in over HTTP; the buttons go
through the real buttons handler.

Figures: % of idle GPU-hours reclaimed (the machine was stopped while it would have been idle),
interruptions of real work (a stop while the machine was at work, or work that came due while it stayed
stopped), GPU-hours of work lost, warnings per owner per day, warnings about machines that were at work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from testing.aws.cloudtrail import CloudTrail
from testing.aws.cloudwatch import CloudWatch, Listed, Points, SeriesKey, statistic
from testing.aws.costexplorer import CostExplorer, Period, plan_use
from testing.aws.dynamodb import DynamoDB
from testing.aws.ec2 import Ec2, Ec2Instance, Ec2World
from testing.aws.errors import ApiError
from testing.aws.inprocess import Exceptions, client_error, cloudwatch_in, metric_data_out, moment, paginate
from testing.aws.pricing import Pricing
from testing.aws.savingsplans import SavingsPlans
from testing.aws.secretsmanager import SecretsManager
from testing.aws.ssm import SystemsManager
from testing.measured import Judge, money
from testing.template import lambda_environment
from testing.worlds.commitments import BOOT_MINUTES, failed_start_record, restart_when
from testing.worlds.week import SLOTS_PER_HOUR, STEP, Knobs, Machine, World, harder

ROOT = Path(__file__).resolve().parents[1]
SWEEP_EVERY = 3  # slots: 15 minutes
REGION = "us-east-1"
DOCUMENT = "costguard-activity-check"
# Machines whose SSM agent is not installed are judged on metrics alone: the week is run with every
# machine managed (the recommended setup) and with this share without the agent.
NO_SSM_AGENT_SHARE = 0.15
HARDER_NO_SSM_SHARE = 0.20  # the harder week's (issue 44): one machine in five, as on hand-launched ML boxes
ANSWER_RATE = 0.5  # of the warnings an owner sees in office hours
WRONG_WORD = float(os.environ.get("BENCH_WRONG_WORD", "0"))  # owners of automation boxes who say nothing runs unseen
# People who do the unexpected (BENCH_EXEMPT_AFTER_INTERRUPTION, off by default): of the owners who start again a
# machine whose work costguard's stop interrupted, this share tag it `costguard:exempt` for good.
EXEMPT_AFTER_INTERRUPTION = float(os.environ.get("BENCH_EXEMPT_AFTER_INTERRUPTION", "0"))
LAMBDA_ATTEMPTS = (timedelta(0), timedelta(minutes=1), timedelta(minutes=3))  # an async invocation, retried twice


# ---------------------------------------------------------------------- the world's machines, as they run
class Fleet:
    """Which machines run when, their tags, and the ledger of stops and restarts.

    Owners start a stopped machine again when its work comes due in their office hours. An automation
    box's owner reads the stop notice at their desk (or learns of it from the job that failed in the
    night), starts it again, and tags it `costguard:exempt` for good: unless the notice said costguard
    starts it before its job, and it did."""

    def __init__(
        self,
        world: World,
        seed: int,
        no_ssm_share: float,
        *,
        history: timedelta | None = None,
        gpu_memory: bool = False,
    ) -> None:
        """`history`: what CloudWatch has before the week (a deploy on a fresh account: the machines and their
        agents started that long before it); None: the world's whole history, its machines launched before it.
        `gpu_memory`: the CloudWatch agent's configuration collects each GPU's memory used."""
        self.world = world
        rng = random.Random(seed)
        self.rng = random.Random(seed * 13)
        self.running = {m.instance_id: [True] * world.slots for m in world.machines}
        launched = world.begin - timedelta(days=3) if history is None else world.start - history
        self.seen_from = max(0, world.index(launched))  # the first slot any metric of the fleet was published
        self.gpu_memory = gpu_memory
        self.launched = {m.instance_id: launched for m in world.machines}
        self.boot = {m.instance_id: self.seen_from for m in world.machines}  # the slot of each machine's last start
        self.tags: dict[str, dict[str, str]] = {m.instance_id: {"Owner": m.owner} for m in world.machines}
        self.ssm = {m.instance_id for m in world.machines if rng.random() >= no_ssm_share}
        self.by_id = {m.instance_id: m for m in world.machines}
        self.stops: list[tuple[str, int]] = []  # (instance id, slot)
        self.restart_at: dict[str, int] = {}
        self.owner_restarts: list[tuple[str, int]] = []
        self.costguard_starts: list[tuple[str, int]] = []
        self.exempted: list[tuple[str, int]] = []
        self.unread: list[str] = []  # automation boxes stopped, whose owners have not yet read the notice
        self.changes: list[tuple[str, str, datetime]] = []  # EC2 state changes, for EventBridge to deliver
        self.now = world.start
        # The commitments world: CloudTrail's records (others' failed starts, and this fleet's), the owners'
        # starts EC2 refused for capacity (tried again every 15 minutes), the work slots they blocked.
        self.trail: list[dict[str, Any]] = list(world.bought.trail) if world.bought else []
        self.refused: set[str] = set()
        self.blocked: set[tuple[str, int]] = set()

    @property
    def index(self) -> int:
        return self.world.index(self.now)

    def stop(self, instance_id: str) -> None:
        if not self.running[instance_id][self.index]:
            return
        self.stops.append((instance_id, self.index))
        for i in range(self.index, self.world.slots):
            self.running[instance_id][i] = False
        machine = self.by_id[instance_id]
        self.changes.append((instance_id, "stopped", self.now))
        if not machine.automation:
            self.restart_at[instance_id] = restart_slot(self.world, machine, self.index)
        else:
            self.unread.append(instance_id)  # its owner reads the notice once costguard has sent it (react)

    def react(self) -> None:
        """The owners of automation boxes stopped since, reading the notice: one that says when costguard
        starts the box again is trusted; otherwise half of them start it again at their desk (and exempt
        it). A job that then finds its box stopped fails, and its owner starts it (advance)."""
        for instance_id in self.unread:
            if self.running[instance_id][self.index] or "costguard:start-at" in self.tags[instance_id]:
                continue
            if self.rng.random() < ANSWER_RATE:
                self.restart_at[instance_id] = next_office_slot(self.world, self.by_id[instance_id], self.index)
        self.unread = []

    def short(self, instance_id: str) -> bool:
        """EC2 has no capacity to start this machine now (the commitments world)."""
        machine, bought = self.by_id[instance_id], self.world.bought
        return bought is not None and bought.short(machine.instance_type, machine.az, self.now)

    def start(self, instance_id: str, *, by_owner: bool = False) -> None:
        if self.running[instance_id][self.index]:
            self.restart_at.pop(instance_id, None)
            return
        if self.short(instance_id):  # InsufficientInstanceCapacity: in CloudTrail, and tried again later
            user = self.by_id[instance_id].owner.split("@")[0] if by_owner else "costguard-idle-stopper"
            self.trail.append(failed_start_record(self.now, user, instance_id=instance_id))
            if not by_owner:
                raise NoCapacity(instance_id)
            self.refused.add(instance_id)
            self.restart_at[instance_id] = self.index + SWEEP_EVERY
            return
        self.refused.discard(instance_id)
        for i in range(self.index, self.world.slots):
            self.running[instance_id][i] = True
        self.launched[instance_id] = self.now
        self.boot[instance_id] = self.index
        self.restart_at.pop(instance_id, None)
        self.changes.append((instance_id, "running", self.now))
        if not by_owner:
            self.costguard_starts.append((instance_id, self.index))
            return
        self.owner_restarts.append((instance_id, self.index))
        if self.by_id[instance_id].automation and "costguard:exempt" not in self.tags[instance_id]:
            self.tags[instance_id]["costguard:exempt"] = "the nightly job must run; costguard stopped it"
            self.exempted.append((instance_id, self.index))
        elif (  # its owner's answer to the interruption (no draw where none does: the world as before)
            EXEMPT_AFTER_INTERRUPTION > 0
            and self.interrupted(instance_id)
            and "costguard:exempt" not in self.tags[instance_id]
            and self.rng.random() < EXEMPT_AFTER_INTERRUPTION
        ):
            self.tags[instance_id]["costguard:exempt"] = "costguard stopped it under my work"
            self.exempted.append((instance_id, self.index))

    def interrupted(self, instance_id: str) -> bool:
        """Whether the machine's last stop found it at work, or work came due while it stayed stopped (before now:
        the work its owner starts it for now is no interruption, as the figures count them)."""
        at = max((i for iid, i in self.stops if iid == instance_id), default=None)
        slots = self.by_id[instance_id].slots
        return at is not None and any(slots[i].work for i in range(at, self.index))

    def advance(self, to: datetime) -> None:
        while self.now < to:
            self.now += STEP
            for machine in self.world.machines:
                iid = machine.instance_id
                failed = machine.automation and not self.running[iid][self.index] and machine.slots[self.index].work
                if failed and iid not in self.restart_at:  # the job failed: its owner hears of it at their desk
                    # ... after it failed (the next slot at the earliest): its slot stays stopped, an interruption
                    self.restart_at[iid] = max(next_office_slot(self.world, machine, self.index), self.index + 1)
            for instance_id, at in list(self.restart_at.items()):
                if at <= self.index:
                    self.start(instance_id, by_owner=True)
            for instance_id in self.refused:  # its owner could not start it: the work due waits
                if not self.running[instance_id][self.index] and self.by_id[instance_id].slots[self.index].work:
                    self.blocked.add((instance_id, self.index))


class NoCapacity(Exception):
    """EC2 has no capacity to start the machine now."""


def restart_slot(world: World, machine: Machine, stopped: int) -> int:
    """When the owner starts a stopped machine again: as soon as work comes due in their office hours
    (they start the machine as they start the work). Work due outside office hours waits, and is lost. In
    the commitments world, restless owners start it at times of their own (testing/worlds/commitments.py)."""
    due = next(
        (i for i in range(stopped, world.slots) if world.office_hours(machine, i) and machine.slots[i].work), None
    )
    due = world.slots if due is None else due
    if world.bought is None:
        return due
    return restart_when(world.bought, machine.owner, machine.instance_id, stopped, due, SLOTS_PER_HOUR)


def next_office_slot(world: World, machine: Machine, after: int) -> int:
    """The owner's next moment at their desk (the start of their office hours, or now if they are there)."""
    for i in range(after, world.slots):
        if world.office_hours(machine, i):
            return i
    return world.slots


# ---------------------------------------------------------------------- AWS, answered from the fleet
class Pages:
    """boto3's paginator over an in-process answer: PaginationConfig's PageSize sent as MaxResults, and the
    answer's NextToken followed."""

    def __init__(self, answer: Callable[..., Any]) -> None:
        self.answer = answer

    def paginate(self, **params: Any) -> Any:
        config = params.pop("PaginationConfig", None) or {}
        if "PageSize" in config:
            params["MaxResults"] = config["PageSize"]
        first = self.answer(**params)
        if isinstance(first, list):  # the fleet's own answers: one page
            return first
        return [first, *list(paginate(self.answer, params))[1:]] if first.get("NextToken") else [first]


# The write operations a storm may hit (every write the sweep makes, by the fakes' names).
STORM_OPS = (
    "ec2:create_tags",
    "ec2:delete_tags",
    "ec2:stop_instances",
    "dynamodb:batch_write_item",
    "dynamodb:transact_write_items",
    "dynamodb:put_item",
)


class Killed(BaseException):
    pass


@dataclass
class FaultPlan:
    """Faults the fakes inject, each with its probability per AWS call: a throttle, a write applied whose
    answer is a 500, a kill before a call or right after it was applied; storms fail every call of an
    operation for a stretch of sweeps."""

    throttle: float = 0.0
    applied_then_500: float = 0.0
    kill: float = 0.0
    storm_every: int = 0  # sweeps between storms (0: none)
    storm_sweeps: int = 4
    storm_ops: tuple[str, ...] = STORM_OPS  # each storm on one of these, at random
    seed: int = 1
    kills: int = 0
    storms: int = 0
    failures: int = 0  # calls that failed (thrown or applied-then-500), storms included

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.storm_until = -1
        self.storm_on = ""

    def sweep_started(self, sweep: int) -> None:
        if self.storm_every and sweep % self.storm_every == 0:
            self.storm_on = self.rng.choice(list(self.storm_ops))
            self.storm_until = sweep + self.storm_sweeps
            self.storms += 1
        elif sweep >= self.storm_until:
            self.storm_on = ""

    def before(self, call: str) -> None:
        if call == self.storm_on or self.rng.random() < self.throttle:
            self.failures += 1
            raise _aws_error("ThrottlingException", call)
        if self.rng.random() < self.kill / 2:
            self.kills += 1
            raise Killed(f"before {call}")

    def after(self, call: str) -> None:
        if call.split(":")[1].startswith(("describe", "list", "get", "query")):
            return  # reads change nothing: a lost answer is only a failed read
        if self.rng.random() < self.applied_then_500:
            self.failures += 1
            raise _aws_error("InternalServerError", call)
        if self.rng.random() < self.kill / 2:
            self.kills += 1
            raise Killed(f"after {call}")


def _aws_error(code: str, call: str) -> Exception:
    from botocore.exceptions import ClientError  # noqa: PLC0415 (the child process's botocore)

    return ClientError({"Error": {"Code": code, "Message": "injected"}}, call)


def refusing(operation: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """A stand-in's refusal (ApiError) raised as boto3 raises it: the ClientError `client.exceptions` names."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except ApiError as exc:
            if exc.code not in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                # A request AWS would refuse: costguard's bug, told where the week's log is read.
                print(f"  {operation} refused: {exc.code}: {exc.message}", file=sys.stderr)
            raise client_error(exc, operation) from None

    return call


GPU_DIMENSIONS = (("name", "NVIDIA"), ("arch", "Ampere"))  # besides InstanceId and index


GPU_MEMORY_METRIC = "nvidia_smi_memory_used"  # MB, the agent's nvidia_gpu `memory_used`


class WeekMetrics:
    """What the fleet's agents publish, for testing/aws/cloudwatch.py: CPUUtilization (AWS/EC2, InstanceId)
    while a machine runs; with the CloudWatch agent, cpu_usage_active of its busiest core (CWAgent,
    InstanceId) and nvidia_smi_utilization_gpu per GPU (CWAgent, InstanceId, index, name, arch), the GPU
    series only in the slots its agent answered; where the agent's configuration collects it (the code
    tree's docs/cloudwatch-agent.json), nvidia_smi_memory_used beside each GPU's utilization, with the same
    dimensions. Points are five-minute slots, a slot late; none before the fleet's history begins."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def listed(self, recently_active: bool) -> list[Listed]:
        fleet = self.fleet
        hours = 3 if recently_active else 14 * 24
        first = max(fleet.seen_from, fleet.index - hours * SLOTS_PER_HOUR)
        out: list[Listed] = []
        for m in fleet.world.machines:
            running = fleet.running[m.instance_id][first : fleet.index]
            if not any(running):
                continue
            out.append(("AWS/EC2", "CPUUtilization", (("InstanceId", m.instance_id),)))
            if m.gpu_agent:
                out.append(("CWAgent", "cpu_usage_active", (("InstanceId", m.instance_id),)))
            if recently_active:
                published = any(on and s.gpu_agent for on, s in zip(running, m.slots[first : fleet.index], strict=True))
            else:  # an agent that hung for hours in a run still published in two weeks
                published = m.gpu_agent
            if published:
                for g in range(m.gpus):
                    dims = (("InstanceId", m.instance_id), ("index", str(g)), *GPU_DIMENSIONS)
                    out.append(("CWAgent", "nvidia_smi_utilization_gpu", dims))
                    if fleet.gpu_memory:
                        out.append(("CWAgent", GPU_MEMORY_METRIC, dims))
        return out

    def _signal(self, key: SeriesKey) -> tuple[Machine, str, int] | None:
        namespace, name, dims = key
        named = dict(dims)
        m = self.fleet.by_id.get(named.get("InstanceId", ""))
        if m is None:
            return None
        alone = frozenset({("InstanceId", m.instance_id)})
        if (namespace, name) == ("AWS/EC2", "CPUUtilization") and dims == alone:
            return m, "cpu", 0
        if (namespace, name) == ("CWAgent", "cpu_usage_active") and dims == alone and m.gpu_agent:
            return m, "core", 0
        gpu_metrics = {"nvidia_smi_utilization_gpu": "gpu", GPU_MEMORY_METRIC: "memory"}
        if namespace == "CWAgent" and name in gpu_metrics and m.gpu_agent:
            if name == GPU_MEMORY_METRIC and not self.fleet.gpu_memory:
                return None
            index = named.get("index", "")
            exact = frozenset({("InstanceId", m.instance_id), ("index", index), *GPU_DIMENSIONS})
            if index.isdigit() and int(index) < m.gpus and dims == exact:
                return m, gpu_metrics[name], int(index)
        return None

    def points(self, key: SeriesKey, start: float, end: float, period: int, stat: str) -> Points | None:
        found = self._signal(key)
        if found is None:
            return None
        m, signal, gpu = found
        world, fleet = self.fleet.world, self.fleet
        first = max(fleet.seen_from, world.index(moment(start)))
        last = min(world.index(moment(end)), fleet.index - 1)  # lag: a slot late
        per = max(1, period // 300)
        buckets: dict[int, list[float]] = defaultdict(list)
        for i in range(first, last):
            if not fleet.running[m.instance_id][i]:
                continue
            slot = m.slots[i]
            if signal == "cpu":
                value = slot.cpu
            elif signal == "core":
                value = slot.core
            elif not slot.gpu_agent:
                continue
            elif signal == "memory":  # MB: what the activity check reports (testing/worlds/week.py's report)
                value = float(gpu_memory_mb(slot))
            else:
                value = slot.gpu[gpu]
            buckets[i - i % per].append(value)
        times = [world.at(i).timestamp() for i in sorted(buckets)]
        return times, [statistic(stat, buckets[i]) for i in sorted(buckets)]


def gpu_memory_mb(slot: Any) -> int:
    """Each GPU's memory used in a slot, as nvidia-smi says it: a job's process (training, or waiting on a
    queue), a notebook kernel, or the driver's few MB."""
    return (30000 if slot.gpu_holder else 6000 if slot.kernel else 0) + 3


class WeekNodes:
    """The fleet's SSM agents for testing/aws/ssm.py: every machine with the agent is listed Online, and its
    activity check reports the slot it is asked in (testing/worlds/week.py's report)."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.cgroups = False  # the code tree's check reports GPUs and cgroup accounting

    def nodes(self) -> list[tuple[str, str]]:
        return [(m.instance_id, "Online") for m in self.fleet.world.machines if m.instance_id in self.fleet.ssm]

    def check(self, instance_id: str) -> str:
        fleet = self.fleet
        machine, boot = fleet.by_id[instance_id], fleet.boot[instance_id]
        return json.dumps(fleet.world.report(machine, fleet.index, boot=boot, cgroups=self.cgroups))


class WeekMachines(Ec2World):
    """The fleet's machines for testing/aws/ec2.py: running or stopped in the slot of now, their tags, and
    when a stopped one's stop was asked for (EC2's StateTransitionReason); a stop or a start moves the
    fleet. No Reserved Instances, capacity reservations or Spot machines: every machine is on demand."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def instances(self) -> list[Ec2Instance]:
        fleet = self.fleet
        out = []
        bought = fleet.world.bought
        for m in fleet.world.machines:
            state = "running" if fleet.running[m.instance_id][fleet.index] else "stopped"
            instance = Ec2Instance(
                m.instance_id,
                m.instance_type,
                state,
                fleet.launched[m.instance_id],
                fleet.tags[m.instance_id],
                state_reason=self._transition(m.instance_id, state),
                cpu=(m.vcpus // 2, 2),
            )
            if bought is not None:  # where it runs, and in what capacity, as DescribeInstances says
                instance.zone = m.az
                if not fleet.world.exists(m, fleet.index):
                    instance.state, instance.state_reason = "terminated", "Capacity Block ended"
                if m.instance_id in bought.block_machines:
                    instance.lifecycle = "capacity-block"
                if m.instance_id in bought.reservation:
                    instance.extra["CapacityReservationId"] = bought.reservation[m.instance_id]
            out.append(instance)
        return out

    def reserved_instances(self) -> Sequence[Mapping[str, Any]]:
        bought = self.fleet.world.bought
        return bought.reserved_instances() if bought else []

    def capacity_reservations(self) -> Sequence[Mapping[str, Any]]:
        fleet, bought = self.fleet, self.fleet.world.bought
        if bought is None:
            return []
        used: dict[str, int] = defaultdict(int)
        for iid, rid in bought.reservation.items():
            if fleet.running[iid][fleet.index] and fleet.world.exists(fleet.by_id[iid], fleet.index):
                used[rid] += 1
        return bought.capacity_reservations(fleet.now, used)

    def _transition(self, instance_id: str, state: str) -> str:
        stops = [slot for iid, slot in self.fleet.stops if iid == instance_id]
        if state != "stopped" or not stops:
            return ""
        return f"User initiated ({self.fleet.world.at(stops[-1]):%Y-%m-%d %H:%M:%S} GMT)"

    def stop(self, instance_id: str, hibernate: bool) -> None:
        self.fleet.stop(instance_id)

    def start(self, instance_id: str) -> None:
        try:
            self.fleet.start(instance_id)
        except NoCapacity:
            machine = self.fleet.by_id[instance_id]
            raise ApiError(
                "InsufficientInstanceCapacity",
                f"We currently do not have sufficient {machine.instance_type} capacity in the Availability Zone "
                f"you requested ({machine.az}). Our system will be working on provisioning additional capacity.",
                status=500,
            ) from None

    def now(self) -> datetime:
        return self.fleet.now


class FakeAws:
    def __init__(self, fleet: Fleet, secret: str, faults: FaultPlan | None = None) -> None:
        self.fleet = fleet
        self.secrets = SecretsManager({"costguard/slack": secret})
        self.faults = faults
        self.dynamodb = DynamoDB()  # the state table
        self.cloudwatch = CloudWatch(WeekMetrics(fleet))
        self.nodes = WeekNodes(fleet)
        self.ssm = SystemsManager(self.nodes)
        self.pricing = Pricing()  # answers nothing: costguard prices from its bundled table
        self.ec2 = Ec2(WeekMachines(fleet), REGION)
        bought = fleet.world.bought  # the commitments world's; today's world bought nothing
        self.savingsplans = SavingsPlans(lambda: bought.savings_plans() if bought else [])
        self.costexplorer = CostExplorer(WeekBill(fleet))
        self.cloudtrail = CloudTrail(lambda region: fleet.trail if region == REGION else [])
        self.calls: dict[str, int] = defaultdict(int)
        self.stops_after_keep = 0

    def client(self, service: str) -> Any:
        fake = self

        class Client:
            exceptions = Exceptions()

            def get_paginator(self, name: str) -> Pages:
                fake.calls[f"{service}:{name}"] += 1
                answer = refusing(name, getattr(fake, f"{name}_pages", None) or getattr(fake, name))
                faults = fake.faults
                if faults is None:
                    return Pages(answer)

                def faulty(**params: Any) -> Any:
                    faults.before(f"{service}:{name}")
                    return answer(**params)

                return Pages(faulty)

            def __getattr__(self, name: str) -> Any:
                fake.calls[f"{service}:{name}"] += 1
                method = refusing(name, getattr(fake, name))
                faults = fake.faults
                if faults is None or service in ("secretsmanager", "pricing"):
                    return method

                def faulty(*args: Any, **kwargs: Any) -> Any:
                    faults.before(f"{service}:{name}")
                    answer = method(*args, **kwargs)
                    faults.after(f"{service}:{name}")
                    return answer

                return faulty

        return Client()

    # EC2: testing/aws/ec2.py over the fleet's machines (WeekMachines)
    def describe_instances(self, **params: Any) -> dict[str, Any]:
        return self.ec2.describe_instances(params)

    def create_tags(self, **params: Any) -> dict[str, Any]:
        return self.ec2.create_tags(params)

    def delete_tags(self, **params: Any) -> dict[str, Any]:
        return self.ec2.delete_tags(params)

    def stop_instances(self, **params: Any) -> dict[str, Any]:
        return self.ec2.stop_instances(params)

    def start_instances(self, **params: Any) -> dict[str, Any]:
        return self.ec2.start_instances(params)  # costguard's: a working-hours or learned start, or a button

    def describe_savings_plans(self, **params: Any) -> dict[str, Any]:
        return self.savingsplans.describe_savings_plans(params)

    def describe_reserved_instances(self, **params: Any) -> dict[str, Any]:
        return self.ec2.describe_reserved_instances(params)

    def describe_capacity_reservations(self, **params: Any) -> dict[str, Any]:
        return self.ec2.describe_capacity_reservations(params)

    def describe_spot_price_history(self, **params: Any) -> dict[str, Any]:
        return self.ec2.describe_spot_price_history(params)

    # Cost Explorer's Savings Plans reports (testing/aws/costexplorer.py over the true bill); CloudTrail
    def get_savings_plans_utilization_details(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.report("GetSavingsPlansUtilizationDetails")(params)

    def get_savings_plans_coverage(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.report("GetSavingsPlansCoverage")(params)

    def lookup_events(self, **params: Any) -> dict[str, Any]:
        return self.cloudtrail.lookup_events(params)

    # The weekly digest's other Cost Explorer reads (refused as unsupported where the week's bill has none),
    # and its dashboards (kept nowhere: the week measures no dashboard)
    def get_reservation_utilization(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.report("GetReservationUtilization")(params)

    def get_reservation_coverage(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.report("GetReservationCoverage")(params)

    def get_savings_plans_utilization(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.report("GetSavingsPlansUtilization")(params)

    def get_cost_and_usage(self, **params: Any) -> dict[str, Any]:
        return self.costexplorer.get_cost_and_usage(params)

    def put_dashboard(self, **params: Any) -> dict[str, Any]:
        return {"DashboardValidationMessages": []}

    # SageMaker, for the weekly digest's part (SageMakerGovernance is on by default): the week's account has none
    def list_notebook_instances(self, **params: Any) -> dict[str, Any]:
        return {"NotebookInstances": []}

    def list_endpoints(self, **params: Any) -> dict[str, Any]:
        return {"Endpoints": []}

    def list_domains(self, **params: Any) -> dict[str, Any]:
        return {"Domains": []}

    def list_apps(self, **params: Any) -> dict[str, Any]:
        return {"Apps": []}

    # CloudWatch: testing/aws/cloudwatch.py over the fleet's metrics (WeekMetrics)
    def list_metrics(self, **params: Any) -> dict[str, Any]:
        return self.cloudwatch.list_metrics(params)

    def get_metric_data(self, **params: Any) -> dict[str, Any]:
        return metric_data_out(self.cloudwatch.get_metric_data(cloudwatch_in(params)))

    # SSM: testing/aws/ssm.py over the fleet's agents (WeekNodes)
    def describe_instance_information(self, **params: Any) -> dict[str, Any]:
        return self.ssm.describe_instance_information(params)

    def send_command(self, **params: Any) -> dict[str, Any]:
        return self.ssm.send_command(params)

    def list_command_invocations(self, **params: Any) -> dict[str, Any]:
        return self.ssm.list_command_invocations(params)

    # DynamoDB: testing/aws/dynamodb.py; Secrets Manager, Pricing
    def batch_write_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.batch_write_item(params)

    def put_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.put_item(params)

    def transact_write_items(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.transact_write_items(params)

    def get_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.get_item(params)

    def update_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.update_item(params)

    def batch_get_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.batch_get_item(params)

    def delete_item(self, **params: Any) -> dict[str, Any]:
        return self.dynamodb.delete_item(params)

    def query(self, **params: Any) -> dict[str, Any]:
        """One page, as DynamoDB's Query answers a call (its LastEvaluatedKey for the next)."""
        return self.dynamodb.query(params)

    def query_pages(self, **params: Any) -> list[dict[str, Any]]:
        """Every page, for the Query paginator."""
        return list(paginate(lambda **p: self.dynamodb.query(p), params, "LastEvaluatedKey"))

    def get_secret_value(self, **params: Any) -> dict[str, Any]:
        return self.secrets.get_secret_value(params)

    def get_products(self, **params: Any) -> dict[str, Any]:
        return self.pricing.get_products(params)


# ---------------------------------------------------------------------- costguard's week (child process)
def refuse_the_network() -> list[str]:
    """Connections anywhere but this machine refused at once (the week runs in a child process, out of
    pytest-socket's reach), each one named: a client the harness forgot waits on botocore's retries."""
    attempts: list[str] = []
    connect, resolve = socket.socket.connect, socket.getaddrinfo

    def local_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in LOCAL_HOSTS:
            attempts.append(str(host))
            raise ConnectionRefusedError(f"the week answers AWS in process: no connection to {host}")
        return connect(self, address)

    def resolve_local_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        # A machine without DNS fails here, before any connect: the attempt is named all the same (and fails
        # at once, where botocore's retries of an unresolved name would sleep for a minute of the week).
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in LOCAL_HOSTS:
            attempts.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"the week answers AWS in process: no name {name}")
        return resolve(host, *args, **kwargs)

    socket.socket.connect = local_only  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = resolve_local_only
    return attempts


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def followed_until(index: int, still_off: set[tuple[str, int]]) -> int:
    """The slot (exclusive) to which the stops' off-periods were followed, when the run after the week broke off at
    `index`: past it where every machine ran again there (its slot was seen: the last stop's off-period ended at
    it, and is judged whole), else `index` (the stops still off then are censored)."""
    return index + 1 if not still_off else index


def run_costguard(
    code_root: Path, seed: int, no_ssm_share: float, faults: dict[str, Any] | None = None, days: int = 7
) -> dict[str, Any]:
    sys.path[:0] = [str(code_root / "layers" / "costguard"), str(code_root)]
    # The idle stopper's Lambda environment, from the code tree's template.yaml (its defaults, but for what
    # this account's deploy says); the buttons handler runs in the same process, with the same.
    parameters = {
        "Mode": "enforce",
        "AlertsChannel": "C0ALERTS",
        "EmailDomain": "example.com",
        "GovernedRegions": REGION,
        "IdleAlarms": "false",
        "ActivityCheckSeconds": "5",
        "TeamTimezone": "UTC",
        "LogLevel": os.environ.get("BENCH_LOG_LEVEL", "ERROR"),
        "Tracing": "Disabled",
    }
    resources = {"StateTable": "costguard-state", "ActivityCheckDocument": DOCUMENT}
    template = code_root / "template.yaml"
    os.environ.update(
        lambda_environment("idle_stopper", parameters, resources, template),
        POWERTOOLS_METRICS_DISABLED="true",
        AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION,
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        CLICK_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/clicks",
        ACTIONS_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/clicks",
    )
    import importlib.util  # noqa: PLC0415

    from costguard.aws.clients import ClientFactory  # noqa: PLC0415 (after the code tree is on the path)
    from costguard.core.settings import Settings  # noqa: PLC0415 (after the code tree is on the path)
    from costguard.runtime import Runtime  # noqa: PLC0415 (after the code tree is on the path)
    from costguard.slack.interactions import Click  # noqa: PLC0415 (after the code tree is on the path)
    from testing.handlers import LambdaContext  # noqa: PLC0415
    from testing.slack_standin import SlackStandIn  # noqa: PLC0415

    def handler(function: str) -> Any:
        spec = importlib.util.spec_from_file_location(f"week_{function}", code_root / "functions" / function / "app.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.lambda_handler

    # The fakes answer at once; the sim must not sleep 672 times. The check's module by the code tree's layout
    # (idle/reads/ since issue 31, idle/ before; none before the activity check).
    for name in ("costguard.idle.reads.checks", "costguard.idle" + ".checks"):
        try:
            setattr(importlib.import_module(name), "POLL_SECONDS", 0.0)  # noqa: B010
            break
        except ImportError:
            continue
    if os.environ.get("BENCH_DECISIONS"):  # every decision of the sweeps, for reading what holds a week's hours
        log_decisions(Path(os.environ["BENCH_DECISIONS"]))

    # copies: the calls at scale; BENCH_WORLD=commitments: the commitments world; =schedules: with the boxes
    # whose job begins by waiting; =harder: every harder knob (testing/worlds/week.py's harder())
    kind = os.environ.get("BENCH_WORLD", "")
    world = World(
        seed,
        copies=int(os.environ.get("BENCH_COPIES", "1")),
        commitments=kind == "commitments",
        **(
            harder()
            if kind == "harder"
            else Knobs(schedules=kind == "schedules", mixed_clocks=False, housekeeping=False, waiting_jobs=False)
        ),
    )
    if os.environ.get("BENCH_BILL") == "off":  # costguard as before its bill: no reader, every stop on demand
        setattr(importlib.import_module("costguard.idle.sweep"), "BillingReader", lambda **_: None)  # noqa: B010
    # BENCH_HISTORY_DAYS: CloudWatch has that many days before the week (a fresh account's deploy), else all of
    # the world's; the agent's GPU memory where the code tree's agent configuration collects it.
    history = os.environ.get("BENCH_HISTORY_DAYS")
    agent_config = code_root / "docs" / "cloudwatch-agent.json"
    memory = agent_config.exists() and '"memory_used"' in agent_config.read_text()
    fleet = Fleet(
        world,
        seed,
        no_ssm_share,
        history=timedelta(days=float(history)) if history else None,
        gpu_memory=memory,
    )
    people = {m.owner for m in world.machines}
    users = {p: f"U{k:04d}" for k, p in enumerate(sorted(people))}
    attempt: list[Runtime] = []  # Slack's clock is the invocation's: a retry a few minutes on posts then, too

    def slack_clock() -> float:
        return (attempt[0].now() if attempt else fleet.now).timestamp()

    # Each person's Slack profile says their zone (users.info `tz`), as Slack's does for everyone.
    zones = {users[m.owner]: m.zone for m in world.machines}
    slack = SlackStandIn(users=users, zones=zones, clock=slack_clock).start()
    plan = FaultPlan(**{k: v for k, v in (faults or {}).items() if k not in ("slack", "double")}) if faults else None
    aws = FakeAws(fleet, json.dumps({"bot_token": slack.token}), plan)
    aws.nodes.cgroups = '"cg"' in (code_root / "template.yaml").read_text()  # the check of this code tree
    os.environ["SLACK_API_URL"] = slack.api_url
    # A week of posts in a few minutes: the stand-in enforces no rate limit, and the pace would wait real seconds.
    runtime = Runtime(Settings.from_env(), ClientFactory(default_region=REGION), slack_pace=0.0)
    attempt.append(runtime)
    # A deploy's recommended first week in dry-run before the measured week (BENCH_DRY_RUN_DAYS): costguard
    # learns, stops nothing, and enforces from the week's start.
    enforced, dry_days = runtime.settings, int(os.environ.get("BENCH_DRY_RUN_DAYS", "0"))
    if dry_days:
        fleet.now = world.start - timedelta(days=dry_days)
        runtime.settings = dataclasses.replace(enforced, mode=type(enforced.mode)("dry-run"))
    # BENCH_WARM_DAYS: as many days enforced before the measured week, on the world's history (its days of the
    # same kinds of work, before the week), the state table kept: the week measured is costguard's second. Only
    # the measured week's figures are reported (the warm days' stops count where work came due in the week).
    warm_days = int(os.environ.get("BENCH_WARM_DAYS", "0"))
    if warm_days:
        fleet.now = world.start - timedelta(days=warm_days)
    for service in ("ec2", "cloudwatch", "ssm", "dynamodb", "secretsmanager", "autoscaling", "cloudtrail", "sagemaker"):
        runtime.clients.use(service, REGION, aws.client(service))
    for service in ("pricing", "savingsplans", "ce"):
        runtime.clients.use(service, "us-east-1", aws.client(service))
    network = refuse_the_network()  # a call the fakes do not answer must not reach for a real endpoint
    Runtime.now = staticmethod(lambda: fleet.now)  # type: ignore[method-assign]
    sweep, buttons = handler("idle_stopper"), handler("buttons")
    rng = random.Random(seed * 31)
    warnings: list[tuple[str, int]] = []
    seen = 0
    offers: list[tuple[Any, str]] = []  # offers of a keep for its runs not yet read by their owners
    end = world.start + timedelta(days=days)
    sweeps = dead_lettered = by_costguard = failed_on_writes = 0
    messages_per_owner: Counter[str] = Counter()  # warning messages (one may tell about several machines)
    most_in_a_sweep = 0
    slack_rng = random.Random(seed * 7)
    digest_posts: list[Any] = []  # what the weekly digest posted at the week's end
    # The commitments world goes on past the week (its `after`): costguard and its people too, until every stop
    # of the week has had its machine running again or that time ends, so that each stop's off-period is seen
    # whole (testing/measured.py). The digest is posted at the week's end; the figures are the week's.
    digested, pending = world.bought is None, set()
    followed = None  # the slot (exclusive) to which the week's stops' off-periods were followed
    try:
        while fleet.now < end + world.after:
            if fleet.now >= end:
                if not digested:
                    digest_posts = weekly_digest(handler, runtime, slack, parameters, resources, template)
                    digested = True
                    pending = {(iid, at) for iid, at in fleet.stops if at >= world.index(world.start)}
                pending = {(iid, at) for iid, at in pending if not fleet.running[iid][fleet.index]}
                if not pending:
                    followed = followed_until(fleet.index, pending)
                    break
            if fleet.now >= world.start:
                runtime.settings = enforced
            sweeps += 1

            if plan is not None:
                plan.sweep_started(sweeps)
            if faults and faults.get("slack") and slack_rng.random() < 0.3:  # Slack has a bad quarter-hour
                method = slack_rng.choice(["chat.postMessage", "users.lookupByEmail"])
                status, retry_after = slack_rng.choice([(429, 1), (500, None), (503, None)])
                slack.fail(method, status, count=slack_rng.randint(1, 6), retry_after=retry_after)
            for _ in range(2 if faults and faults.get("double") else 1):  # EventBridge delivers at least once
                # An invocation that fails (raises, or is killed) is retried by Lambda 1 and then 2 minutes
                # later; one whose three attempts all fail goes to the dead-letter queue (and pages).
                raised = False  # an attempt raised for something else than a region it could not read
                for retry in LAMBDA_ATTEMPTS:
                    runtime.now = lambda r=retry: fleet.now + r  # type: ignore[method-assign,misc]
                    try:
                        sweep({"costguard": "sweep"}, LambdaContext(), runtime=runtime)
                        break
                    except Killed:
                        pass
                    except Exception as exc:
                        # A region that could not be read (a read failed after botocore's retries) fails its
                        # sweep, for Lambda to retry: the fault model's draw. Any other raise is costguard's.
                        if not UNREADABLE.search(str(exc)):
                            raised = True
                            failed_on_writes += 1
                        if faults is None:
                            print(
                                f"  sweep at {fleet.now:%a %H:%M} raised {type(exc).__name__}: {exc}", file=sys.stderr
                            )
                else:  # three attempts failed: the dead-letter queue. Killed, or a region unreadable, in each
                    # of the three is the fault model's draw (a kill in 0.5 % of calls, a read failing in 1 %).
                    dead_lettered += 1
                    by_costguard += raised
                del runtime.now
            in_week = world.start <= fleet.now < end
            this_sweep = Counter(m.channel for m in slack.messages[seen:] if warned_in(m, world) and in_week)
            messages_per_owner.update(this_sweep)
            most_in_a_sweep = max(most_in_a_sweep, *this_sweep.values(), 0)
            for message in slack.messages[seen:]:
                for instance_id in warned_in(message, world):  # each machine a warning tells about
                    if in_week:  # the measured week's (not a dry-run week's reports, nor those after it)
                        warnings.append((instance_id, fleet.index))
                    url = slack.response_url(message.ts)
                    # Under faults, owners only keep: every stop counted is the sweep's, with its notice.
                    kw = {"stop_now": faults is None}
                    answer(fleet, rng, buttons, runtime, Click, message, instance_id, LambdaContext, url, **kw)
                offers += [(message, iid) for iid in offered_in(message)]
            offers = [  # an offer of a keep for its runs: its owner's one click, at their desk
                (message, iid)
                for message, iid in offers
                if not fleet.world.office_hours(fleet.by_id[iid], fleet.index)
                or not accept_offer(fleet, rng, buttons, runtime, Click, message, iid, LambdaContext, slack)
            ]
            seen = len(slack.messages)
            fleet.react()
            deliver_changes(fleet, sweep, LambdaContext, runtime)
            fleet.advance(fleet.now + STEP * SWEEP_EVERY)
            deliver_changes(fleet, sweep, LambdaContext, runtime)
        if plan is not None:  # the faults end; the next scheduled sweeps finish what the last ones left
            aws.faults = None
            for _ in range(2):
                sweep({"costguard": "sweep"}, LambdaContext(), runtime=runtime)
                fleet.advance(fleet.now + STEP * SWEEP_EVERY)
        if not digested:  # the week's claim: what the real weekly digest posts at its end
            digest_posts = weekly_digest(handler, runtime, slack, parameters, resources, template)
    finally:
        slack.stop()
    figures = outcome(world, fleet.running, fleet.stops, warnings, days=days)
    if os.environ.get("BENCH_DUMP"):  # the week's raw record, for looking into a figure
        told = [
            {"ts": m.ts, "channel": m.channel, "text": m.text, "ids": [b.get("block_id") for b in m.blocks]}
            | {"blocks": m.blocks}  # as last edited: what its reader sees at the end (bench/faults.py)
            for m in slack.messages
        ]
        Path(os.environ["BENCH_DUMP"]).write_text(json.dumps(dump(aws, fleet) | {"messages": told}, default=str))
    if world.bought is not None:
        to = fleet.index if followed is None else followed
        figures["money"] = money(
            world, fleet.running, fleet.stops, fleet.owner_restarts, fleet.blocked, days=days, seen=to
        )
        figures["money"]["claimed_usd"] = posted_claim(digest_posts)
        figures["money"]["costguard_start_refusals"] = sum(
            1 for r in fleet.trail if r["userIdentity"]["userName"] == "costguard-idle-stopper"
        )
    figures |= people_and_starts(world, fleet, days=days)
    figures["machines_checked_per_sweep"] = round(aws.ssm.checked / max(1, sweeps), 1)
    figures["warning_messages"] = sum(messages_per_owner.values())
    figures["warning_messages_per_owner_per_day"] = round(
        sum(messages_per_owner.values()) / figures["owners"] / days, 2
    )
    figures["most_warning_messages_to_one_owner_in_a_sweep"] = most_in_a_sweep
    unmanaged = [m.instance_id for m in world.machines if m.instance_id not in fleet.ssm]
    figures |= {"machines_without_ssm_agent": len(unmanaged), "calls": dict(sorted(aws.calls.items()))}
    figures["network_attempts"] = sorted(set(network))
    figures["slack_refused"] = [str(r) for r in slack.refused]  # messages Slack would refuse (testing/blockkit.py)
    figures |= trail_counts(aws.dynamodb.items())
    if faults is not None:
        figures |= fault_counts(aws, fleet, slack.messages, plan, warnings) | {
            "dead_lettered_sweeps": dead_lettered,
            "dead_lettered_by_a_raise_of_costguard": by_costguard,
            "attempts_raised_not_for_an_unreadable_region": failed_on_writes,
        }
    return figures


def weekly_digest(
    handler: Callable[[str], Any], runtime: Any, slack: Any, parameters: Any, resources: Any, template: Path
) -> list[Any]:
    """The real weekly digest's run at the week's end, in the idle stopper's process: what it posted to Slack."""
    from testing.handlers import LambdaContext  # noqa: PLC0415 (after the code tree is on the path)

    idle_stopper = dict(os.environ)
    os.environ.update(lambda_environment("weekly_digest", parameters, resources, template))
    posted = len(slack.messages)
    try:
        handler("weekly_digest")({"costguard": "digest"}, LambdaContext(), runtime=runtime)
    except Exception as exc:  # said, and the claim left unknown: never a figure made up in its place
        print(f"  weekly digest raised {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:  # the sweeps after the week run with the idle stopper's environment again
        os.environ.clear()
        os.environ.update(idle_stopper)
    return list(slack.messages[posted:])


def log_decisions(path: Path) -> None:
    """Every decision the code tree's idle sweeps hand to be carried out, one JSON line each (testing/holds.py
    reads them): the sweep's clock, the machine, the action, the last rule of its trail, its reason. Written from
    the notices' `act`, which every decision goes through, before anything is told or written; a tree whose
    sweep has no such module logs nothing (bench/holds.py then refuses its empty log)."""
    try:
        notices = importlib.import_module("costguard.idle.acts.notices")
    except ImportError:
        return
    act = notices.SweepNotices.act
    if getattr(act, "logs_decisions", False):  # logged once, however often asked
        return
    lock = threading.Lock()

    def logged(self: Any, instance: Any, decision: Any, now: datetime, *args: Any, **kwargs: Any) -> Any:
        try:
            trail = getattr(decision, "trail", ())
            line = {
                "at": now.isoformat(),
                "instance_id": instance.instance_id,
                "action": decision.action.value,
                "rule": trail[-1].rule.value if trail else "",
                "reason": decision.reason,
            }
            with lock, path.open("a") as out:
                out.write(json.dumps(line) + "\n")
        except Exception as exc:  # the measuring never fails the sweep it measures: said, and the week goes on
            print(f"  a decision could not be logged: {type(exc).__name__}: {exc}", file=sys.stderr)
        return act(self, instance, decision, now, *args, **kwargs)

    logged.logs_decisions = True  # type: ignore[attr-defined]
    notices.SweepNotices.act = logged


def dump(aws: FakeAws, fleet: Fleet) -> dict[str, Any]:
    """Which machine ran when, each stop and restart, and the ledger's actions: to look into a week's figure."""
    ledger = [
        {k: next(iter(v.values())) for k, v in item.items()}
        for item in aws.dynamodb.items()
        if item["pk"]["S"].startswith("action#")
    ]
    return {
        "running": fleet.running,
        "stops": fleet.stops,
        "owner_restarts": fleet.owner_restarts,
        "costguard_starts": fleet.costguard_starts,
        "exempted": fleet.exempted,
        "without_agent": sorted(m.instance_id for m in fleet.world.machines if m.instance_id not in fleet.ssm),
        "ledger": ledger,
        "spill_profiles": [  # what the sweeps learned of the bill's week, by quarter-hour (state/spill.py)
            {k: next(iter(v.values())) for k, v in item.items()}
            for item in aws.dynamodb.items()
            if item["pk"]["S"].startswith("spill#")
        ],
    }


# The weekly digest's own words for what costguard's stops saved (digest/weekly/rules/messages.py).
# The digest's claim, in its words now ("The stops costguard made saved *$68,159* on the bill.") and before (a tree
# measured from an older commit: "Stopped machines stayed off 4,820 h: *$42,167 saved*").
CLAIM = re.compile(
    r"The stops costguard made saved \*\$([\d,]+(?:\.\d+)?)\*"
    r"|Stopped machines stayed off [\d,]+ h: \*\$([\d,]+(?:\.\d+)?) saved\*"
)


def posted_claim(messages: Sequence[Any]) -> float | None:
    """What costguard's stops saved, as the weekly digest posted it to Slack at the week's end (parsed from
    its message, never reckoned again here); None when no digest said it, 0 when it said no machine was
    stopped."""
    for message in messages:
        said = json.dumps([message.text, message.blocks])
        if found := CLAIM.search(said):
            return float((found.group(1) or found.group(2)).replace(",", ""))
    if any("costguard stopped no machine" in json.dumps(m.blocks) for m in messages):
        return 0.0
    return None


class WeekBill:
    """Cost Explorer's Savings Plans reports over the true bill of the fleet's days so far (testing/bill.py):
    each plan's utilization, and the eligible usage billed on demand beside it. Today's world: none."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        # day -> plan fees, plan used (at its rate), spill, the on-demand worth of the usage it covered
        self._days: dict[str, tuple[float, float, float, float]] = {}

    def cost_and_usage(self, *args: Any) -> list[Period]:
        raise ApiError("UnsupportedByStandIn", "the week answers no GetCostAndUsage")

    def reports(self) -> Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        if self.fleet.world.bought is None:
            return {}
        return {
            "GetSavingsPlansUtilizationDetails": self._utilization,
            "GetSavingsPlansCoverage": self._coverage,
        }

    def _day(self, day: str) -> tuple[float, float, float, float]:
        if day not in self._days:
            world, fleet = self.fleet.world, self.fleet
            judge = Judge(world)
            begin = world.index(datetime.fromisoformat(day).replace(tzinfo=UTC))
            fees = used = spill = worth = 0.0
            for i in range(max(0, begin), min(begin + 24 * SLOTS_PER_HOUR, fleet.index)):
                hour = judge.slot(fleet.running, i)
                plan = judge.commitments.plans[0]
                fees, used, spill, worth = (
                    fees + hour.plan_fees,
                    used + hour.plan_used * (1 - plan.discount),
                    spill + hour.plan_spill,
                    worth + hour.plan_used,
                )
            if begin + 24 * SLOTS_PER_HOUR <= fleet.index:  # a day whole: kept (Cost Explorer's days are final)
                self._days[day] = (fees, used, spill, worth)
            return fees, used, spill, worth
        return self._days[day]

    def _span(self, params: Mapping[str, Any]) -> tuple[float, float, float, float]:
        start = date.fromisoformat(params["TimePeriod"]["Start"])
        end = date.fromisoformat(params["TimePeriod"]["End"])
        parts = [self._day((start + timedelta(days=d)).isoformat()) for d in range((end - start).days)]
        fees, used, spill, worth = (sum(p[k] for p in parts) for k in range(4))
        return fees, used, spill, worth

    def _utilization(self, params: Mapping[str, Any]) -> dict[str, Any]:
        fees, used, _, worth = self._span(params)
        bought = self.fleet.world.bought
        assert bought is not None
        arn = bought.savings_plans()[0]["savingsPlanArn"]
        detail = plan_use(arn, fees, used, worth)
        return {"SavingsPlansUtilizationDetails": [detail], "TimePeriod": dict(params["TimePeriod"])}

    def _coverage(self, params: Mapping[str, Any]) -> dict[str, Any]:
        _, used, spill, _ = self._span(params)
        plan = self.fleet.world.bought.commitments.plans[0]  # type: ignore[union-attr]
        covered = used / (1 - plan.discount)
        coverage = {
            "SpendCoveredBySavingsPlans": f"{used:.2f}",
            "OnDemandCost": f"{spill:.2f}",
            "TotalCost": f"{used + spill:.2f}",
            "CoveragePercentage": f"{100 * covered / (covered + spill) if covered + spill else 0:.2f}",
        }
        return {
            "SavingsPlansCoverages": [
                {"Attributes": {}, "Coverage": coverage, "TimePeriod": dict(params["TimePeriod"])}
            ]
        }


def deliver_changes(fleet: Fleet, sweep: Any, context: Any, runtime: Any) -> None:
    """EventBridge hands each EC2 state change to the idle stopper (its history; a start-at let go)."""
    changes, fleet.changes = fleet.changes, []
    for instance_id, state, at in changes:
        event = {
            "version": "0",
            "id": f"{instance_id}-{state}-{at:%Y%m%d%H%M}",
            "detail-type": "EC2 Instance State-change Notification",
            "source": "aws.ec2",
            "account": "123456789012",
            "time": f"{at:%Y-%m-%dT%H:%M:%SZ}",
            "region": REGION,
            "resources": [f"arn:aws:ec2:{REGION}:123456789012:instance/{instance_id}"],
            "detail": {"instance-id": instance_id, "state": state},
        }
        with contextlib.suppress(Exception, Killed):  # EventBridge retries; a change not kept: less history
            sweep(event, context(), runtime=runtime)


def people_and_starts(world: World, fleet: Fleet, *, days: int = 7) -> dict[str, Any]:
    """What the week asked of people, and costguard's own starts: restarts owners had to make (and the boot
    they waited for), machines they exempted for good, and the starts costguard made (a start is wasted when no
    work came within 90 minutes of it)."""
    first = world.index(world.start)
    last = min(world.slots, first + days * 24 * SLOTS_PER_HOUR)
    window = 90 // 5
    starts = [(iid, at) for iid, at in fleet.costguard_starts if at >= first]  # a warm week's are not the week's
    wasted = [(iid, at) for iid, at in starts if not any(s.work for s in fleet.by_id[iid].slots[at : at + window])]
    restarts = [iid for iid, at in fleet.owner_restarts if first <= at < last]
    return {
        "owner_restarts": len(restarts),
        # the minutes people waited for the machines they started again to boot (testing/worlds/commitments.py)
        "owner_boot_wait_minutes": sum(
            BOOT_MINUTES.get(fleet.by_id[iid].instance_type.partition(".")[0], 3) for iid in restarts
        ),
        "exempted_by_owners": sum(1 for _, at in fleet.exempted if at >= first),
        "exempted_before_the_week": sum(1 for _, at in fleet.exempted if at < first),
        "costguard_starts": len(starts),
        "costguard_starts_wasted": len(wasted),
    }


DECIDED = ("warn", "stop", "clear-warning", "cancel-stop")  # the idle stopper's decisions the ledger keeps


def trail_counts(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Each decision the ledger keeps, with its trail: every step naming one of the pipeline's rules (the answer
    to why); the steps counted by rule."""
    decided = [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] in DECIDED]
    rules = Counter(step["M"]["rule"]["S"] for i in decided for step in i.get("trail", {}).get("L", []))
    return {
        "decisions": len(decided),
        "decisions_without_trail": sum(1 for i in decided if not i.get("trail", {}).get("L")),
        "trail_steps_by_rule": dict(sorted(rules.items())),
    }


def fault_counts(
    aws: FakeAws, fleet: Fleet, messages: list[Any], plan: FaultPlan | None, warned: list[tuple[str, int]]
) -> dict[str, Any]:
    """What the faults cost: stops without their notice, record or tag; notices told twice; stops of a
    machine someone kept."""
    stopped_ids = [iid for iid, _ in fleet.stops]
    notices: dict[str, int] = defaultdict(int)  # stop notices told, by machine (a message may tell several)
    for message in messages:
        told = {m for i in fleet.by_id for m in _markers(message) if m.startswith(f"cg-stop-{i}-")}
        for marker in told:
            notices[marker[len("cg-stop-") :].rsplit("-", 1)[0]] += 1
        if not told and message.text.startswith(("Stopped idle", "Hibernated idle")):  # code before block ids
            notices[next((i for i in fleet.by_id if i in message.text), "")] += 1
    # A warning again within the grace period is a duplicate: a machine is warned anew only after a
    # whole idle window (or when its warning is older than the data read, hours later).
    last: dict[str, int] = {}
    duplicate_warnings = 0
    for iid, at in warned:
        if iid in last and at - last[iid] <= 8:  # 40 minutes
            duplicate_warnings += 1
        last[iid] = at
    ledger = list(aws.dynamodb.items())
    entries = [i for i in ledger if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "stop"]
    recorded: dict[str, int] = defaultdict(int)
    for item in entries:
        recorded[item["instance_id"]["S"]] += 1
    stops: dict[str, int] = defaultdict(int)
    for iid in stopped_ids:
        stops[iid] += 1
    # Each warning told (its block id names the machine and the warning's time) against the ledger's entries.
    told = {b["block_id"] for m in messages for b in m.blocks if str(b.get("block_id", "")).startswith("cg-warn-")}
    warn_entries = Counter(
        f"cg-warn-{i['instance_id']['S']}-{i['at']['S'][:19].replace('-', '').replace(':', '')}Z"
        for i in ledger
        if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "warn"
    )
    # A notice posted again: a message carrying a block id (one machine's notice) an earlier one carried.
    posted: set[str] = set()
    posted_twice = 0
    for message in messages:
        ids = {str(b.get("block_id", "")) for b in message.blocks} - {""}
        carried = {i for i in ids if i.startswith(("cg-warn-", "cg-stop-", "cg-cancel-"))}
        posted_twice += bool(carried & posted)
        posted |= carried
    return {
        "notices_posted_twice": posted_twice,
        "warnings_without_ledger_record": len(told - set(warn_entries)),
        "warnings_without_ledger_record_ids": sorted(told - set(warn_entries)),
        "duplicate_ledger_records": sum(max(0, recorded[i] - n) for i, n in stops.items())
        + sum(n - 1 for n in warn_entries.values()),
        "faults": {
            "kills": plan.kills if plan else 0,
            "storms": plan.storms if plan else 0,
            "failed_calls": plan.failures if plan else 0,
        },
        "stops_without_notice": sum(max(0, n - notices[i]) for i, n in stops.items()),
        "duplicate_stop_notices": sum(max(0, notices[i] - n) for i, n in stops.items()),
        "stops_without_ledger_record": sum(max(0, n - recorded[i]) for i, n in stops.items()),
        "stopped_without_stopped_at_tag": sum(
            1 for i in stops if not fleet.running[i][fleet.index] and tags_key("stopped-at") not in fleet.tags[i]
        ),
        "duplicate_warnings": duplicate_warnings,
        "stops_after_a_keep": aws.stops_after_keep,
    }


def controls(blocks: Any, instance_id: str) -> dict[str, dict[str, Any]]:
    """What a message offers for one machine, by action: the value each button (or each choice of its line's
    menu) carries."""
    offered: dict[str, dict[str, Any]] = {}
    for block in blocks:
        for element in [*block.get("elements", []), *([block["accessory"]] if "accessory" in block else [])]:
            if element.get("type") == "button" and instance_id in str(element.get("value", "")):
                offered.setdefault(str(element["action_id"]), json.loads(element["value"]))
            for option in element.get("options", []):
                chosen = json.loads(option["value"])
                if chosen.get("i") == instance_id:
                    offered.setdefault(str(chosen["b"]), chosen)
    return offered


def _markers(message: Any) -> set[str]:
    return {str(b.get("block_id", "")) for b in message.blocks} - {""}


def warned_in(message: Any, world: World) -> list[str]:
    """The machines a warning message tells about: by their parts' block ids, or (code from before block
    ids, one machine a message) by its words."""
    marked = [m.removeprefix("cg-warn-").rsplit("-", 1)[0] for m in _markers(message) if m.startswith("cg-warn-")]
    if marked:
        return marked
    found = next((m.instance_id for m in world.machines if m.instance_id in message.text), "")
    return [found] if found and "has been idle for" in message.text else []


def tags_key(name: str) -> str:
    return f"costguard:{name}"


def answer(
    fleet: Fleet,
    rng: random.Random,
    buttons: Any,
    runtime: Any,
    click: Any,
    message: Any,
    instance_id: str,
    context: Any,
    response_url: str,
    *,
    stop_now: bool = True,
) -> None:
    """The owner, if at their desk and in the mood, presses a button on the warning."""
    machine = fleet.by_id[instance_id]
    if not fleet.world.office_hours(machine, fleet.index) or rng.random() >= ANSWER_RATE:
        return
    working = bool(machine.slots[fleet.index].work)
    offers = controls(message.blocks, instance_id)  # its buttons, or the choices of its line's menu
    if working:
        pressed = "costguard.keep_while_busy" if "costguard.keep_while_busy" in offers else "costguard.keep_tomorrow"
    elif stop_now and rng.random() < 0.3 and "costguard.stop_now" in offers:
        pressed = "costguard.stop_now"
    else:
        return
    if pressed not in offers:
        return  # nothing to keep it with here (a message about something else)
    # What the button carries, as Slack hands it over (a stop that keeps a learned start says when).
    value = offers[pressed]
    extra = {"start_at": value["s"]} if "s" in value and "start_at" in click.__dataclass_fields__ else {}
    press(fleet, buttons, runtime, click, message, instance_id, context, response_url, pressed, **extra)


def press(
    fleet: Fleet,
    buttons: Any,
    runtime: Any,
    click: Any,
    message: Any,
    instance_id: str,
    context: Any,
    response_url: str,
    pressed: str,
    **extra: Any,
) -> None:
    """The machine's owner presses `pressed` on `message`: the click as Slack hands it over, through the buttons
    worker, delivered again by SQS after a failure, a few minutes later."""
    machine = fleet.by_id[instance_id]
    user = f"U{sorted({m.owner for m in fleet.world.machines}).index(machine.owner):04d}"
    payload = click(
        button=_button(pressed),
        instance_id=instance_id,
        region=REGION,
        user_id=user,
        user_name=machine.owner.split("@")[0],
        response_url=response_url,
        message_ts=message.ts,
        blocks=tuple(message.blocks),
        action_ts=f"{fleet.now.timestamp():.6f}",  # Slack's time of the press: the ledger's time of the click
        **extra,
    )
    for attempt in range(4):
        runtime.now = lambda k=attempt: fleet.now + timedelta(minutes=3 * k)
        try:
            buttons({"Records": [{"body": payload.to_json()}]}, context(), runtime=runtime)
            break
        except (Exception, Killed):
            continue
    del runtime.now


def offered_in(message: Any) -> list[str]:
    """The machines a message offers a keep for their runs in place of their exemption (idle/words/offers.py)."""
    return [m.removeprefix("cg-offer-") for m in _markers(message) if m.startswith("cg-offer-")]


def accept_offer(
    fleet: Fleet,
    rng: random.Random,
    buttons: Any,
    runtime: Any,
    click: Any,
    message: Any,
    iid: str,
    context: Any,
    slack: Any,
) -> bool:
    """The owner, at their desk, reads the offer: half of them press its "Yes" (its primary button: "Keep it for its
    runs"), the rest leave it. Asked whether anything runs unseen on a machine costguard cannot look inside, the
    owner of a box whose work starts by itself says so ("No, keep holding it"); but a share WRONG_WORD of them (env
    BENCH_WRONG_WORD, none by default) says "Nothing runs unseen" all the same, as people do. True: read."""
    if rng.random() >= ANSWER_RATE:
        return True
    response_url = slack.response_url(message.ts)
    pressed = offers_yes(message, iid)
    if pressed == "costguard.nothing_unseen" and fleet.by_id[iid].automation and rng.random() >= WRONG_WORD:
        pressed = "costguard.keep_holding"
    press(fleet, buttons, runtime, click, message, iid, context, response_url, pressed)
    return True


def offers_yes(message: Any, iid: str) -> str:
    """The action of an offer's "Yes": its actions block's primary button (code from before: "Keep it for its
    runs")."""
    for block in message.blocks:
        if block.get("block_id") == f"cg-offer-{iid}":
            primary = [e for e in block.get("elements", []) if e.get("style") == "primary"]
            if primary:
                return str(primary[0]["action_id"])
    return "costguard.keep_for_runs"


def _button(pressed: str) -> Any:
    from costguard.slack.buttons import Button  # noqa: PLC0415 (after the code tree is on the path)

    return Button(pressed)


# ---------------------------------------------------------------------- the figures
def outcome(
    world: World,
    running: dict[str, list[bool]],
    stops: list[tuple[str, int]],
    warnings: list[tuple[str, int]],
    *,
    days: int = 7,
) -> dict[str, Any]:
    """Idle GPU-hours reclaimed, interruptions and work lost, warnings: over the simulated days, not the
    history day before them."""
    first = world.index(world.start)
    last = min(world.slots, first + days * 24 * SLOTS_PER_HOUR)
    idle = reclaimed = lost = 0.0
    interrupted = set()
    kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # persona: idle, reclaimed GPU-hours
    for m in world.machines:
        kind = m.persona if m.gpu_agent else f"{m.persona} (no GPU agent)"
        for i in range(first, last):
            hours = m.gpus / SLOTS_PER_HOUR
            if not m.slots[i].work:
                idle += hours
                kinds[kind][0] += hours
                if not running[m.instance_id][i]:
                    reclaimed += hours
                    kinds[kind][1] += hours
            elif not running[m.instance_id][i]:
                lost += hours
    causes: dict[str, int] = defaultdict(int)
    which: list[str] = []
    for instance_id, at in stops:
        m = next(x for x in world.machines if x.instance_id == instance_id)
        off = []
        for i in range(at, last):
            if running[instance_id][i]:
                break
            off.append(i)
        if at < first:  # a warm week's stop: an interruption of this week only if work came due in it while off
            off = [i for i in off if i >= first]
            if not any(m.slots[i].work for i in off):
                continue
        if at >= first and m.slots[at].work:  # stopped while at work
            interrupted.add((instance_id, at))
            causes[cause := f"stopped during {m.slots[at].work}"] += 1
            which.append(f"{instance_id} {m.instance_type} {world.at(at):%a %H:%M}: {cause}")
        elif any(m.slots[i].work for i in off):  # work came due while it stayed stopped
            interrupted.add((instance_id, at))
            due = next(i for i in off if m.slots[i].work)
            causes[cause := f"stopped before {m.slots[due].work}"] += 1
            which.append(
                f"{instance_id} {m.instance_type} {world.at(at):%a %H:%M}: {cause} at {world.at(due):%a %H:%M}"
            )
    owners = {m.owner for m in world.machines}
    busy_warnings = sum(
        1 for iid, at in warnings if next(m for m in world.machines if m.instance_id == iid).slots[at].work
    )
    return {
        "machines": len(world.machines),
        "owners": len(owners),
        "idle_gpu_hours": round(idle, 1),
        "reclaimed_gpu_hours": round(reclaimed, 1),
        "reclaimed_percent": round(100 * reclaimed / idle, 1) if idle else 0.0,
        "stops": sum(1 for _, at in stops if at >= first),  # a warm week's are not this week's
        "interruptions": len(interrupted),
        "interruptions_by_cause": dict(sorted(causes.items())),
        "interrupted": sorted(which),
        "work_gpu_hours_lost": round(lost, 1),
        "warnings": len(warnings),
        "warnings_about_busy_machines": busy_warnings,
        "warnings_per_owner_per_day": round(len(warnings) / len(owners) / 7, 2),
        "reclaimed_percent_by_kind": {k: round(100 * r / i, 1) if i else 0.0 for k, (i, r) in sorted(kinds.items())},
    }


def costguard_week(
    code_root: Path,
    seed: int,
    no_ssm_share: float,
    faults: dict[str, Any] | None = None,
    days: int = 7,
    *,
    commitments: bool = False,
    bill: bool = True,
    hard: bool = False,
    history_days: float | None = None,
    warm_days: int = 0,
    dump: Path | None = None,
    decisions: Path | None = None,
) -> dict[str, Any]:
    """costguard's week in a child process, so that any code tree (an older commit) can be measured.
    `commitments`: the commitments world; `bill`: False for costguard with its bill reader off (as before it);
    `hard`: the harder week (testing/worlds/week.py's harder()); `history_days`: what CloudWatch has before the
    week (None: the world's two weeks); `warm_days`: that many days enforced before the week, on the world's
    history, with the state table carried into the week (the figures are the week's only); `dump`: where the
    week's raw record is written (`dump`); `decisions`: where every decision of its sweeps is logged
    (`log_decisions`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "week.json"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        extra = [json.dumps(faults), str(days)]
        if commitments:
            env["BENCH_WORLD"] = "commitments"
        elif hard:
            env["BENCH_WORLD"] = "harder"
        if history_days is not None:
            env["BENCH_HISTORY_DAYS"] = str(history_days)
        if not bill:
            env["BENCH_BILL"] = "off"
        if warm_days:
            env["BENCH_WARM_DAYS"] = str(warm_days)
        if dump is not None:
            env["BENCH_DUMP"] = str(dump)
        if decisions is not None:
            env["BENCH_DECISIONS"] = str(decisions)
        subprocess.run(
            [sys.executable, "-m", "testing.week", str(code_root), str(out), str(seed), str(no_ssm_share), *extra],
            check=True,
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        return dict(json.loads(out.read_text()))


# A sweep's failure to read its region (SweepIncomplete names the read that failed after botocore's retries).
UNREADABLE = re.compile(r"when calling the [a-z0-9]+:(describe|list|get|query|scan|batch_get)")


if __name__ == "__main__":
    code, out_path, seed, share = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    plan = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
    days = int(sys.argv[6]) if len(sys.argv) > 6 else 7
    out_path.write_text(json.dumps(run_costguard(code, seed, share, plan, days)))
