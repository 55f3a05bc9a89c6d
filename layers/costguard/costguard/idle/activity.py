"""The activity check on the machine: what its SSM answer says, and what that means. Pure: no I/O.

The check (the costguard SSM document, a fixed read-only script) prints one JSON object, schema
version 1 (docs/rules.md, "The activity check"). Metrics cannot see a person who logged in a minute ago, a
job waiting on a queue with its GPU memory held, or what a team knows its own jobs look like; the
check can. Work anywhere is work: recent input, a busy or recently used Jupyter kernel, a process
busy on a CPU core, a process that is not a notebook kernel holding GPU memory (a job alive and
waiting), or the owner's keep-alive hook saying keep. An idle notebook kernel holding GPU memory is
still idle: that is the forgotten notebook costguard exists for.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from costguard.core.formatting import duration
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.decision import Action, Decision
from costguard.idle.judgement import Verdict
from costguard.idle.report import RegionReport

SCHEMA_VERSION = 1
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
class ActivityReport:
    sessions: tuple[Session, ...] = ()
    kernels: tuple[Kernel, ...] = ()
    cpu: tuple[Process, ...] = ()
    gpu: tuple[Process, ...] = ()
    hook_exit: int | None = None  # None: no hook installed
    hook_line: str = ""
    errors: tuple[str, ...] = ()


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
    )


def judge_activity(report: ActivityReport, *, window_minutes: int, busy_core_percent: float) -> ActivityJudgement:
    """Busy on any sign of work within the idle window; else idle, with what is worth saying."""
    window_s = window_minutes * 60
    if report.hook_exit == 0:
        said = f": {report.hook_line}" if report.hook_line else ""
        return ActivityJudgement(Verdict.BUSY, f"the owner's keep-alive hook says keep{said}")
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


def review(decision: Decision, check: ActivityCheck, *, window_minutes: int, busy_core_percent: float) -> Decision:
    """A warning or a stop decided on metrics, reviewed with what the machine itself says.

    Busy on the machine: no warning; a stop is cancelled (the warning cleared, the owner told why).
    No answer from a machine SSM manages: insufficient data, so no stop in this sweep (a warning still
    goes out: warning nobody is what would leave a forgotten machine running). No SSM agent: the
    metrics decide alone."""
    if decision.action not in (Action.WARN, Action.STOP):
        return decision
    if check.state in (CheckState.NOT_ASKED, CheckState.NO_AGENT):
        return decision
    if check.state is CheckState.NO_ANSWER or check.report is None:
        if decision.action is Action.STOP:
            reason = f"activity check did not answer ({check.detail or 'no answer'}): not stopped in this sweep"
            return replace(decision, action=Action.NONE, reason=reason)
        return replace(decision, activity=f"activity check did not answer ({check.detail or 'no answer'})")
    verdict = judge_activity(check.report, window_minutes=window_minutes, busy_core_percent=busy_core_percent)
    if verdict.verdict is Verdict.IDLE:
        return replace(decision, activity="; ".join((verdict.reason, *verdict.notes)))
    if decision.action is Action.STOP:
        return replace(
            decision, action=Action.CANCEL_STOP, reason=f"not idle: {verdict.reason}", activity=verdict.reason
        )
    return replace(decision, action=Action.NONE, reason=f"not idle: {verdict.reason}", activity=verdict.reason)


def reviewed(
    to_check: Sequence[tuple[Instance, Decision]],
    checks: Mapping[str, ActivityCheck],
    policy: IdlePolicy,
    report: RegionReport,
) -> list[tuple[Instance, Decision]]:
    """Warnings and stops decided on metrics, each reviewed with its machine's activity check (none asked:
    unchanged). Machines without the SSM agent are noted in the report."""
    out = []
    for instance, decision in to_check:
        check = checks.get(instance.instance_id, ActivityCheck(CheckState.NOT_ASKED))
        if check.state is CheckState.NO_AGENT:
            report.no_activity_check.append(instance.instance_id)
        window, core = policy.window_minutes, policy.busiest_core_percent
        out.append((instance, review(decision, check, window_minutes=window, busy_core_percent=core)))
    return out
