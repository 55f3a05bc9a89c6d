"""The idle stopper's rules, in their one order. Pure: the facts come through `Facts` (read by the sweep's
readers, lazily, only for the machines a rule still needs them for), each rule is a function of the facts and
the decision so far, and each leaves a step on the decision's trail where it changes it (`trail.py`).

The order, as `ORDER` declares it and `decide` runs it:

1. `Rule.VERDICT` (decision.py): metrics, protections, warning, grace. Made as the metrics stream in, one
   GetMetricData answer at a time (reads/plan.py calls `verdict`); only warnings and stops go on.
2. `Rule.MACHINE_CHECK` (review.py): what the machine itself says; work saves it, no answer holds a stop.
3. `Rule.CERTAIN` (review.py): a sooner warning, or GPUs only its check sees, borne out by its answers or not
   (where no SSM agent answers, its owner's word that nothing runs on it unseen has it judged by its CPU).
4. `Rule.RECURRING` (recurring.py): a run it learned is near, or its stop carries a start before the next.
5. `Rule.PERSONS_DAY` (arrival.py): started again before its person's weekday, where that pays.
6. `Rule.AFTER_UNDO` (restarts.py): its person undid costguard's last stop: held until its idling pays.
7. `Rule.PROMISED`: a start again kept among the promises costguard honours (else none, and no stop).
8. `Rule.MACHINE_JOBS` (machine_jobs.py): its crontab, timers and at queue; then kept as a promise (7).
9. `Rule.NIGHT_WORK` (automation.py): a machine that cannot answer the check and runs work of its own at night,
   or a box its check says runs by itself (on its own clock; every night while costguard has not watched it a
   week): held from its evening until that work has run; stopped in the day, started before its evening (then 7).
   `Rule.MORNING` (automation.py): a machine that cannot answer is not stopped in its owner's weekday morning.
10. `Rule.SCARCE` (capacity.py): a type EC2 lately could not start: spared while its owner works, readied
   before the day (then kept as a promise, 7), left running for its run, never stopped too shortly.
11. `Rule.BILL` (money.py): what each stop saves on the bill, the region's stops priced together.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Protocol

from costguard.core.keeping import hook_set_aside, nothing_unseen, starts_declined
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import ActivityCheck, CheckState, without_hook
from costguard.idle.rules.arrival import Arrival, with_arrival
from costguard.idle.rules.automation import (
    BLIND,
    NightWork,
    runs_by_itself,
    spared_in_the_morning,
    with_night_work,
)
from costguard.idle.rules.capacity import (
    Workdays,
    day_off,
    for_its_run,
    ready_for_the_day,
    someone_came,
    spared,
    tells_scarce,
    too_soon,
    unread,
    working_now,
)
from costguard.idle.rules.decision import Action, Decision, StartFor, tells_schedule
from costguard.idle.rules.evidence import Answer
from costguard.idle.rules.jobs import MachineJobs
from costguard.idle.rules.machine_jobs import with_jobs
from costguard.idle.rules.money import tells_prepaid
from costguard.idle.rules.recurring import Learned, adjusted, learns, unpromised
from costguard.idle.rules.restarts import held_after_undo
from costguard.idle.rules.review import confirm, review
from costguard.idle.rules.trail import Rule, Step

Decided = tuple[Instance, Decision]

ORDER = (
    Rule.VERDICT,
    Rule.MACHINE_CHECK,
    Rule.CERTAIN,
    Rule.RECURRING,
    Rule.PERSONS_DAY,
    Rule.AFTER_UNDO,
    Rule.PROMISED,
    Rule.MACHINE_JOBS,
    Rule.NIGHT_WORK,
    Rule.MORNING,
    Rule.SCARCE,
    Rule.BILL,
)


@dataclass(frozen=True)
class Past:
    """What a machine's last two weeks say, read for a warning or a stop that would stop it."""

    learned: Learned | None = None  # its recurring work (None: not learned for it)
    unread: bool = False  # its fortnight could not be read in full
    arrival: Arrival | None = None  # when its person's weekday begins, where a start before it pays
    undone: datetime | None = None  # when its person started it again after costguard's last stop
    usd_per_hour: float | None = None  # its list price, where its hold after an undo needs it
    night: NightWork | None = None  # a machine that cannot answer the check: the work it runs by itself at night
    nights_unread: bool = False  # ... whose nights could not be read in full
    nights_aside: bool = False  # ... whose nights would hold it but for its owner's word (costguard:unseen-work)
    workdays: Workdays | None = None  # its person's weekdays: what moves a scarce machine's readying (capacity.py)


