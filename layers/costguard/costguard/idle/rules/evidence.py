"""What the activity check said over time, and what that proves. Pure: answers in, facts out.

One answer says little about the past: a 3-second sample cannot see an apt run twenty minutes ago. A
machine's last answers, kept between sweeps (the check log), can say three things metrics cannot:

- **whose CPU it was.** cgroup v2 counts CPU seconds per cgroup since boot, processes that already
  exited included; the check reports the machine's total and the system's own services' share. Between
  two answers of one boot, whatever the system's services did not use was used by something else. When
  that is less than one busy core could show in one minute of the CloudWatch agent's sampling, no busy
  CPU point between the two answers can be anyone's work: it was the system's, and is not counted.
  Anything else (another boot, cgroup v1, a count that went back, a missing answer) attributes nothing.
- **that nothing was alive.** Every answer in a window showing nothing alive (no kernel, no process
  busy or holding GPU memory, no hook saying keep) and the newest showing no input for all of it.
- **what the GPUs did, on a machine without GPU metrics.** Answers no more than MAX_GAP apart across the
  window, every one with every GPU at 0 % and no job's process on any GPU: an idle notebook kernel holding GPU
  memory is still idle (activity.py), on a machine without GPU metrics as on one with them, and the check's
  fresh answer says whether its kernels were used within the window. An answer kept before the check's
  kernels were counted apart counts every holder as a job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any

from costguard.idle.rules.activity import ActivityReport, alive

# Two answers further apart than this do not cover the time between them (sweeps run every 15 minutes).
MAX_GAP = timedelta(minutes=25)
# The CloudWatch agent samples each core every minute; the busiest-core point of a period is the busiest
# minute. Less CPU than the threshold's share of one core for one minute cannot make such a point.
AGENT_INTERVAL_SECONDS = 60
KEEP = timedelta(hours=26)  # answers kept: the longest window (24 h) and its grace
MAX_ANSWERS = 120
EDGE = timedelta(minutes=1)  # an answer this far past the sweep's clock is still this sweep's
PAIRS = 3  # answers are compared with up to this many later ones
ROUNDING_S = 0.5
# An answer is dated when the check started; it reads the cgroup counters later (after its CPU sample and
# nvidia-smi), within the document's time limit. CPU before that is in no difference of two answers, so a
# stretch opens that long after its first answer (it closes at the second's date: counters read later
# only count more).
COUNTERS_LAG = timedelta(seconds=60)


@dataclass(frozen=True)
class Answer:
    """One answer, as the check log keeps it: a few hundred bytes, whatever the report held."""

    at: datetime
    input_idle_s: int | None = None  # the freshest input on any terminal; None: nobody logged in
    kernels: int = 0
    top_cpu: float = 0.0  # the busiest non-system process, percent of a core
    gpu_holders: int = 0  # processes holding GPU memory, notebook kernels included
    kernel_holders: int = 0  # ... of them, notebook kernels (an idle one holding memory is still idle)
    hook: bool = False  # the owner's hook said keep
    gpu_util: float | None = None  # the busiest GPU; None: GPUs not reported
    blind: bool = False  # the check could not ask Jupyter for its kernels, or nvidia-smi for the GPUs
    boot: str = ""
    total_s: float | None = None  # cgroup v2 CPU seconds since boot, everything
    system_s: float | None = None  # ... of the system's own services

    def to_json(self) -> dict[str, Any]:
        counts = {
            "k": self.kernels,
            "p": round(self.top_cpu, 1),
            "g": self.gpu_holders,
            "n": self.kernel_holders,
            "h": int(self.hook),
            "e": int(self.blind),
        }
        known = {
            "i": self.input_idle_s,
            "u": self.gpu_util,
            "b": self.boot or None,
            "T": self.total_s,
            "S": self.system_s,
        }
        return (
            {"t": int(self.at.timestamp())}
            | {k: v for k, v in counts.items() if v}  # zero when left out
            | {k: v for k, v in known.items() if v is not None}  # unknown when left out (0 % is a fact)
        )

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Answer | None:
        try:
            return cls(
                at=datetime.fromtimestamp(int(raw["t"]), UTC),
                input_idle_s=_opt_int(raw.get("i")),
                kernels=int(raw.get("k", 0)),
                top_cpu=float(raw.get("p", 0.0)),
                gpu_holders=int(raw.get("g", 0)),
                kernel_holders=int(raw.get("n", 0)),
                hook=bool(raw.get("h", 0)),
                gpu_util=_opt_float(raw.get("u")),
                blind=bool(raw.get("e", 0)),
                boot=str(raw.get("b", "")),
                total_s=_opt_float(raw.get("T")),
                system_s=_opt_float(raw.get("S")),
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None  # an entry this version cannot read is no evidence


def answer_of(report: ActivityReport, now: datetime) -> Answer:
    """The answer to keep, at the machine's own time (its cgroup counters were read then, by the clock the
    CloudWatch agent stamps its points with). A machine whose clock is off by minutes, or that did not say
    its time, gives no CPU account: the counters could not be placed between the metrics' points."""
    timed = bool(report.at) and abs(report.at - now.timestamp()) < 300
    at = datetime.fromtimestamp(report.at, UTC) if timed else now
    account = report.cpu_account if timed else None
    gpus = report.gpus
    return Answer(
        at=at,
        input_idle_s=min((s.idle_s for s in report.sessions), default=None),
        kernels=max(len(report.kernels), report.kernel_processes),
        top_cpu=max((p.cpu for p in report.cpu), default=0.0),
        gpu_holders=sum(1 for p in report.gpu if p.gpu_mib > 0),
        kernel_holders=sum(1 for p in report.gpu if p.gpu_mib > 0 and p.notebook),
        hook=report.hook_exit == 0,
        gpu_util=max(g.util for g in gpus) if gpus else None,
        blind=bool(report.blind()),
        boot=account.boot if account else "",
        total_s=account.total_s if account else None,
        system_s=account.system_s if account else None,
    )


