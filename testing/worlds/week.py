"""A seeded, labelled week of an ML team's GPU fleet: what every machine does every 5 minutes, what its
metrics show, and what its activity check would answer.

Every slot is labelled work or idle. Work is anything a person would not want stopped: training runs
with their evals, checkpoints and uploads, jobs waiting on a queue with their GPU memory held,
single-GPU jobs on multi-GPU hosts, single-threaded preprocessing, a notebook in use, a nightly
pipeline. Idle is a machine doing nothing for anyone: a finished run nobody stopped, a notebook left
overnight with its kernel holding GPU memory, a forgotten machine. Metrics see only part of it: the
GPU agent goes silent for hours on some runs, a waiting job shows 0 % everywhere, one busy core is
0.5 % of a 192-vCPU host.

Automation too: nightly cron boxes (a job at a fixed UTC or local hour, every day), and pipeline boxes
that an upstream export triggers in the evening (weekdays, a little jitter). Idle machines are not
silent: the system's own timers and agents (apt, unattended-upgrades, snapd, the SSM agent's update)
take one core for a few minutes a few times a day, at random. The SSM agent's update is not the
system's to the check: its updater runs in the agent's cgroup, where Session Manager shells and Run
Command jobs run too, and only the agent's own programs are the system's there; it is idle time the
check cannot excuse. Some GPU machines run without the CloudWatch agent's GPU plugin but with SSM: only
the activity check on them can see their GPUs.

The check's answers carry what cgroup v2 accounting would say: cumulative CPU seconds since boot, of
the whole machine and of the system's own services, so that a spike can be attributed afterwards.

Owners live in three time zones and answer some warnings in their office hours. Two weeks of history
come before the simulated week (no stops in them), as a fleet that ran before costguard would have.
The same seed gives the same weeks; other seeds give other weeks of the same kinds of work.

Harder weeks (issue 44), each knob off by default so that today's world and its figures stay as they are,
and `harder()` turning them all on: automation boxes whose clocks are UTC on some and their owner's zone on
others (`mixed_clocks`), housekeeping crontab lines on every automation box (every 10 minutes, hourly,
@reboot: `housekeeping`), automation jobs that often begin by waiting with their GPU memory held and nothing
moving (`waiting_jobs`), and the boxes of the schedules world (`schedules`). What the account saw before the
deploy (one day of metrics or two weeks) and the share of machines without the SSM agent are the harness's
(testing/week.py).

The commitments world goes on a day past the week (`AFTER`): the same hours of the week's first day again (its
people's Monday, its jobs' clocks), so that a stop made in the week is judged over its whole off-period, until its
machine runs again, and not cut at the week's end (testing/measured.py). The week's own slots are the same with it
or without it.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypedDict
from zoneinfo import ZoneInfo

from testing.worlds.commitments import EXTRA, Bought, buy

STEP = timedelta(minutes=5)
SLOTS_PER_HOUR = 12
HISTORY = timedelta(days=14)  # before the week: a window to judge, and two weeks for recurring work
WEEK = timedelta(days=7)
AFTER = timedelta(days=1)  # the commitments world past its week: its stops' off-periods seen to their end
TYPES = {  # GPUs, vCPUs
    "g5.xlarge": (1, 4),
    "g5.2xlarge": (1, 8),
    "g5.12xlarge": (4, 48),
    "g5.48xlarge": (8, 192),
    "p4d.24xlarge": (8, 96),
    "p5.48xlarge": (8, 192),
    "p3.2xlarge": (1, 8),  # the commitments world's size-flexible family (testing/worlds/commitments.py)
    "p3.8xlarge": (4, 32),
    "p3.16xlarge": (8, 64),
}
ZONES = ("Europe/Paris", "America/New_York", "Asia/Kolkata")
AUTOMATION = ("pipeline", "nightly_utc", "nightly_local", "evening_pipeline", "waiting_pipeline")
# The schedules world (issue 33): boxes whose cron fires at 22:00 on their owner's weekdays, and whose job
# then waits, GPU memory held and nothing moving, for an upstream export that lands between 00:30 and 05:00.
# Their GPU work starts at a different hour every night; the start that matters is only in their crontab.
WAITING = [
    ("waiting_pipeline", "g5.12xlarge"),
    ("waiting_pipeline", "p4d.24xlarge"),
    ("waiting_pipeline", "g5.2xlarge"),
]
# The system's own services that take a core for a few minutes, as the check's 3-second sample names them.
SYSTEM_BUSY = ("unattended-upgr", "apt-get update", "snapd", "amazon-ssm-agent", "man-db", "packagekitd")
SSM_UPDATE = "amazon-ssm-agent"  # ... its update, run by its updater in the agent's cgroup: not the system's
PLAN = [
    ("trainer", "p4d.24xlarge"),
    ("trainer", "p5.48xlarge"),
    ("trainer", "g5.48xlarge"),
    ("trainer", "g5.12xlarge"),
    ("trainer", "g5.12xlarge"),
    ("single_gpu", "g5.12xlarge"),
    ("single_gpu", "p4d.24xlarge"),
    ("preprocess", "p5.48xlarge"),
    ("preprocess", "g5.48xlarge"),
    ("notebook", "g5.xlarge"),
    ("notebook", "g5.2xlarge"),
    ("notebook", "g5.xlarge"),
    ("notebook", "g5.12xlarge"),
    ("forgotten", "g5.12xlarge"),
    ("forgotten", "p4d.24xlarge"),
    ("forgotten", "g5.2xlarge"),
    ("pipeline", "g5.12xlarge"),
]
# The rest of a 55-machine team: automation boxes, more of the people's machines, and GPU machines whose
# CloudWatch agent has no GPU plugin (True: without it).
MORE = [
    ("nightly_utc", "g5.12xlarge", False),
    ("nightly_utc", "g5.2xlarge", False),
    ("nightly_utc", "p4d.24xlarge", False),
    ("nightly_utc", "g5.xlarge", False),
    ("nightly_local", "g5.2xlarge", False),
    ("nightly_local", "g5.12xlarge", False),
    ("evening_pipeline", "g5.12xlarge", False),
    ("evening_pipeline", "p4d.24xlarge", False),
    ("evening_pipeline", "g5.48xlarge", False),
    ("evening_pipeline", "g5.2xlarge", False),
    ("trainer", "g5.12xlarge", True),
    ("notebook", "g5.2xlarge", True),
    ("forgotten", "g5.12xlarge", True),
    ("single_gpu", "g5.12xlarge", True),
    ("trainer", "p4d.24xlarge", False),
    ("notebook", "g5.xlarge", False),
    ("forgotten", "g5.48xlarge", False),
    ("preprocess", "g5.12xlarge", False),
    ("trainer", "g5.2xlarge", True),
    ("single_gpu", "g5.48xlarge", False),
    ("notebook", "g5.12xlarge", False),
]


def cron(schedule: str, command: str) -> dict[str, object]:
    """A crontab line as the activity check reports it: its schedule and its program's name."""
    return {"k": "cron", "s": schedule, "c": command, "u": "ml"}


