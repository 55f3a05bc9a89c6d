"""The idle stopper's rules in their one order (rules/pipeline.py), each leaving its step on the decision's trail:
a rule that changes the decision says which rule, to what, why and on what evidence; one that changes nothing
leaves no step."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from costguard.core.money import Basis, Marginal
from costguard.core.records import Instance
from costguard.core.scarcity import Scarcity
from costguard.core.settings import IdlePolicy
from costguard.idle.rules import pipeline
from costguard.idle.rules.activity import ActivityCheck, ActivityReport, CheckState, Process, Session
from costguard.idle.rules.arrival import Arrival
from costguard.idle.rules.automation import NightWork
from costguard.idle.rules.capacity import NOT_TODAY, Workdays
from costguard.idle.rules.decision import Action, Decision, KeptFor, StartFor
from costguard.idle.rules.evidence import Answer
from costguard.idle.rules.jobs import Job, JobKind, MachineJobs
from costguard.idle.rules.money import NOT_FOR_MONEY, priced, tells_prepaid
from costguard.idle.rules.pipeline import NIGHTS_ON_ITS_WORD, ORDER, Decided, Past, stepped
from costguard.idle.rules.trail import Rule, Step, read

POLICY = IdlePolicy()  # window 120 min, grace 30 min, shortest stop 90 min, lead 15 min
EVENING = datetime(2026, 11, 23, 20, 0, tzinfo=UTC)  # a Monday, after the team's hours
AFTERNOON = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)  # a Tuesday, inside them
G5 = Instance("i-0123456789abcdef0", "us-east-1", "g5.12xlarge", "running", EVENING - timedelta(days=1), {})


@dataclass
class World:
    """The facts a test gives the rules: each read recorded, nothing read that was not asked."""

    checks_of: Mapping[str, ActivityCheck] = field(default_factory=dict)
    pasts: Mapping[str, Past] = field(default_factory=dict)
    promises: bool = True
    scarce: Scarcity | None = None
    bill: Marginal | None = None
    zone: str = ""  # its owner's own zone, as Slack says it
    asked: list[str] = field(default_factory=list)

    def checks(self, asked: Sequence[Instance], now: datetime) -> Mapping[str, ActivityCheck]:
        self.asked.append("checks")
        return {i.instance_id: c for i in asked if (c := self.checks_of.get(i.instance_id)) is not None}

    def answers(self, instance_id: str) -> Sequence[Answer]:
        return ()

    def past(
        self,
        decided: Sequence[Decided],
        now: datetime,
        *,
        blind: Collection[str] = (),
        clocks: Mapping[str, str] | None = None,
    ) -> Mapping[str, Past]:
        self.asked.append(f"past blind={sorted(blind)}" + (f" clocks={dict(clocks)}" if clocks else ""))
        return self.pasts

    def keep(self, instance: Instance, decision: Decision, now: datetime, *, job: bool = False) -> bool:
        self.asked.append(f"promise job={job}")
        return self.promises

    def zone_of(self, instance: Instance) -> str:
        self.asked.append("zone")
        return self.zone

    def scarcity(self, instance: Instance) -> Scarcity | None:
        self.asked.append("scarcity")
        return self.scarce

    @property
    def scarcity_unread(self) -> bool:
        return False

    def priced(self, decided: Sequence[Decided]) -> list[Decided]:
        self.asked.append("bill")
        if self.bill is None:
            return list(decided)
        return [(i, priced(d, self.bill)) for i, d in decided]


def stop(at: datetime = EVENING) -> Decision:
    return pipeline.verdict(Decision(G5.instance_id, Action.STOP, "idle for 2 h: GPU max 0.4 %", stop_after=at))


def warn(at: datetime = EVENING) -> Decision:
    return pipeline.verdict(
        Decision(G5.instance_id, Action.WARN, "idle for 2 h: GPU max 0.4 %", stop_after=at + timedelta(minutes=30))
    )


def run(decision: Decision, world: World, now: datetime = EVENING, *, learning: bool = True) -> Decision:
    [(_, decided)] = pipeline.decide([(G5, decision)], world, world if learning else None, POLICY, now)
    return decided


def rules(decision: Decision) -> list[Rule]:
    return [s.rule for s in decision.trail]


def test_the_order_of_the_rules_is_declared_once_and_names_every_rule() -> None:
    assert ORDER[0] is Rule.VERDICT
    assert ORDER[-1] is Rule.BILL
    assert set(ORDER) == set(Rule)
    assert len(ORDER) == len(set(ORDER))


def test_the_first_verdict_is_always_the_first_step_with_what_the_metrics_said() -> None:
    decided = stop()
    assert decided.trail == (Step(Rule.VERDICT, "stop", "idle for 2 h: GPU max 0.4 %"),)


def test_every_fact_is_read_in_the_pipelines_order_and_a_rule_that_changes_nothing_leaves_no_step() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NO_ANSWER, detail="timed out")})
    warned = run(warn(), world)  # a warning goes out on metrics when the machine does not answer
    assert warned.action is Action.WARN
    assert [(s.rule, s.why) for s in warned.trail[1:]] == [
        (Rule.MACHINE_CHECK, "activity check did not answer (timed out)")
    ]
    assert world.asked == ["checks", "past blind=[]", "scarcity", "bill"]


def test_a_machine_that_cannot_answer_is_judged_on_its_metrics_alone_and_its_trail_says_so() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NO_AGENT)})
    decided = run(stop(), world)
    assert decided.action is Action.STOP
    assert decided.blind
    assert rules(decided) == [Rule.VERDICT, Rule.MACHINE_CHECK]
    assert decided.trail[-1].why.endswith("judged from its metrics alone")
    assert world.asked == ["checks", f"past blind={[G5.instance_id]}", "zone", "scarcity", "bill"]


def test_work_the_machines_own_check_saw_cancels_the_stop_and_says_so_in_its_step() -> None:
    busy = ActivityReport(gpu=(Process("python", cpu=35.0, gpu_mib=4096),))
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, busy)})
    decided = run(stop(), world)
    assert decided.action is Action.CANCEL_STOP
    step = decided.trail[-1]
    assert step.rule is Rule.MACHINE_CHECK
    assert step.verdict == "cancel-stop"
    assert step.why.startswith("not idle:")
    assert decided.activity in step.evidence


def test_a_machine_that_does_not_answer_is_not_stopped_in_this_sweep_by_the_check_rule() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NO_ANSWER, detail="timed out")})
    decided = run(stop(), world)
    assert decided.action is Action.NONE
    assert [(s.rule, s.verdict) for s in decided.trail[1:]] == [(Rule.MACHINE_CHECK, "none")]


def test_a_sooner_warning_the_check_cannot_bear_out_waits_for_the_full_window_by_the_certain_idleness_rule() -> None:
    sooner = replace(warn(), early=True)
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NO_ANSWER, detail="timed out")})
    decided = run(sooner, world)
    assert decided.action is Action.NONE
    assert decided.trail[-1].rule is Rule.CERTAIN


def test_a_fortnight_that_could_not_be_read_holds_the_stop_by_the_recurring_work_rule() -> None:
    decided = run(stop(), World(pasts={G5.instance_id: Past(unread=True)}))
    assert decided.action is Action.NONE
    assert decided.trail[-1].rule is Rule.RECURRING
    assert "could not be read" in decided.trail[-1].why


def test_a_stop_before_its_persons_weekday_carries_a_start_for_it_by_the_persons_day_rule() -> None:
    mornings = Arrival("UTC", 8 * 60 + 45, timedelta(hours=2), found=4, seen=5, first=9 * 60, last=10 * 60, net_usd=90)
    decided = run(stop(), World(pasts={G5.instance_id: Past(arrival=mornings)}))
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 24, 8, 45, tzinfo=UTC)
    step = decided.trail[-1]
    assert step.rule is Rule.PERSONS_DAY
    assert step.why == f"{mornings.describe()}: costguard starts it again at Tue 08:45 UTC"


def test_a_stop_its_person_undid_an_hour_ago_waits_by_the_after_an_undo_rule() -> None:
    restarted = replace(G5, launch_time=EVENING - timedelta(hours=1))
    undone = Past(undone=EVENING - timedelta(hours=2), usd_per_hour=5.67)
    world = World(pasts={G5.instance_id: undone})
    [(_, decided)] = pipeline.decide([(restarted, warn())], world, world, POLICY, EVENING)
    assert decided.action is Action.NONE
    assert decided.trail[-1].rule is Rule.AFTER_UNDO


def test_a_start_that_cannot_be_kept_as_a_promise_holds_the_stop_by_the_promise_rule() -> None:
    job = MachineJobs((Job(JobKind.CRON, "0 9 * * *", "nightly.sh", "ana"),), zone="UTC", found=1)
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, ActivityReport(jobs=job))})
    world.promises = False
    decided = run(stop(), world)
    assert decided.action is Action.NONE
    assert [s.rule for s in decided.trail] == [Rule.VERDICT, Rule.MACHINE_CHECK, Rule.MACHINE_JOBS, Rule.PROMISED]
    assert "promise job=True" in world.asked


def test_the_machines_crontab_gives_its_stop_a_start_before_the_job_and_the_step_says_when() -> None:
    job = MachineJobs((Job(JobKind.CRON, "0 9 * * *", "nightly.sh", "ana"),), zone="UTC", found=1)
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, ActivityReport(jobs=job))})
    decided = run(stop(), world)
    assert decided.action is Action.STOP
    assert decided.start_at == datetime(2026, 11, 24, 8, 45, tzinfo=UTC)
    step = decided.trail[-1]
    assert step.rule is Rule.MACHINE_JOBS
    assert step.why == "runs `nightly.sh` at 09:00 UTC (its crontab): costguard starts it again at Tue 08:45 UTC"


def test_a_scarce_machine_is_spared_while_its_owner_works_by_the_scarce_capacity_rule() -> None:
    scarce = Scarcity("g5.12xlarge", "us-east-1a", 6, AFTERNOON - timedelta(hours=3), AFTERNOON - timedelta(days=2))
    decided = run(warn(AFTERNOON), World(scarce=scarce), AFTERNOON)
    assert decided.action is Action.NONE
    step = decided.trail[-1]
    assert step.rule is Rule.SCARCE
    assert any(e.startswith("capacity: ") for e in step.evidence)


def test_a_scarce_machine_readied_for_a_day_its_person_does_not_come_is_warned_and_stopped_and_readied_again() -> None:
    """Readied at 07:00, nobody at it by 11:30 on a Tuesday, when its person began work on it by 10:30 on each of
    the 7 weekdays they did: warned, then stopped after its grace, with its start before the next day; an hour
    earlier, it is spared as before."""
    scarce = Scarcity("g5.12xlarge", "us-east-1a", 6, AFTERNOON - timedelta(hours=3), AFTERNOON - timedelta(days=2))
    days = Workdays(7, 10 * 60 + 30, True)
    late = AFTERNOON.replace(hour=11, minute=30)
    world = World(scarce=scarce, pasts={G5.instance_id: Past(workdays=days)})
    assert run(warn(late - timedelta(hours=1)), world, late - timedelta(hours=1)).action is Action.NONE  # spared
    warned = run(warn(late), world, late)
    assert warned.action is Action.WARN
    assert warned.start_at == datetime(2026, 11, 25, 8, 0, tzinfo=UTC) - timedelta(minutes=15)
    assert warned.trail[-1].rule is Rule.SCARCE
    assert NOT_TODAY in warned.reason
    stopped = run(stop(late + timedelta(minutes=30)), world, late + timedelta(minutes=30))
    assert stopped.action is Action.STOP
    assert stopped.start_at == warned.start_at
    # Its fortnight unread at the stop: not stopped, its warning neither cleared nor given again.
    unread_then = World(scarce=scarce, pasts={G5.instance_id: Past(workdays=days, unread=True)})
    assert run(stop(late + timedelta(minutes=30)), unread_then, late + timedelta(minutes=30)).action is Action.NONE
    # A machine that cannot answer its check is judged on its metrics alone: a person may be at it unseen.
    blind = run(pipeline.verdict(replace(warn(late), blind=True)), world, late)
    assert blind.action is Action.NONE
    # Its check sees a session (its person logged in at 08:30 and went to a meeting): they came; spared.
    came = ActivityReport(sessions=(Session("pts/0", 3 * 3600),))
    seen = World(scarce=scarce, pasts=world.pasts, checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, came)})
    assert run(warn(late), seen, late).action is Action.NONE
    # Its person started it themselves (or used it): spared all day, as before.
    theirs = World(scarce=scarce, pasts={G5.instance_id: Past(workdays=replace(days, readied_idle=False))})
    assert run(warn(late), theirs, late).action is Action.NONE
    # Its fortnight unread: spared.
    unread_past = World(scarce=scarce, pasts={G5.instance_id: Past(workdays=days, unread=True)})
    assert run(warn(late), unread_past, late).action is Action.NONE


def test_a_scarce_machine_its_person_seldom_works_on_is_still_readied_for_their_day() -> None:
    """A person who began work on it on one weekday of the last ten may come tomorrow: EC2 refusing their start
    then is work that cannot begin. Readied, as one worked on every day."""
    scarce = Scarcity("g5.12xlarge", "us-east-1a", 6, EVENING - timedelta(hours=3), EVENING - timedelta(days=2))
    readied = datetime(2026, 11, 24, 8, 0, tzinfo=UTC) - timedelta(minutes=15)
    for began in (0, 1, 7):
        world = World(scarce=scarce, pasts={G5.instance_id: Past(workdays=Workdays(began, 600, False))})
        decided = run(stop(), world)
        assert decided.action is Action.STOP
        assert decided.start_at == readied, began


def test_a_stop_that_saves_nothing_on_the_bill_is_not_made_by_the_bill_rule_and_its_outcome_is_typed() -> None:
    block = Marginal(0.0, 5.67, Basis.CAPACITY_BLOCK, "runs in a Capacity Block until 03:00")
    decided = run(stop(), World(bill=block))
    assert decided.action is Action.CLEAR_WARNING
    assert decided.kept_for is KeptFor.NOTHING_SAVED
    assert tells_prepaid(decided)
    assert decided.trail[-1].rule is Rule.BILL
    assert decided.trail[-1].why.startswith(NOT_FOR_MONEY)
    # The outcome is the decision's, not its words': other words, the same outcome.
    assert tells_prepaid(replace(decided, reason="anything at all"))


def test_a_stop_the_bill_prices_says_what_it_saves_in_its_step() -> None:
    on_demand = Marginal(5.67, 5.67, Basis.ON_DEMAND, "on demand: 3 g5.12xlarge run, no plan")
    decided = run(stop(), World(bill=on_demand))
    assert decided.action is Action.STOP
    assert decided.trail[-1] == Step(
        Rule.BILL,
        "stop",
        "a stop saves $5.67/h on the bill now: on demand: 3 g5.12xlarge run, no plan",
        ("bill: $5.67/h (on demand: 3 g5.12xlarge run, no plan)",),
    )


def test_without_learning_neither_the_past_nor_the_promises_are_read_of_a_machine_that_answers() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, ActivityReport())})
    run(stop(), world, learning=False)
    assert world.asked == ["checks", "scarcity", "bill"]


def test_a_machine_that_cannot_answer_has_its_nights_read_even_without_learning() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NO_AGENT)})
    run(stop(), world, learning=False)
    assert world.asked == ["checks", f"past blind={[G5.instance_id]}", "zone", "scarcity", "bill"]


def test_a_machine_that_cannot_answer_is_held_into_its_night_work_by_the_night_work_rule() -> None:
    nights = NightWork("UTC", (EVENING.date() - timedelta(days=1),), timedelta(hours=4), timedelta(hours=4), None)
    world = World(
        checks_of={G5.instance_id: ActivityCheck(CheckState.NO_AGENT)}, pasts={G5.instance_id: Past(night=nights)}
    )
    decided = run(stop(), world)
    assert decided.action is Action.NONE
    step = decided.trail[-1]
    assert step.rule is Rule.NIGHT_WORK
    assert "held until its night's work has run" in step.why


def test_a_box_whose_check_says_it_runs_by_itself_has_its_nights_read_on_its_clock_and_is_held_into_them() -> None:
    housekeeping = MachineJobs(jobs=(Job(JobKind.CRON, "*/10 * * * *", "healthcheck.sh"),), zone="Asia/Kolkata")
    unseen = NightWork("Asia/Kolkata", (), timedelta(0), timedelta(hours=10), None, blind=False)
    world = World(
        checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, ActivityReport(jobs=housekeeping))},
        pasts={G5.instance_id: Past(night=unseen)},
    )
    night = EVENING.replace(hour=16)  # 21:30 in Kolkata
    decided = run(stop(night), world, night)
    assert world.asked[:2] == ["checks", f"past blind=[] clocks={{'{G5.instance_id}': 'Asia/Kolkata'}}"]
    assert decided.action is Action.NONE
    step = decided.trail[-1]
    assert step.rule is Rule.NIGHT_WORK
    assert step.why.startswith("it runs by itself (housekeeping crontab, nobody logged in) and may work any evening")
    assert "held until its night's work has run (until 00:30 UTC at the latest)" in step.why


def test_a_machine_that_cannot_answer_is_not_stopped_in_its_owners_morning_by_the_morning_rule() -> None:
    """Tuesday 10:15 UTC is 11:15 in Paris, its owner's morning: a person's run of the day may have begun in the
    minutes CloudWatch has not delivered yet, and nothing else on the machine can say. The same stop at 14:00 in
    Paris, or of a machine that answers its check, is made."""
    blind = {G5.instance_id: ActivityCheck(CheckState.NO_AGENT)}
    morning = AFTERNOON.replace(hour=10, minute=15)
    world = World(checks_of=blind, zone="Europe/Paris")
    decided = run(stop(morning), world, morning)
    assert decided.action is Action.WAIT  # its warning stands
    step = decided.trail[-1]
    assert step.rule is Rule.MORNING
    assert step.why.startswith("not stopped in its owner's weekday morning")
    assert "(Europe/Paris)" in step.why
    assert "no SSM agent" in step.why
    assert run(stop(AFTERNOON), World(checks_of=blind, zone="Europe/Paris"), AFTERNOON).action is Action.STOP
    answers = World(checks_of={G5.instance_id: ActivityCheck(CheckState.ANSWERED, report=ActivityReport())})
    assert run(stop(morning), answers, morning).action is Action.STOP
    assert "zone" not in answers.asked  # its owner's zone read only for a machine that cannot answer
    team = World(checks_of=blind)  # Slack does not say: the team's clock (UTC), 10:15 its morning too
    assert run(stop(morning), team, morning).action is Action.WAIT


def test_a_trail_survives_the_ledger_and_a_damaged_step_is_left_out() -> None:
    decided = stepped(Rule.BILL, stop(), replace(stop(), action=Action.NONE, reason="held"))
    kept = [s.to_json() for s in decided.trail] + [{"rule": "no such rule"}, "not a step"]
    assert read(kept) == decided.trail


def test_no_rule_tells_an_outcome_by_the_start_of_its_reason() -> None:
    """Outcomes are typed: control flow never reads the words of a reason (or of what was learned)."""
    library = Path(__file__).parents[4] / "layers" / "costguard" / "costguard"
    pattern = re.compile(r"\b(?:reason|learned)\s*\.\s*startswith\(")
    offenders = [
        f"{path.relative_to(library)}:{number}"
        for path in sorted(library.rglob("*.py"))
        for number, text in enumerate(path.read_text().splitlines(), start=1)
        if pattern.search(text)
    ]
    assert offenders == []


def test_where_nothing_was_asked_check_off_or_dry_run_no_machine_is_taken_for_one_that_cannot_answer() -> None:
    world = World(checks_of={G5.instance_id: ActivityCheck(CheckState.NOT_ASKED)})
    decided = run(stop(), world)
    assert not decided.blind
    assert rules(decided) == [Rule.VERDICT]
    assert world.asked == ["checks", "past blind=[]", "scarcity", "bill"]


def test_a_stop_of_a_machine_that_cannot_answer_whose_nights_were_not_read_waits_by_the_night_work_rule() -> None:
    world = World(
        checks_of={G5.instance_id: ActivityCheck(CheckState.NO_AGENT)}, pasts={G5.instance_id: Past(nights_unread=True)}
    )
    decided = run(stop(), world, learning=False)
    assert decided.action is Action.NONE
    assert decided.trail[-1].rule is Rule.NIGHT_WORK
    assert "could not be read" in decided.trail[-1].why


def test_a_scarce_machine_worked_only_by_night_is_stopped_with_its_night_runs_start_promised() -> None:
    """Through the pipeline: nobody's work on it in its owner's hours on 9 weekdays, its run due at 00:45 after the
    next day: stopped at 04:00 with a start at 17:00 that day, kept among the promises (a start costguard did not
    promise, it does not honour); where the promise cannot be kept, the stop waits."""
    night = datetime(2026, 11, 24, 4, 0, tzinfo=UTC)
    scarce = Scarcity("g5.12xlarge", "us-east-1a", 6, night - timedelta(hours=3), night - timedelta(days=2))
    run_at = datetime(2026, 11, 25, 0, 45, tzinfo=UTC)
    learned = replace(stop(night), start_at=run_at, next_work="starts work at about 01:00 UTC (7 of the last 7 days)")
    by_night = Past(workdays=Workdays(0, None, False, "UTC", None, seen=9, by_day=0))
    world = World(scarce=scarce, pasts={G5.instance_id: by_night})
    decided = run(learned, world, night)
    assert decided.action is Action.STOP
    assert (decided.start_at, decided.start_for, decided.run_at) == (
        night.replace(hour=17),
        StartFor.NIGHTS_RUN,
        run_at,
    )
    # Its run's start promised by the learned rule, then the start before it by the scarce one.
    assert world.asked == ["checks", "past blind=[]", "promise job=False", "scarcity", "promise job=False", "bill"]
    refused = World(scarce=scarce, pasts={G5.instance_id: by_night}, promises=False)
    assert run(learned, refused, night).action is not Action.STOP


HOOKED = ActivityCheck(
    CheckState.ANSWERED,
    ActivityReport(
        hook_exit=0,
        hook_line="nightly feature pipeline box: kept for its 01:00 run",
        jobs=MachineJobs((Job(JobKind.CRON, "0 1 * * *", "pipeline.py"),), zone="UTC", found=1),
    ),
)


def test_a_machine_idle_but_for_its_hook_is_kept_for_its_hook_with_the_runs_its_own_schedule_names() -> None:
    decided = run(warn(), World(checks_of={G5.instance_id: HOOKED}))
    assert decided.action is Action.NONE
    assert decided.kept_for is KeptFor.ITS_HOOK  # what the hook's offer is made on (offers.py)
    assert decided.runs.startswith("runs `pipeline.py` at 01:00 UTC")


def test_a_hook_is_not_what_keeps_a_machine_someone_works_on() -> None:
    assert HOOKED.report is not None
    typed = replace(HOOKED, report=replace(HOOKED.report, sessions=(Session("pts/0", 60),)))
    decided = run(warn(), World(checks_of={G5.instance_id: typed}))
    assert decided.action is Action.NONE
    assert decided.kept_for is None  # its person keeps it: no offer about its hook


def test_a_machine_kept_for_its_runs_in_place_of_its_hook_is_judged_without_the_hook() -> None:
    def decided(value: str) -> Decision:
        world = World(checks_of={G5.instance_id: HOOKED})
        kept = replace(G5, tags={"costguard:keep-for-runs": value})
        [(_, out)] = pipeline.decide([(kept, warn(AFTERNOON))], world, world, POLICY, AFTERNOON)
        return out

    aside = decided("ignore-hook")
    assert aside.action is Action.WARN  # the hook's keep no longer holds it
    assert aside.start_at == datetime(2026, 11, 25, 0, 45, tzinfo=UTC)  # ... and its run's start is promised
    [check] = [s for s in aside.trail if s.rule is Rule.MACHINE_CHECK]
    assert "its keep-alive hook is not asked: its owner keeps it for its runs in its place" in check.why  # Why?
    assert decided("on").action is Action.NONE  # a keep for its runs written otherwise leaves its hook its word


def test_nights_its_owners_word_set_aside_are_said_on_its_trail_and_only_those() -> None:
    blind = {G5.instance_id: ActivityCheck(CheckState.NO_AGENT)}
    aside = run(stop(), World(checks_of=blind, pasts={G5.instance_id: Past(nights_aside=True)}))
    assert aside.action is Action.STOP
    assert [s.why for s in aside.trail if s.rule is Rule.NIGHT_WORK] == [NIGHTS_ON_ITS_WORD]
    for past in (Past(), Past(nights_aside=True, nights_unread=True)):
        decided = run(stop(), World(checks_of=blind, pasts={G5.instance_id: past}))
        assert NIGHTS_ON_ITS_WORD not in [s.why for s in decided.trail]