def kept(answers: Sequence[Answer], now: datetime) -> list[Answer]:
    """The answers worth keeping, oldest first: the last KEEP of them, at most MAX_ANSWERS."""
    recent = sorted((a for a in answers if now - KEEP <= a.at <= now + EDGE), key=_at)
    return recent[-MAX_ANSWERS:]


def excused(answers: Sequence[Answer], busy_core_percent: float) -> tuple[tuple[datetime, datetime], ...]:
    """The stretches between two answers of one cgroup v2 boot whose CPU was the system's own: busy CPU
    points wholly inside one are not work (`excuses`). Each pair of answers up to PAIRS apart is its own
    proof, so that a point across an answer is covered by the pair around it. A count that went back
    attributes nothing (a journal rotated away, a counter reset), nor does a system's share that grew more
    than the whole machine's between two answers: a unit counted only once it ended (its lifetime's CPU
    logged at once) would make the others' CPU around it look like less than it was."""
    bound = busy_core_percent / 100 * AGENT_INTERVAL_SECONDS
    ordered = sorted((a for a in answers if a.boot and a.total_s is not None and a.system_s is not None), key=_at)
    out = []
    for n, first in enumerate(ordered):
        previous = first
        for second in ordered[n + 1 : n + 1 + PAIRS]:
            if second.boot != first.boot or not _consistent(previous, second):
                break
            previous = second
            total = float(second.total_s or 0) - float(first.total_s or 0)
            system = float(second.system_s or 0) - float(first.system_s or 0)
            if total - system < bound:
                out.append((first.at + COUNTERS_LAG, second.at))
    return tuple(out)