@dataclass
class Slot:
    """One machine's 5 minutes."""

    work: str = ""  # the kind of work, "" for idle
    gpu: tuple[float, ...] = ()
    core: float = 1.0  # busiest core %
    cpu: float = 0.5  # CPUUtilization: the average over every vCPU
    gpu_agent: bool = True  # the GPU agent published this slot
    input_s: int | None = None  # seconds since the last input on a terminal, None: nobody logged in
    kernel: str = ""  # "busy", "idle" (a notebook kernel holding GPU memory) or ""
    kernel_idle_s: int = 0
    process: str = ""  # a process busy on a core
    gpu_holder: str = ""  # a non-notebook process holding GPU memory
    system: str = ""  # a system service busy on a core (apt, snapd...): not work
    user_s: float = 0.0  # CPU seconds of everything but the system's own services, this slot
    system_s: float = 0.0  # CPU seconds of the system's own services, this slot


@dataclass
class Machine:
    instance_id: str
    owner: str
    zone: str
    instance_type: str
    persona: str
    hook: str = ""  # the owner's keep-alive hook: its line when it says keep
    gpu_agent: bool = True  # the CloudWatch agent's GPU plugin is installed
    slots: list[Slot] = field(default_factory=list)
    az: str = ""  # its Availability Zone, in the commitments world
    jobs: list[dict[str, object]] = field(default_factory=list)  # its crontab, as the activity check reports it
    clock: str = ""  # the zone its clock is set to ("": its owner's)

    @property
    def gpus(self) -> int:
        return int(TYPES[self.instance_type][0])

    @property
    def vcpus(self) -> int:
        return int(TYPES[self.instance_type][1])

    @property
    def automation(self) -> bool:
        """Its work is started by a clock or by another system, not by a person at a desk."""
        return self.persona in AUTOMATION