class Facts(Protocol):
    """What the rules need that only the world knows, read when first asked and only for those asked about."""

    def checks(self, asked: Sequence[Instance], now: datetime) -> Mapping[str, ActivityCheck]:
        """The machines' own activity checks (NOT_ASKED for a machine not asked)."""
        ...

    def answers(self, instance_id: str) -> Sequence[Answer]:
        """The answers its check gave in earlier sweeps."""
        ...

    def past(
        self,
        decided: Sequence[Decided],
        now: datetime,
        *,
        blind: Collection[str] = (),
        clocks: Mapping[str, str] | None = None,
    ) -> Mapping[str, Past]:
        """The last two weeks of the machines a warning or a stop would stop (`blind`: those whose check cannot
        answer, whose nights are read too; `clocks`: boxes that run by themselves, whose nights are read on their
        own clock, by its zone)."""
        ...

    def zone_of(self, instance: Instance) -> str:
        """Its owner's own time zone, as Slack says it ("" where it does not: the team's is read)."""
        ...

    def scarcity(self, instance: Instance) -> Scarcity | None:
        """The evidence that its type may not start again, or None."""
        ...

    @property
    def scarcity_unread(self) -> bool:
        """Whether scarcity could not be read (a stop while its owner works then waits)."""
        ...

    def priced(self, decided: Sequence[Decided]) -> list[Decided]:
        """The region's warnings and stops priced together on its bill (money.priced for each)."""
        ...


class Promises(Protocol):
    """The start log's promises: a start again is kept among them before the decision announcing it is made."""

    def keep(self, instance: Instance, decision: Decision, now: datetime, *, job: bool = False) -> bool:
        """Whether the start again this decision announces is now among the promises costguard honours."""
        ...


def verdict(decision: Decision) -> Decision:
    """1. The first verdict, its step on the trail."""
    return first(decision)


def decide(
    to_check: Sequence[Decided],
    facts: Facts,
    promises: Promises | None,
    policy: IdlePolicy,
    now: datetime,
    *,
    watched: Sequence[Instance] = (),
) -> list[Decided]:
    """Steps 2 to 10 for the sweep's warnings and stops (`watched`: machines asked for their check for the
    evidence alone); `promises`: where costguard learns recurring work and may start machines for it (None:
    it does not, and no past is read)."""
    asked = [*(i for i, _ in to_check), *watched]
    checks = _hooks_set_aside(facts.checks(asked, now), asked)
    out = [(i, _reviewed(i, d, checks, facts=facts, policy=policy, now=now)) for i, d in to_check]
    blind = {i.instance_id for i, _ in out if cannot_answer(checks.get(i.instance_id))}
    clocks = _runs_by_itself(out, checks, policy, now)
    past: Mapping[str, Past] = {}
    if promises is not None or blind or clocks:
        past = facts.past(out, now, blind=blind, clocks=clocks)
    if promises is not None:
        out = [(i, _recurring(i, d, past.get(i.instance_id), promises, policy, now)) for i, d in out]
    out = [(i, _jobs(i, d, checks.get(i.instance_id), promises=promises, policy=policy, now=now)) for i, d in out]
    out = [(i, _night(i, d, past.get(i.instance_id), promises, policy, now)) for i, d in out]
    out = [(i, _morning(i, d, checks.get(i.instance_id), facts, policy, now)) for i, d in out]
    out = [
        (i, _scarce(i, d, past.get(i.instance_id), checks.get(i.instance_id), facts, promises, policy, now))
        for i, d in out
    ]
    priced = {i.instance_id: d for i, d in facts.priced(out)}
    return [(i, stepped(Rule.BILL, d, priced.get(i.instance_id, d))) for i, d in out]


NIGHTS_ON_ITS_WORD = (
    "nights costguard has not watched do not hold it: its owner says nothing runs on it unseen "
    "(costguard:unseen-work=none); night work its metrics show would"
)
HOOK_ASIDE = "its keep-alive hook is not asked: its owner keeps it for its runs in its place"


def _hooks_set_aside(checks: Mapping[str, ActivityCheck], asked: Sequence[Instance]) -> Mapping[str, ActivityCheck]:
    """The checks as the rules read them: a machine its owner keeps for its runs in place of its keep-alive hook
    (`costguard:keep-for-runs=ignore-hook`) is judged without the hook's word (core/keeping.py)."""
    aside = {i.instance_id for i in asked if hook_set_aside(i.tags)}
    return {iid: without_hook(check) if iid in aside else check for iid, check in checks.items()}