def _consistent(earlier: Answer, later: Answer) -> bool:
    """Both counts went forward, and the system's by no more than the whole machine's (but rounding: each
    count is sent to a tenth of a second, the agent's own processes' in clock ticks)."""
    total = float(later.total_s or 0) - float(earlier.total_s or 0)
    system = float(later.system_s or 0) - float(earlier.system_s or 0)
    return total >= 0 and system >= 0 and system <= total + ROUNDING_S


def excuses(stretches: Sequence[tuple[datetime, datetime]], point: datetime, period_seconds: int) -> bool:
    """True when a CPU point's period, and the agent's sample that may open it a minute before, lie wholly
    inside one stretch whose CPU was the system's."""
    begin = point - timedelta(seconds=AGENT_INTERVAL_SECONDS)
    end = point + timedelta(seconds=period_seconds)
    return any(start <= begin and end <= stop for start, stop in stretches)


def nothing_alive(
    answers: Sequence[Answer], fresh: ActivityReport, *, start: datetime, now: datetime, busy_core_percent: float
) -> str | None:
    """Why the machine cannot be called certainly idle since `start`, or None: the fresh answer sees
    nothing alive and no input since `start`, no answer kept since `start` saw anything alive or input
    after `start`, and none of them was blind to kernels or to the GPUs' processes (what the check could
    not look at is not known to be absent)."""
    minutes = max(1, int((now - start).total_seconds() // 60) + 1)
    seen = alive(fresh, window_minutes=minutes, busy_core_percent=busy_core_percent)
    if seen:
        return seen
    if fresh.blind():
        return f"the check could not see everything ({fresh.blind()})"
    for answer in answers:
        if start <= answer.at <= now and (seen := alive_in(answer, since=start, busy_core_percent=busy_core_percent)):
            return seen
    return None


def alive_in(answer: Answer, *, since: datetime, busy_core_percent: float) -> str | None:
    """What a kept answer saw alive (input after `since`, something it could not look at, the owner's hook saying
    keep, a notebook kernel, a process busy on a core or holding GPU memory), or None: nothing."""
    when = f"at {answer.at:%H:%M} UTC"
    typed = answer.at - timedelta(seconds=answer.input_idle_s) if answer.input_idle_s is not None else None
    if typed is not None and typed >= since:
        return f"someone typed at {typed:%H:%M} UTC"  # and logged out since: the fresh answer cannot say
    if answer.blind:
        return f"the check could not see everything {when}"
    if answer.hook:
        return f"the owner's keep-alive hook said keep {when}"
    if answer.kernels:
        return f"a Jupyter kernel was alive {when}"
    if answer.top_cpu >= busy_core_percent:
        return f"a process used {answer.top_cpu:.0f}% of a CPU core {when}"
    if answer.gpu_holders:
        return f"a process held GPU memory {when}"
    return None


def gpus_quiet(answers: Sequence[Answer], *, start: datetime, now: datetime) -> str | None:
    """Why the machine's own answers do not show its GPUs idle since `start`, or None: answers at most
    MAX_GAP apart from `start` to `now` (the last one fresh), each with every GPU at 0 % and no process but
    a notebook kernel holding GPU memory."""
    inside = sorted((a for a in answers if start - MAX_GAP <= a.at <= now + EDGE), key=_at)
    if not inside or inside[0].at > start + MAX_GAP:
        return f"no check answered near {start:%H:%M} UTC"
    if now - inside[-1].at > MAX_GAP:
        return "no fresh check answer"
    for earlier, later in pairwise(inside):
        if later.at - earlier.at > MAX_GAP:
            return f"no check answered between {earlier.at:%H:%M} and {later.at:%H:%M} UTC"
    for answer in inside:
        if answer.gpu_util is None:
            return f"the check at {answer.at:%H:%M} UTC could not read the GPUs"
        if answer.gpu_util > 0 or answer.gpu_holders > answer.kernel_holders:
            return f"a GPU was in use at {answer.at:%H:%M} UTC"
    return None


def _at(answer: Answer) -> datetime:
    return answer.at


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)