class World:
    def __init__(
        self,
        seed: int = 7,
        start: datetime | None = None,
        copies: int = 1,
        *,
        commitments: bool = False,
        schedules: bool = False,
        mixed_clocks: bool = False,
        housekeeping: bool = False,
        waiting_jobs: bool = False,
        after: timedelta | None = None,
    ) -> None:
        """`copies`: that many teams of the same kinds of work (and of 16 people each), for the calls at scale.
        `commitments`: the same team and weeks, with six machines more, in Availability Zones, on the bill's
        commitments and short capacity of testing/worlds/commitments.py (`bought`). `schedules`: the same team
        and weeks, with the boxes whose job begins by waiting (`WAITING`). The harder knobs: the module's
        docstring, and `harder()`. `after`: how long the world goes on past the week (None: `AFTER` for the
        commitments world, none for the others)."""
        self.mixed_clocks, self.housekeeping, self.waiting_jobs = mixed_clocks, housekeeping, waiting_jobs
        self.rng = random.Random(seed)
        self.start = start or datetime(2026, 11, 9, tzinfo=UTC)  # a Monday
        self.begin = self.start - HISTORY
        self.slots = int((HISTORY + WEEK + timedelta(hours=2)) / STEP)  # the week, and sweeps just after it
        self.machines: list[Machine] = []
        self._sums: dict[str, list[tuple[float, float]]] = {}
        people = [(f"person{k}@example.com", ZONES[k % len(ZONES)]) for k in range(16 * copies)]
        plan = ([(persona, kind, False) for persona, kind in PLAN * 2] + MORE) * copies
        for k, (persona, instance_type, no_agent) in enumerate(plan):
            owner, zone = people[k % len(people)]
            machine = Machine(f"i-{k + 1:017x}", owner, zone, instance_type, persona, gpu_agent=not no_agent)
            machine.slots = [Slot(gpu=(0.0,) * machine.gpus) for _ in range(self.slots)]
            getattr(self, f"_{persona}")(machine)
            self._housekeeping(machine)
            self._system_services(machine)
            self._idle_floor(machine)
            self.machines.append(machine)
        self.bought: Bought | None = None
        if schedules:
            for persona, instance_type in WAITING:  # after the others, so theirs are the same
                self._add(people, persona, instance_type)
        if commitments:
            self._commitments(seed, people)
        self.after = (AFTER if commitments else timedelta(0)) if after is None else after
        self._go_on(self.after)

    def _add(self, people: list[tuple[str, str]], persona: str, instance_type: str) -> Machine:
        k = len(self.machines)
        owner, zone = people[k % len(people)]
        machine = Machine(f"i-{k + 1:017x}", owner, zone, instance_type, persona)
        machine.slots = [Slot(gpu=(0.0,) * machine.gpus) for _ in range(self.slots)]
        getattr(self, f"_{persona}")(machine)
        self._housekeeping(machine)
        self._system_services(machine)
        self._idle_floor(machine)
        self.machines.append(machine)
        return machine

    def _commitments(self, seed: int, people: list[tuple[str, str]]) -> None:
        """The commitments world: its machines more (after the others, so theirs are the same), then what the
        team bought and where its machines run."""
        for persona, instance_type in EXTRA:
            self._add(people, persona, instance_type)
        self.bought = buy(seed, self.begin, self.start, self.start + WEEK + timedelta(hours=2), self.machines)
        for machine in self.machines:
            machine.az = self.bought.zone[machine.instance_id]
            gone = self.bought.gone.get(machine.instance_id)
            if gone is not None:  # terminated with its Capacity Block: no work, no signal after
                for i in range(max(0, self.index(gone)), self.slots):
                    machine.slots[i] = Slot(gpu=(0.0,) * machine.gpus, core=0.0, cpu=0.0, gpu_agent=False)

    def _go_on(self, after: timedelta) -> None:
        """The world past its week, for `after`: each slot a copy of the same hour of the same weekday a week
        before (drawn after the week is whole, with no draw of its own: the week's slots are unchanged). A
        machine its Capacity Block took is gone in them too."""
        more, week = int(after / STEP), int(WEEK / STEP)
        for machine in self.machines:
            gone = self.bought.gone.get(machine.instance_id) if self.bought else None
            for i in range(self.slots, self.slots + more):
                slot = dataclasses.replace(machine.slots[i - week])
                if gone is not None and i >= self.index(gone):
                    slot = Slot(gpu=(0.0,) * machine.gpus, core=0.0, cpu=0.0, gpu_agent=False)
                machine.slots.append(slot)
        self.slots += more

    def exists(self, machine: Machine, index: int) -> bool:
        """The machine is there (not yet terminated) in this slot."""
        gone = self.bought.gone.get(machine.instance_id) if self.bought else None
        return gone is None or index < self.index(gone)

    # ------------------------------------------------------------------ time
    def at(self, index: int) -> datetime:
        return self.begin + STEP * index

    def index(self, moment: datetime) -> int:
        return int((moment - self.begin) / STEP)

    def local(self, machine: Machine, index: int) -> datetime:
        return self.at(index).astimezone(ZoneInfo(machine.zone))

    def office_hours(self, machine: Machine, index: int) -> bool:
        local = self.local(machine, index)
        return local.weekday() < 5 and 9 <= local.hour < 18

    def _days(self, machine: Machine) -> list[int]:
        """The slot index of each local midnight in the simulated span."""
        first = self.local(machine, 0).replace(hour=0, minute=0, second=0, microsecond=0)
        return [
            self.index(day.astimezone(UTC))
            for day in (first + timedelta(days=d) for d in range(int((HISTORY + WEEK) / timedelta(days=1)) + 3))
            if 0 <= self.index(day.astimezone(UTC)) < self.slots
        ] or [0]

    def _span(self, machine: Machine, start: int, slots: int, work: str, **fields: object) -> None:
        for i in range(max(0, start), min(self.slots, start + slots)):
            slot = machine.slots[i]
            slot.work = work
            for key, value in fields.items():
                setattr(slot, key, value)

    # ------------------------------------------------------------------ personas
    def _training_run(self, m: Machine, start: int, hours: float) -> int:
        """A run: maybe a queue wait, then training with evals, checkpoints and maybe an agent gap, then
        the upload. Returns the slot after it."""
        rng = self.rng
        if rng.random() < 0.35:  # waits on a queue or data: GPU memory held, nothing moving
            wait = int(rng.uniform(1.5, 4) * SLOTS_PER_HOUR)
            self._span(m, start, wait, "queue wait", gpu_holder="python train.py", core=1.5, cpu=0.3)
            start += wait
        length = int(hours * SLOTS_PER_HOUR)
        gap_at = start + rng.randrange(max(1, length - 48)) if rng.random() < 0.3 else -1
        for s in range(start, min(self.slots, start + length)):
            offset = s - start
            if offset % 24 in (20, 21, 22, 23):  # an eval every 2 h: GPU low, one core busy
                self._span(
                    m,
                    s,
                    1,
                    "eval",
                    gpu=(2.0,) * m.gpus,
                    core=100.0,
                    cpu=100.0 / m.vcpus + 0.5,
                    process="python eval.py",
                )
            elif offset % 36 in (30, 31):  # a checkpoint every 3 h: GPU at 0, writing to S3
                self._span(m, s, 1, "checkpoint", gpu=(0.0,) * m.gpus, core=70.0, cpu=1.5, process="python train.py")
            else:
                busy = tuple(rng.uniform(75, 98) for _ in range(m.gpus))
                self._span(
                    m, s, 1, "training", gpu=busy, core=100.0, cpu=rng.uniform(4, 14), gpu_holder="python train.py"
                )
            if 0 <= gap_at <= s < gap_at + 5 * SLOTS_PER_HOUR:
                m.slots[s].gpu_agent = False  # nvidia-smi hung: the run goes on, unseen
        end = start + length
        upload = int(rng.uniform(0.4, 1.0) * SLOTS_PER_HOUR)
        self._span(
            m, end, upload, "upload", gpu=(0.0,) * m.gpus, core=85.0, cpu=100.0 / m.vcpus + 1, process="aws s3 cp"
        )
        return end + upload

    def _trainer(self, m: Machine) -> None:
        for day in self._days(m):
            if self.local(m, day).weekday() < 5 and self.rng.random() < 0.55:
                start = day + int(self.rng.uniform(9.5, 12) * SLOTS_PER_HOUR)
                self._training_run(m, start, self.rng.uniform(5, 26))

    def _single_gpu(self, m: Machine) -> None:
        for day in self._days(m):
            if self.local(m, day).weekday() < 5 and self.rng.random() < 0.6:
                start = day + int(self.rng.uniform(9, 14) * SLOTS_PER_HOUR)
                length = int(self.rng.uniform(4, 14) * SLOTS_PER_HOUR)
                one = tuple(85.0 if g == m.gpus - 1 else 0.0 for g in range(m.gpus))
                self._span(
                    m,
                    start,
                    length,
                    "single-GPU job",
                    gpu=one,
                    core=100.0,
                    cpu=100.0 / m.vcpus * 1.5,
                    gpu_holder="python finetune.py",
                )

    def _preprocess(self, m: Machine) -> None:
        for day in self._days(m):
            if self.local(m, day).weekday() < 5:
                start = day + int(self.rng.uniform(9, 13) * SLOTS_PER_HOUR)
                length = int(self.rng.uniform(2, 6) * SLOTS_PER_HOUR)
                self._span(
                    m,
                    start,
                    length,
                    "preprocessing",
                    core=100.0,
                    cpu=100.0 / m.vcpus + 0.2,
                    process="python tokenize.py",
                )
                if self.rng.random() < 0.5:
                    self._training_run(m, start + length, self.rng.uniform(3, 8))

    def _notebook(self, m: Machine) -> None:
        for day in self._days(m):
            local = self.local(m, day)
            if local.weekday() >= 5:
                continue
            begin, end = day + int(9.5 * SLOTS_PER_HOUR), day + 18 * SLOTS_PER_HOUR
            meeting = day + int(self.rng.uniform(13.5, 15) * SLOTS_PER_HOUR)
            for s in range(begin, min(end, self.slots)):
                if meeting <= s < meeting + int(2.5 * SLOTS_PER_HOUR) or 12 * 12 <= s - day < 13 * 12 + 6:
                    continue  # a long meeting and lunch: nobody there
                burst = self.rng.random() < 0.3
                gpu = tuple(self.rng.uniform(10, 45) if burst else 0.0 for _ in range(m.gpus))
                self._span(
                    m,
                    s,
                    1,
                    "notebook in use",
                    gpu=gpu,
                    core=60.0 if burst else 8.0,
                    cpu=3.0,
                    input_s=self.rng.randrange(5, 240),
                    kernel="busy" if burst else "idle",
                    kernel_idle_s=30,
                )
            for s in range(begin, min(end + 14 * SLOTS_PER_HOUR, self.slots)):
                if not m.slots[s].work:  # the kernel stays up overnight, holding its GPU memory
                    m.slots[s].kernel = "idle"

    def _forgotten(self, m: Machine) -> None:
        """Started for a run on the week's first day, then forgotten."""
        monday = next((d for d in self._days(m) if d >= self.index(self.start)), 0)
        self._training_run(m, monday + 10 * SLOTS_PER_HOUR, self.rng.uniform(2, 5))

    def _pipeline(self, m: Machine) -> None:
        m.hook = "nightly feature pipeline box: kept for its 01:00 run"
        m.jobs = [cron("0 1 * * *", "pipeline.py")]
        for day in self._clock_days(m):
            self._span(
                m,
                day + SLOTS_PER_HOUR,
                2 * SLOTS_PER_HOUR,
                "nightly pipeline",
                gpu=tuple(self.rng.uniform(60, 90) for _ in range(m.gpus)),
                core=100.0,
                cpu=20.0,
                gpu_holder="python pipeline.py",
            )

    def _job(self, m: Machine, start: int, slots: int, work: str, holder: str) -> None:
        """An automation job: its GPUs busy, one core feeding them, its process holding GPU memory. With
        `waiting_jobs`, half its runs first wait on a queue or upstream data (half an hour to two and a half
        hours): GPU memory held, nothing moving."""
        if self.waiting_jobs and work != "pipeline" and self.rng.random() < 0.5:
            wait = int(self.rng.uniform(0.5, 2.5) * SLOTS_PER_HOUR)
            self._span(m, start, wait, "queue wait", gpu_holder=holder, core=1.5, cpu=0.3)
            start += wait
        self._span(
            m,
            start,
            slots,
            work,
            gpu=tuple(self.rng.uniform(55, 95) for _ in range(m.gpus)),
            core=100.0,
            cpu=min(100.0, 100.0 / m.vcpus * 2 + 2),
            gpu_holder=holder,
        )

    def _utc_days(self) -> list[int]:
        first = self.begin.replace(hour=0, minute=0, second=0, microsecond=0)
        days = (first + timedelta(days=d) for d in range(int((HISTORY + WEEK) / timedelta(days=1)) + 2))
        return [self.index(day) for day in days if 0 <= self.index(day) < self.slots]

    def _nightly_utc(self, m: Machine) -> None:
        """A cron job at a fixed UTC time every night (the box's clock is UTC): batch scoring, an index."""
        at = self.rng.randrange(0, 6) * SLOTS_PER_HOUR + self.rng.choice((0, 3, 6))  # 00:00-05:30 UTC
        length = int(self.rng.uniform(0.6, 1.6) * SLOTS_PER_HOUR)
        m.clock, m.jobs = "UTC", [cron(f"{at % SLOTS_PER_HOUR * 5} {at // SLOTS_PER_HOUR} * * *", "nightly.py")]
        for day in self._utc_days():
            jitter = self.rng.choice((0, 0, 0, 1))  # the job's own start-up: a few minutes some nights
            self._job(m, day + at + jitter, length + self.rng.randrange(-1, 3), "nightly cron job", "python nightly.py")

    def _nightly_local(self, m: Machine) -> None:
        """A cron job at a fixed hour of its owner's clock (the box follows the team's zone), every night."""
        at = self.rng.choice((22, 23, 1, 2, 3)) * SLOTS_PER_HOUR + self.rng.choice((0, 6))
        length = int(self.rng.uniform(0.7, 2.0) * SLOTS_PER_HOUR)
        m.jobs = [cron(f"{at % SLOTS_PER_HOUR * 5} {at // SLOTS_PER_HOUR} * * *", "refresh.py")]
        for day in self._days(m):
            self._job(m, day + at, length + self.rng.randrange(-2, 3), "nightly cron job", "python refresh.py")

    def _evening_pipeline(self, m: Machine) -> None:
        """A pipeline step the upstream data export triggers on weekday evenings, give or take 20 minutes."""
        at = int(self.rng.uniform(18.5, 21) * SLOTS_PER_HOUR)
        for day in self._days(m):
            if self.local(m, day).weekday() >= 5:
                continue
            start = day + at + self.rng.randrange(-4, 5)
            length = int(self.rng.uniform(1.0, 2.5) * SLOTS_PER_HOUR)
            self._job(m, start, length, "evening pipeline", "python features.py")

    def _waiting_pipeline(self, m: Machine) -> None:
        """Cron at 22:00 on weekdays (its owner's clock); the job loads its model and waits for the upstream
        export (GPU memory held, nothing moving) that lands between 00:30 and 05:00, then works 1 to 2 hours."""
        m.jobs = [cron("0 22 * * 1-5", "run_pipeline.sh")]
        for day in self._clock_days(m):
            if self._on_clock(m, day).weekday() >= 5:
                continue
            fires = day + 22 * SLOTS_PER_HOUR
            lands = day + 24 * SLOTS_PER_HOUR + int(self.rng.uniform(0.5, 5) * SLOTS_PER_HOUR)
            self._span(m, fires, lands - fires, "waiting for upstream data", gpu_holder="run_pipeline.sh", cpu=0.3)
            self._job(m, lands, int(self.rng.uniform(1, 2) * SLOTS_PER_HOUR), "pipeline", "run_pipeline.sh")

    def _clock_days(self, m: Machine) -> list[int]:
        """The midnights of the box's clock: with `mixed_clocks`, one box in two of those that follow their
        owner's zone runs on UTC instead (its clock said so when it was set up), and its check says UTC."""
        if self.mixed_clocks and not m.clock and int(m.instance_id[2:], 16) % 2:
            m.clock = "UTC"
        return self._utc_days() if m.clock == "UTC" else self._days(m)

    def _on_clock(self, m: Machine, index: int) -> datetime:
        return self.at(index) if m.clock == "UTC" else self.local(m, index)

    def _housekeeping(self, m: Machine) -> None:
        """With `housekeeping`: an automation box's crontab has the lines every box has beside its job (a
        health ping every 10 minutes, an hourly log rotation, a mount at boot); each runs for a second or
        two, nothing a metric sees. They are not the box's work: its work is its job."""
        if self.housekeeping and m.automation:
            m.jobs = [
                cron("*/10 * * * *", "healthcheck.sh"),
                cron("0 * * * *", "logrotate"),
                cron("@reboot", "mount-data.sh"),
                *m.jobs,
            ]

    def _system_services(self, m: Machine) -> None:
        """The system's own work on idle machines: apt's and snapd's timers at random times, and the daily
        unattended upgrade after 06:00 UTC: one core for 5 to 15 minutes. Never work."""
        for day in self._utc_days():
            starts = [day + self.rng.randrange(24 * SLOTS_PER_HOUR) for _ in range(self.rng.randint(1, 3))]
            starts.append(day + 6 * SLOTS_PER_HOUR + self.rng.randrange(SLOTS_PER_HOUR))
            for start in starts:
                name = self.rng.choice(SYSTEM_BUSY)
                for i in range(start, min(self.slots, start + self.rng.randint(1, 3))):
                    slot = m.slots[i]
                    if not slot.work and not slot.process:
                        slot.system, slot.core = name, 100.0
                        slot.system_s = self.rng.uniform(240, 300)

    def _idle_floor(self, m: Machine) -> None:
        """What every slot costs the CPU: the agents and the system's timers (the system's own), and for
        everything else the work, or, on an idle machine, sshd, cron and an idle shell. CPUUtilization
        is the average of it over the vCPUs; an idle busiest core shows the background's few percent."""
        if not m.gpu_agent:
            for slot in m.slots:
                slot.gpu_agent = False
        for slot in m.slots:
            if slot.system == SSM_UPDATE:  # its updater's CPU: the check cannot call it the system's
                slot.user_s, slot.system_s = slot.system_s, 0.0
            slot.system_s += self.rng.uniform(0.5, 1.5)
            if slot.work or slot.process:
                slot.user_s = slot.cpu * m.vcpus * 3  # percent of every vCPU for 300 s
                continue
            slot.user_s += self.rng.uniform(0.3, 2.0)
            slot.cpu = (slot.user_s + slot.system_s) / (m.vcpus * 3)
            if not slot.system:
                slot.core = 4.0

    # ------------------------------------------------------------------ what the machine says
    def report(self, machine: Machine, index: int, *, boot: int = 0, cgroups: bool = False) -> dict[str, object]:
        """The activity check's version-1 report for this slot. `cgroups`: the check that reports each GPU
        and cgroup v2's CPU accounting since the machine's last start (`boot`, a slot), and leaves the
        system's own services out of its busy processes; without it, the check before them."""
        slot = machine.slots[min(index, self.slots - 1)]
        at = int(self.at(index).timestamp())
        out: dict[str, object] = {"v": 1, "at": at, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None}
        if slot.input_s is not None:
            out["sessions"] = [{"tty": "pts/0", "idle_s": slot.input_s}]
        else:
            last = self._last_input(machine, index)
            out["sessions"] = [{"tty": "pts/0", "idle_s": last}] if last is not None else []
        if slot.kernel:
            idle = slot.kernel_idle_s if slot.work else 6 * 3600
            out["kernels"] = [{"state": slot.kernel, "idle_s": idle}]
            out["gpu"] = [{"name": "python -m ipykernel_launcher", "mib": 6000, "notebook": True}]
        if slot.process and slot.core >= 50:
            out["cpu"] = [{"name": slot.process, "cpu": slot.core, "notebook": False}]
        elif slot.system and not cgroups:  # the older check lists the system's own busy processes too
            out["cpu"] = [{"name": slot.system, "cpu": slot.core, "notebook": False}]
        elif slot.system == SSM_UPDATE:  # ... and this one is not the system's to the check of today
            out["cpu"] = [{"name": "updater", "cpu": slot.core, "notebook": False}]
        if slot.gpu_holder:
            held: list[object] = list(out["gpu"])  # type: ignore[call-overload]
            out["gpu"] = [*held, {"name": slot.gpu_holder, "mib": 30000, "notebook": False}]
        if machine.hook:
            out["hook"] = {"exit": 0, "line": machine.hook}
        if cgroups:  # ... and the check of today reports the machine's crontab (older readers ignore it)
            listed = len(machine.jobs)
            out["jobs"] = {"tz": machine.clock or machine.zone, "found": listed, "sys": 4, "list": machine.jobs}
            held_mib = 30000 if slot.gpu_holder else 6000 if slot.kernel else 0
            out["gpus"] = [{"i": g, "u": round(u), "m": held_mib + 3} for g, u in enumerate(slot.gpu)]
            user, system = self._cpu_since(machine, boot, index)
            out["cg"] = {"v": 2, "boot": f"{machine.instance_id}-{boot}", "top": round(user + system, 1), "sys": system}
        return out

    def _cpu_since(self, machine: Machine, boot: int, index: int) -> tuple[float, float]:
        """CPU seconds of everything but the system's services, and of them, over the slots [boot, index)."""
        sums = self._sums.get(machine.instance_id)
        if sums is None:
            user, system, sums = 0.0, 0.0, [(0.0, 0.0)]
            for slot in machine.slots:
                user, system = user + slot.user_s, system + slot.system_s
                sums.append((user, system))
            self._sums[machine.instance_id] = sums
        (u0, s0), (u1, s1) = sums[max(0, boot)], sums[max(0, min(index, self.slots))]
        return round(u1 - u0, 1), round(s1 - s0, 1)

    def _last_input(self, machine: Machine, index: int) -> int | None:
        for back in range(index, max(-1, index - 24 * SLOTS_PER_HOUR), -1):
            if machine.slots[back].input_s is not None:
                return (index - back) * 300 + (machine.slots[back].input_s or 0)
        return None


class Knobs(TypedDict):
    schedules: bool
    mixed_clocks: bool
    housekeeping: bool
    waiting_jobs: bool


def harder() -> Knobs:
    """The harder week's knobs, all on (issue 44): `World(seed, **harder())`."""
    return {"schedules": True, "mixed_clocks": True, "housekeeping": True, "waiting_jobs": True}