def _reviewed(
    instance: Instance,
    decision: Decision,
    checks: Mapping[str, ActivityCheck],
    *,
    facts: Facts,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """2 and 3: the machine's own word."""
    check = checks.get(instance.instance_id, ActivityCheck(CheckState.NOT_ASKED))
    seen = review(decision, check, window_minutes=policy.window_minutes, busy_core_percent=policy.busiest_core_percent)
    if cannot_answer(check):  # judged from its metrics alone, and said so
        seen = replace(seen, blind=True)
    if hook_set_aside(instance.tags) and seen.action in (Action.WARN, Action.STOP) and seen.activity:
        seen = replace(seen, activity=f"{seen.activity}; {HOOK_ASIDE}")  # why its hook's keep did not hold it
    seen = stepped(Rule.MACHINE_CHECK, decision, seen)
    answers = facts.answers(instance.instance_id)  # as they were: a hook's keep in them still bars the shorter wait
    word = nothing_unseen(instance.tags)  # its owner's, where no check can see its GPUs
    return stepped(Rule.CERTAIN, seen, confirm(seen, check, answers, policy, now, owners_word=word))


def learned_rules(
    instance: Instance, decision: Decision, past: Past | None, policy: IdlePolicy, now: datetime
) -> Decision:
    """4, 5 and 6: the machine's recurring work, its person's day, and a stop its person undid."""
    past = past or Past()
    changed = stepped(
        Rule.RECURRING, decision, adjusted(decision, past.learned, unread=past.unread, policy=policy, now=now)
    )
    if not past.unread:
        changed = stepped(Rule.PERSONS_DAY, changed, with_arrival(changed, past.arrival, policy, now))
    held = held_after_undo(changed, instance, past.undone, policy, now, usd_per_hour=past.usd_per_hour)
    return stepped(Rule.AFTER_UNDO, changed, held)


def _recurring(  # noqa: PLR0917
    instance: Instance, decision: Decision, past: Past | None, promises: Promises, policy: IdlePolicy, now: datetime
) -> Decision:
    """4 to 7: what its past says, and the start it then announces kept as a promise."""
    return promised(instance, learned_rules(instance, decision, past, policy, now), promises, now)


def promised(
    instance: Instance, decision: Decision, promises: Promises, now: datetime, *, job: bool = False
) -> Decision:
    """7. A warning or a stop that announces a start again, with that start kept among the promises
    costguard honours; not kept: the stop waits for a sweep that can, the warning goes without it."""
    if decision.start_at is None or decision.action not in (Action.WARN, Action.STOP):
        return decision
    if promises.keep(instance, decision, now, job=job):
        return decision
    return stepped(Rule.PROMISED, decision, unpromised(decision))


def _jobs(
    instance: Instance,
    decision: Decision,
    check: ActivityCheck | None,
    *,
    promises: Promises | None,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """8. The machine's own scheduled jobs; a start for one kept as a promise."""
    jobs: MachineJobs | None = check.report.jobs if check is not None and check.report is not None else None
    may_start = promises is not None and learns(instance, policy)
    changed = with_jobs(decision, jobs, policy, now, may_start=may_start, declined=starts_declined(instance.tags))
    changed = stepped(Rule.MACHINE_JOBS, decision, changed)
    if promises is not None and changed.start_at != decision.start_at:
        return promised(instance, changed, promises, now, job=True)
    return changed


def cannot_answer(check: ActivityCheck | None) -> bool:
    """A machine the activity check was asked about and cannot answer for: no SSM agent online. (Where the check
    is off, or not asked in dry-run, nothing is known of any machine's agent: the machines are judged as before.)"""
    return check is not None and check.state is CheckState.NO_AGENT


def _runs_by_itself(
    decided: Sequence[Decided], checks: Mapping[str, ActivityCheck], policy: IdlePolicy, now: datetime
) -> dict[str, str]:
    """The machines about to be warned or stopped whose check says they run by themselves, with their clock's
    zone (automation.runs_by_itself)."""
    window = timedelta(minutes=policy.window_minutes)
    out: dict[str, str] = {}
    for instance, decision in decided:
        check = checks.get(instance.instance_id)
        if decision.action not in (Action.WARN, Action.STOP) or check is None or check.state is not CheckState.ANSWERED:
            continue
        if (zone := runs_by_itself(check.report, now, window, policy.team_timezone)) is not None:
            out[instance.instance_id] = zone
    return out


def _night(  # noqa: PLR0917
    instance: Instance,
    decision: Decision,
    past: Past | None,
    promises: Promises | None,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """9. A machine that cannot answer, and its own night work; a start before its evening kept as a promise. A
    stop whose nights could not be read waits for a sweep that can (missing data is never a reason to stop)."""
    night = past.night if past is not None else None
    if past is not None and past.nights_unread and decision.action is Action.STOP:
        why = "its last two weeks could not be read, to see whether it runs work of its own at night: not stopped in"
        return stepped(Rule.NIGHT_WORK, decision, replace(decision, action=Action.NONE, reason=f"{why} this sweep"))
    may_start = promises is not None and learns(instance, policy) and not starts_declined(instance.tags)
    aside = past is not None and past.nights_aside and not past.nights_unread
    if aside and decision.action in (Action.WARN, Action.STOP):
        word = Step(Rule.NIGHT_WORK, decision.action.value, NIGHTS_ON_ITS_WORD)  # no change: why none was needed
        return replace(decision, trail=(*decision.trail, word))
    changed = stepped(Rule.NIGHT_WORK, decision, with_night_work(decision, night, policy, now, may_start=may_start))
    if promises is not None and changed.start_at != decision.start_at:
        return promised(instance, changed, promises, now, job=True)
    return changed


def _morning(  # noqa: PLR0917
    instance: Instance,
    decision: Decision,
    check: ActivityCheck | None,
    facts: Facts,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """9b. A machine that cannot answer: not stopped in its owner's weekday morning, on their clock (its owner's
    zone read only for a warning or stop of such a machine)."""
    if decision.action not in (Action.WARN, Action.STOP) or not cannot_answer(check):
        return decision
    zone = facts.zone_of(instance)
    return stepped(Rule.MORNING, decision, spared_in_the_morning(decision, zone, now, policy.team_timezone))


def _scarce(  # noqa: PLR0917
    instance: Instance,
    decision: Decision,
    past: Past | None,
    check: ActivityCheck | None,
    facts: Facts,
    promises: Promises | None,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """10. Scarce capacity: the scarcity evidence read only where it may change the decision."""
    unread_past = past is not None and past.unread
    # Its person's weekdays, unless the check saw a person on it (a session, a notebook kernel): they came.
    days = None if past is None or unread_past or someone_came(check) else past.workdays
    changed = stepped(
        Rule.SCARCE, decision, spare_the_scarce(instance, decision, facts, policy, now, days, unread_past=unread_past)
    )
    if promises is not None and changed.start_for in (StartFor.OWNERS_DAY, StartFor.NIGHTS_RUN):
        return promised(instance, changed, promises, now)
    return changed


def spare_the_scarce(  # noqa: PLR0917
    instance: Instance,
    decision: Decision,
    facts: Facts,
    policy: IdlePolicy,
    now: datetime,
    days: Workdays | None = None,
    *,
    unread_past: bool = False,
) -> Decision:
    """A scarce machine's warning or stop taken back while its owner works, unless costguard readied it for a
    day its person is not coming (`day_off`: not said of a machine judged on its metrics alone, which a person
    may be at unseen); outside their hours (or on such a day), its stop carries a start before the next working
    day (unless learned work has its own), and none is made that a sooner start leaves too short.
    A stop in working hours whose machine's fortnight could not be read waits for a sweep that can (it may be a
    day off's: its warning is neither cleared nor given again)."""
    if decision.action not in (Action.WARN, Action.WAIT, Action.STOP) or not decision.will_stop:
        return decision
    if not working_now(instance, now, policy.team_timezone):
        if decision.action is Action.WAIT:
            return decision
        return _readied(instance, decision, facts.scarcity(instance), days, policy, now)
    scarcity = facts.scarcity(instance)
    if facts.scarcity_unread:
        return unread(decision)
    if scarcity is None:
        return decision
    off = "" if decision.blind else day_off(days, now)
    if off:
        if decision.action is Action.WAIT:
            return decision
        readied = _readied(instance, replace(decision, reason=f"{decision.reason}; {off}"), scarcity, days, policy, now)
        if readied.start_for is StartFor.OWNERS_DAY:  # said in the warning and the stop: "It has not been used ..."
            return replace(readied, next_work=f"{off}; it {readied.next_work}")
        return readied
    if unread_past and decision.action is Action.STOP:
        return unread(decision)
    return spared(decision, scarcity, working=True, now=now)


def _readied(  # noqa: PLR0917
    instance: Instance,
    decision: Decision,
    scarcity: Scarcity | None,
    days: Workdays | None,
    policy: IdlePolicy,
    now: datetime,
) -> Decision:
    """A scarce machine's stop when its owner is not at work: with a start before their next working day, and
    none that a sooner start leaves too short; not before a run due before they are back."""
    readied = ready_for_the_day(decision, scarcity, instance, policy, now, days)
    shortest = timedelta(minutes=policy.shortest_stop_minutes)
    return too_soon(for_its_run(readied, scarcity, instance, policy, now), scarcity, shortest, now)


def tells(decision: Decision) -> bool:
    """A decision that says something without warning or stopping: kept for working hours it cannot read,
    left running on paid capacity, or for want of capacity."""
    return tells_schedule(decision) or tells_prepaid(decision) or tells_scarce(decision)


# The trail's steps: what a rule changed, in words, with its evidence.


def first(decision: Decision) -> Decision:
    """The first verdict's step: what the metrics and the protections said."""
    step = Step(Rule.VERDICT, decision.action.value, decision.reason, _evidence(decision))
    return replace(decision, trail=(step,))


def stepped(rule: Rule, before: Decision, after: Decision) -> Decision:
    """`after`, with the step `rule` left on the way from `before` (none where the rule changed nothing)."""
    if _same(before, after):
        return replace(after, trail=before.trail) if after.trail != before.trail else after
    return replace(after, trail=(*before.trail, _step(rule, before, after)))


def _same(before: Decision, after: Decision) -> bool:
    return before is after or all(getattr(before, name) == getattr(after, name) for name in _WATCHED)


# What a rule changes that a person would not ask about (the judgement is the first step's evidence): every other
# field a rule changes leaves a step.
_UNWATCHED = {
    "instance_id",
    "trail",
    "judgement",
    "hibernate",
    "told",
    "early",
    "gpus_from_check",
    "cpu_only",
    "unwatched",
}
_WATCHED = tuple(f.name for f in fields(Decision) if f.name not in _UNWATCHED)


def _step(rule: Rule, before: Decision, after: Decision) -> Step:
    if after.action is not before.action or after.reason != before.reason:
        why = after.reason
    elif after.start_at != before.start_at:
        why = _start(after.next_work or before.next_work, after.start_at)
    elif after.worth is not None and after.worth != before.worth:
        why = _worth(after)
    elif after.bill is not None and after.bill != before.bill:
        why = f"a stop saves {after.bill.text()} on the bill now: {after.bill.why}"
    elif after.activity != before.activity:
        why = after.activity
    elif after.blind and not before.blind:
        why = f"{BLIND}: judged from its metrics alone"
    elif after.runs != before.runs:
        why = f"its runs are known ({after.runs}): it may be kept for them"
    else:
        why = after.reason
    return Step(rule, after.action.value, why, _evidence(after, before))


def _worth(after: Decision) -> str:
    """The BILL rule's step: what the stop saves over its off-period, and the hour's price it began from."""
    worth = after.worth
    assert worth is not None
    now = f"{after.bill.text()} on the bill now: {after.bill.why}" if after.bill is not None else ""
    if worth.profiled:
        return f"a stop {worth.text()}" + (f" ({now})" if now else "")
    return f"a stop saves {now}; {worth.text()}" if now else worth.text()


def _start(learned: str, start_at: datetime | None) -> str:
    if start_at is None:
        return f"{learned}: no start again promised" if learned else "no start again promised"
    return (
        f"{learned}: costguard starts it again at {start_at:%a %H:%M} UTC"
        if learned
        else (f"costguard starts it again at {start_at:%a %H:%M} UTC")
    )


def _evidence(after: Decision, before: Decision | None = None) -> tuple[str, ...]:
    """What the rule went on, as far as the decision says: the signals judged (first step), the machine's own
    answer, the bill's reasoning, the scarcity seen, the runs known."""
    out: list[str] = []
    if before is None and after.judgement is not None:
        out += [f"{s.label}: {s.reason}" for s in after.judgement.signals]
    if after.activity and (before is None or after.activity != before.activity):
        out.append(after.activity)
    if after.bill is not None and (before is None or after.bill != before.bill):
        out.append(f"bill: {after.bill.text()} ({after.bill.why})")
    if after.worth is not None and after.worth.profiled and (before is None or after.worth != before.worth):
        out.append(f"off-period: {after.worth.text()}; its restart is expected to cost ${after.worth.restart_usd:,.2f}")
    if after.scarce and (before is None or after.scarce != before.scarce):
        out.append(f"capacity: {after.scarce}")
    if after.next_work and (before is None or after.next_work != before.next_work):
        out.append(after.next_work)
    return tuple(out)
