"""The activity check on the machine: what its SSM answer says, and what that means. Pure: no I/O.

The check (the costguard SSM document, a fixed read-only script) prints one JSON object, schema
version 1 (docs/rules.md, "The activity check"). Metrics cannot see a person who logged in a minute
ago, a job waiting on a queue with its GPU memory held, or what a team knows its own jobs look like;
the check can. Work anywhere is work: recent input, a busy or recently used Jupyter kernel, a process
busy on a CPU core, a process that is not a notebook kernel holding GPU memory (a job alive and
waiting), or the owner's keep-alive hook saying keep. An idle notebook kernel holding GPU memory is
still idle: that is the forgotten notebook costguard exists for. The system's own services (apt,
snapd, the agents: the document's list) are not work: the check leaves them out of its busy processes.

Two additive fields, which older readers ignore: `gpus`, each GPU's utilization and memory as
nvidia-smi sees them; and `cg`, cgroup v2's CPU accounting since boot (the whole machine's, and the
system's own services'), from which costguard attributes the CPU between two answers. And `jobs`: the
machine's own scheduled jobs (crontabs, systemd timers, the at queue), read by `jobs.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from costguard.core.formatting import duration
from costguard.idle.rules.jobs import MachineJobs, parse_jobs
from costguard.idle.rules.judgement import Verdict

SCHEMA_VERSION = 1
HOOK_SAYS = "the owner's keep-alive hook says keep"  # the reason, before the hook's line (": ...") where it said one
MAX_NAME = 60


class CheckState(StrEnum):
    ANSWERED = "answered"
    NO_AGENT = "no-agent"  # not managed by SSM: judged on metrics alone, listed in the digest's hygiene
    NO_ANSWER = "no-answer"  # managed, but offline, failed, late or unreadable: insufficient data
    NOT_ASKED = "not-asked"  # no activity check configured, or dry-run


@dataclass(frozen=True)
class Session:
    tty: str
    idle_s: int


@dataclass(frozen=True)
class Kernel:
    state: str  # Jupyter's execution_state: busy, idle, starting
    idle_s: int


@dataclass(frozen=True)
class Process:
    name: str
    cpu: float = 0.0  # percent of one core, over the check's sample
    gpu_mib: int = 0
    notebook: bool = False  # a Jupyter kernel


@dataclass(frozen=True)
class Gpu:
    """One GPU as nvidia-smi saw it at the check: utilization (its last sample period) and memory used."""

    index: int
    util: float
    mib: int


@dataclass(frozen=True)
class CpuAccount:
    """cgroup v2's cumulative CPU seconds since the machine booted: of every cgroup, and of the system's
    own services among them (ended ones too, from systemd's journal). Comparable only within one boot."""

    boot: str
    total_s: float
    system_s: float


@dataclass(frozen=True)
class ActivityReport:
    sessions: tuple[Session, ...] = ()
    kernels: tuple[Kernel, ...] = ()
    cpu: tuple[Process, ...] = ()
    gpu: tuple[Process, ...] = ()
    hook_exit: int | None = None  # None: no hook installed
    hook_line: str = ""
    errors: tuple[str, ...] = ()
    gpus: tuple[Gpu, ...] | None = None  # None: not reported (an older check, or nvidia-smi failed)
    cpu_account: CpuAccount | None = None  # None: not reported, or not cgroup v2
    at: int = 0  # the machine's clock when it answered (epoch seconds)
    kernel_processes: int = 0  # notebook kernels' processes, whether or not a Jupyter server lists them
    jobs: MachineJobs | None = None  # the machine's scheduled jobs; None: not reported (an older check)

    def blind(self) -> str:
        """What the check could not look at that certain idleness needs, or "": a Jupyter server it could
        not ask (its kernels are unknown, not none), nvidia-smi failing or missing (Trainium, Inferentia,
        Gaudi: GPU memory held is unknown, not none), or the owner's hook failing or out of time."""
        return next((e for e in self.errors if e.startswith(BLINDING)), "")


@dataclass(frozen=True)
class ActivityCheck:
    """What came back from one machine."""

    state: CheckState
    report: ActivityReport | None = None
    detail: str = ""  # why there is no report


@dataclass(frozen=True)
class ActivityJudgement:
    verdict: Verdict
    reason: str
    notes: tuple[str, ...] = field(default=())  # what is worth telling even when idle
    by_hook: bool = False  # busy on the owner's keep-alive hook alone: nothing else on the machine was at work


def without_hook(check: ActivityCheck) -> ActivityCheck:
    """The check of a machine its owner keeps for its runs in place of its keep-alive hook
    (`costguard:keep-for-runs=ignore-hook`): the hook's word, and its failure, are not asked; every other sign of
    work still is."""
    return check if check.report is None else replace(check, report=_hookless(check.report))


def _hookless(report: ActivityReport) -> ActivityReport:
    """The report as it would read without the owner's hook: neither its word nor its failure."""
    errors = tuple(e for e in report.errors if not e.startswith("hook"))
    return replace(report, hook_exit=None, hook_line="", errors=errors)


# The check's errors that hide a kernel, a process on a GPU, or the owner's word (a hook that could not run).
BLINDING = ("jupyter", "nvidia-smi", "hook")


class ReportError(ValueError):
    """The check's output is not a version-1 report."""


def parse_report(output: str) -> ActivityReport:
    """The JSON object the check printed (the last line that is one), or ReportError."""
    line = next((ln for ln in reversed(output.strip().splitlines()) if ln.startswith("{")), "")
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ReportError(f"not JSON: {output.strip()[:80]!r}") from exc
    if not isinstance(raw, Mapping) or raw.get("v") != SCHEMA_VERSION:
        raise ReportError(f"not a version-{SCHEMA_VERSION} report")
    if raw.get("error"):
        raise ReportError(f"the check failed on the machine: {_text(raw.get('error'))}")
    hook = raw.get("hook")
    return ActivityReport(
        sessions=tuple(Session(_text(s.get("tty")), _int(s.get("idle_s"))) for s in _objects(raw, "sessions")),
        kernels=tuple(Kernel(_text(k.get("state")), _int(k.get("idle_s"))) for k in _objects(raw, "kernels")),
        cpu=tuple(_process(p) for p in _objects(raw, "cpu")),
        gpu=tuple(_process(p) for p in _objects(raw, "gpu")),
        hook_exit=_exit_code(hook),
        hook_line=_text(hook.get("line")) if isinstance(hook, Mapping) else "",
        errors=tuple(_text(e) for e in raw.get("errors") or () if isinstance(e, str)),
        gpus=_gpus(raw.get("gpus")),
        cpu_account=_cpu_account(raw.get("cg")),
        at=_int(raw.get("at")),
        kernel_processes=_int(raw.get("kp")),
        jobs=parse_jobs(raw.get("jobs")),
    )


MAX_GPUS = 16


def _gpus(value: Any) -> tuple[Gpu, ...] | None:
    """Each GPU's figures; None when the check did not report them, or reported them unreadably (a GPU
    whose figures cannot be read must not pass for an idle one)."""
    if not isinstance(value, list) or not value:
        return None
    out = []
    for raw in value[:MAX_GPUS]:
        if not isinstance(raw, Mapping) or not all(_number(raw.get(k)) for k in ("i", "u", "m")):
            return None
        out.append(Gpu(_int(raw.get("i")), min(100.0, _float(raw.get("u"))), _int(raw.get("m"))))
    return tuple(out)


def _cpu_account(value: Any) -> CpuAccount | None:
    """cgroup v2's figures, or None (cgroup v1, no figures, or figures that do not add up)."""
    if not isinstance(value, Mapping) or value.get("v") != 2:
        return None
    boot, total, system = value.get("boot"), value.get("top"), value.get("sys")
    if not isinstance(total, int | float) or not isinstance(system, int | float):
        return None
    if not isinstance(boot, str) or not boot or not _number(total) or not _number(system):
        return None
    if float(system) > float(total) * 1.01 + 1:  # the system's part of more than the whole: unreadable
        return None
    return CpuAccount(boot[:40], float(total), float(system))


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def alive(report: ActivityReport, *, window_minutes: int, busy_core_percent: float) -> str | None:
    """What the check saw alive, for the shorter wait of certain idleness: anything at all; None when
    nothing. Stricter than `judge_activity`: any Jupyter kernel (even idle: it holds someone's state) and
    any process holding GPU memory count; input is looked for over the whole of `window_minutes`."""
    if report.hook_exit == 0:
        said = f": {report.hook_line}" if report.hook_line else ""
        return f"{HOOK_SAYS}{said}"
    recent = [s for s in report.sessions if s.idle_s < window_minutes * 60]
    if recent:
        last = min(recent, key=lambda s: s.idle_s)
        return f"someone typed in {last.tty} {_ago(last.idle_s)}"
    kernels = max(len(report.kernels), report.kernel_processes)
    if kernels:
        return f"{kernels} Jupyter kernel{'s' if kernels > 1 else ''} alive"
    hot = [p for p in report.cpu if p.cpu >= busy_core_percent]
    if hot:
        top = max(hot, key=lambda p: p.cpu)
        return f"{top.name} is using {top.cpu:.0f}% of a CPU core"
    holders = [p for p in report.gpu if p.gpu_mib > 0]
    if holders:
        top = max(holders, key=lambda p: p.gpu_mib)
        return f"{top.name} holds {_mib(top.gpu_mib)} of GPU memory"
    return None


def judge_activity(report: ActivityReport, *, window_minutes: int, busy_core_percent: float) -> ActivityJudgement:
    """Busy on any sign of work within the idle window; else idle, with what is worth saying."""
    window_s = window_minutes * 60
    if report.hook_exit == 0:
        said = f": {report.hook_line}" if report.hook_line else ""
        # the hook's word alone, where the check saw everything else: nothing else at work, and nothing it could
        # not look at (a Jupyter server it could not ask, nvidia-smi failing) beside the hook
        others = _hookless(report)
        alone = judge_activity(others, window_minutes=window_minutes, busy_core_percent=busy_core_percent)
        by_hook = alone.verdict is Verdict.IDLE and not others.blind()
        return ActivityJudgement(Verdict.BUSY, f"{HOOK_SAYS}{said}", by_hook=by_hook)
    recent = [s for s in report.sessions if s.idle_s < window_s]
    if recent:
        last = min(recent, key=lambda s: s.idle_s)
        return ActivityJudgement(Verdict.BUSY, f"someone typed in {last.tty} {_ago(last.idle_s)}")
    if any(k.state == "busy" for k in report.kernels):
        return ActivityJudgement(Verdict.BUSY, "a Jupyter kernel is running a cell")
    used = [k for k in report.kernels if k.idle_s < window_s]
    if used:
        return ActivityJudgement(Verdict.BUSY, f"a notebook was used {_ago(min(k.idle_s for k in used))}")
    hot = [p for p in report.cpu if p.cpu >= busy_core_percent]
    if hot:
        top = max(hot, key=lambda p: p.cpu)
        return ActivityJudgement(Verdict.BUSY, f"{top.name} is using {top.cpu:.0f}% of a CPU core")
    jobs = [p for p in report.gpu if not p.notebook and p.gpu_mib > 0]
    if jobs:
        top = max(jobs, key=lambda p: p.gpu_mib)
        return ActivityJudgement(
            Verdict.BUSY, f"{top.name} holds {_mib(top.gpu_mib)} of GPU memory: a job alive and waiting"
        )
    notes = []
    kernels = [p for p in report.gpu if p.notebook and p.gpu_mib > 0]
    if kernels:
        held = sum(p.gpu_mib for p in kernels)
        notes.append(f"an idle notebook kernel holds {_mib(held)} of GPU memory")
    quiet = f"last input {_ago(min(s.idle_s for s in report.sessions))}" if report.sessions else "nobody logged in"
    return ActivityJudgement(Verdict.IDLE, f"activity check: {quiet}, no busy process", tuple(notes))


def memory_at_work(check: ActivityCheck, memory_held: str) -> str | None:
    """GPU memory held (the metrics' `memory_held`, "" for none) on a machine whose check did not answer: work,
    why; None where the check answered (it tells a job's process from an idle notebook kernel, and says which
    holds the memory) or no memory was held. A job waiting on a queue or on data holds its GPU memory at 0 %:
    without the check, nothing tells it from a forgotten notebook, and missing data is never idleness."""
    if not memory_held or check.state is CheckState.ANSWERED:
        return None
    return f"{memory_held} at 0 % utilization: a job alive and waiting, as far as metrics can tell"


def _ago(seconds: int) -> str:
    return f"{duration(seconds // 60)} ago" if seconds >= 60 else f"{seconds} s ago"


def _mib(mib: int) -> str:
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib} MiB"


def _objects(raw: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = raw.get(key)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _process(raw: Mapping[str, Any]) -> Process:
    return Process(
        name=_text(raw.get("name")) or "a process",
        cpu=_float(raw.get("cpu")),
        gpu_mib=_int(raw.get("mib")),
        notebook=raw.get("notebook") is True,
    )


def _exit_code(hook: Any) -> int | None:
    if not isinstance(hook, Mapping):
        return None
    code = hook.get("exit")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _text(value: Any) -> str:
    return value[:MAX_NAME] if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else 0.0
