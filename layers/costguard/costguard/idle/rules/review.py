"""Warnings and stops decided on metrics, reviewed with what the machine itself says. Pure: no I/O.

Two kinds of decision need the machine's own word before anything happens, and are dropped without it:
a warning or stop on certain idleness (sooner than the window: the check must see nothing alive for all
of the shorter window), and one whose GPUs only the check can see (no GPU metrics: its answers must show
every GPU at 0 % and no process on them across the window). Every other warning or stop is reviewed as
before: work on the machine saves it, a machine that does not answer is not stopped in that sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from costguard.core.formatting import duration
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityCheck, ActivityReport, CheckState, judge_activity, memory_at_work
from costguard.idle.rules.decision import NOT_STOPPED_UNSEEN, Action, Decision, KeptFor
from costguard.idle.rules.evidence import Answer, answer_of, gpus_quiet, nothing_alive
from costguard.idle.rules.judgement import Verdict


def review(decision: Decision, check: ActivityCheck, *, window_minutes: int, busy_core_percent: float) -> Decision:
    """A warning or a stop decided on metrics, reviewed with what the machine itself says.

    Busy on the machine: no warning; a stop is cancelled (the warning cleared, the owner told why).
    No answer from a machine SSM manages: insufficient data, so no stop in this sweep (a warning still
    goes out: warning nobody is what would leave a forgotten machine running). No SSM agent: the
    metrics decide alone."""
    if decision.action not in (Action.WARN, Action.STOP):
        return decision
    if held := memory_at_work(check, decision.judgement.memory_held if decision.judgement else ""):
        action = Action.CANCEL_STOP if decision.action is Action.STOP else Action.NONE
        return replace(decision, action=action, reason=f"not idle: {held}", activity=held)
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
    kept_for = KeptFor.ITS_HOOK if verdict.by_hook else decision.kept_for
    return replace(
        decision, action=Action.NONE, reason=f"not idle: {verdict.reason}", activity=verdict.reason, kept_for=kept_for
    )


BY_ITS_CPU = (
    "judged by its CPU: no GPU metric and no activity check can see its GPUs, and its owner says nothing runs on it "
    "unseen (costguard:unseen-work=none)"
)


def confirm(  # noqa: PLR0917
    decision: Decision,
    check: ActivityCheck,
    answers: Sequence[Answer],
    policy: IdlePolicy,
    now: datetime,
    owners_word: bool = False,
) -> Decision:
    """A decision that rests on the machine's own answers, kept only if they bear it out.

    Certain idleness: the fresh answer and every answer kept since the shorter window began saw nothing
    alive, and nobody typed since. GPUs seen only by the check: answers across the window (the fresh one
    last) show every GPU at 0 % and no process on any. Without them, the warning waits for the full
    window, and a machine without GPU metrics is warned but not stopped, as before; unless no SSM agent answers
    and its owner said nothing runs on it unseen (`owners_word`, `costguard:unseen-work=none`): judged by its CPU
    then (`cpu_only`, which the pipeline keeps out of its owner's working day)."""
    if decision.action not in (Action.WARN, Action.STOP) or not (decision.early or decision.gpus_from_check):
        return decision
    start = decision.judgement.judged_from if decision.judgement and decision.judgement.judged_from else now
    report = check.report if check.state is CheckState.ANSWERED else None
    why_not = f"activity check: {check.detail or check.state.value}" if report is None else ""
    if decision.early and report is not None:
        seen = nothing_alive(answers, report, start=start, now=now, busy_core_percent=policy.busiest_core_percent)
        why_not = "" if not seen else seen if seen.startswith("the check") else f"the check saw {seen}"
    if decision.gpus_from_check and report is not None and not why_not:
        fresh = answer_of(report, now)
        why_not = gpus_quiet([*answers, fresh], start=start, now=now) or ""
    if why_not and owners_word and check.state is CheckState.NO_AGENT and not decision.early:
        why = f"{decision.reason}; {BY_ITS_CPU}"
        return replace(decision, gpus_from_check=False, cpu_only=True, reason=why)
    if not why_not:
        if report is None:
            return decision
        return replace(decision, activity=_seen(decision, report, now, start, policy.window_minutes))
    if decision.early and decision.action is Action.WARN:
        minutes = int((now - start).total_seconds() // 60)
        full = duration(policy.window_minutes)
        return replace(
            decision,
            action=Action.NONE,
            reason=f"idle for {duration(minutes)}, not yet {full}: {why_not}",
            early=False,
        )
    if decision.action is Action.STOP:
        return replace(decision, action=Action.NONE, reason=f"not stopped in this sweep: {why_not}")
    if decision.told:  # warned already that it would not be stopped: nothing new to say
        return replace(decision, action=Action.NONE, reason=NOT_STOPPED_UNSEEN, kept_for=KeptFor.GPUS_UNSEEN)
    # A warning about a machine whose GPUs nobody sees: the warning of before, that stops nothing.
    return replace(decision, will_stop=False, stop_after=None, gpus_from_check=False, kept_for=KeptFor.GPUS_UNSEEN)


def _seen(decision: Decision, report: ActivityReport, now: datetime, start: datetime, window: int) -> str:
    """What the warning or the stop notice says the machine's own check saw."""
    parts = []
    if decision.early:
        quiet = min((s.idle_s for s in report.sessions), default=None)
        typed = f"no input for {duration(quiet // 60)}" if quiet is not None else "nobody logged in"
        sooner = (
            f"so it is warned after {duration(int((now - start).total_seconds() // 60))}, not {duration(window)}"
            if decision.action is Action.WARN
            else f"so it was warned before the full {duration(window)}"
        )
        parts.append(
            f"the activity check saw nothing running: {typed}, no Jupyter kernel, no busy process, no GPU memory "
            f"held; {sooner}"
        )
    if decision.gpus_from_check:
        since = duration(int((now - start).total_seconds() // 60))
        parts.append(f"judged from the machine's own check: every GPU at 0 % and no process on them for {since}")
    return "; ".join(parts)


def reviewed(
    to_check: Sequence[tuple[Instance, Decision]],
    checks: Mapping[str, ActivityCheck],
    policy: IdlePolicy,
    *,
    now: datetime,
    answers: Mapping[str, Sequence[Answer]] | None = None,
) -> list[tuple[Instance, Decision]]:
    """Warnings and stops decided on metrics, each reviewed with its machine's activity check (none asked:
    unchanged, but for those that rest on the check, which go), then confirmed with the answers kept for
    it when it rests on them."""
    out = []
    for instance, decision in to_check:
        check = checks.get(instance.instance_id, ActivityCheck(CheckState.NOT_ASKED))
        window, core = policy.window_minutes, policy.busiest_core_percent
        seen = review(decision, check, window_minutes=window, busy_core_percent=core)
        kept = (answers or {}).get(instance.instance_id, ())
        out.append((instance, confirm(seen, check, kept, policy, now)))
    return out
