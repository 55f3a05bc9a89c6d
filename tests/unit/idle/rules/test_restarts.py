"""When costguard starts a machine again, and whether AWS's record proves a stop or a start a dead attempt
made: pure rules, `now` and the decision times passed in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.report import Outcome, Settled, Status
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.restarts import (
    COLD_START_MINUTES,
    SKEW,
    UNDONE_WAIT,
    UNDONE_WITHIN,
    cold_start_usd,
    held_after_undo,
    proves_stop,
    started_after,
    undone_stop,
    working_hours_start,
)

POLICY = IdlePolicy()
OPENS = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)  # a Tuesday
LEAD = timedelta(minutes=POLICY.schedule_lead_minutes)
DECIDED = datetime(2026, 11, 23, 22, 0, tzinfo=UTC)
WARNED = DECIDED - timedelta(hours=1)


def box(
    state: str = "stopped", launched: datetime = OPENS - timedelta(days=1), tagged: dict[str, str] | None = None
) -> Instance:
    return Instance("i-0123456789abcdef0", "eu-west-1", "g5.xlarge", state, launched, tags=tagged or {})


def test_a_stopped_machine_is_started_for_its_working_hours_within_the_lead() -> None:
    machine = box(tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert working_hours_start(machine, OPENS - LEAD + timedelta(minutes=1), POLICY) == OPENS


def test_a_machine_is_not_started_before_the_lead_of_its_working_hours() -> None:
    machine = box(tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert working_hours_start(machine, OPENS - LEAD - timedelta(minutes=5), POLICY) is None


def test_a_machine_started_for_this_window_and_stopped_by_its_owner_stays_stopped() -> None:
    machine = box(launched=OPENS - LEAD + timedelta(minutes=1), tagged={tags.SCHEDULE: "daily 09:00-17:00 UTC"})
    assert working_hours_start(machine, OPENS - timedelta(minutes=2), POLICY) is None


def test_an_unreadable_schedule_starts_nothing() -> None:
    assert working_hours_start(box(tagged={tags.SCHEDULE: "whenever"}), OPENS - LEAD, POLICY) is None


def test_a_start_is_proven_by_a_launch_time_after_its_decision_give_or_take_the_clock_skew() -> None:
    assert started_after(box("running", launched=DECIDED - SKEW), DECIDED)
    assert not started_after(box("running", launched=DECIDED - SKEW - timedelta(seconds=1)), DECIDED)
    assert not started_after(None, DECIDED)


def test_a_stop_is_proven_by_its_own_stopped_at_tag_and_not_by_another_stops() -> None:
    key = formatting.format_time(DECIDED)
    ours = box(tagged={tags.STOPPED_AT: key})
    later = box(tagged={tags.STOPPED_AT: formatting.format_time(DECIDED + timedelta(hours=3))})
    assert proves_stop(ours, warned=WARNED, decided=DECIDED, key=key)
    assert not proves_stop(later, warned=WARNED, decided=DECIDED, key=key)


def test_a_stop_is_proven_by_ec2s_reason_or_a_start_since_and_not_by_a_machine_gone() -> None:
    key = formatting.format_time(DECIDED)

    def stopped(asked: datetime) -> Instance:
        reason = f"User initiated ({asked:%Y-%m-%d %H:%M:%S} GMT)"
        return Instance("i-1", "eu-west-1", "g5.xlarge", "stopped", WARNED, state_reason=reason)

    assert proves_stop(stopped(DECIDED + timedelta(seconds=5)), warned=WARNED, decided=DECIDED, key=key)
    assert not proves_stop(stopped(DECIDED - timedelta(hours=1)), warned=WARNED, decided=DECIDED, key=key)
    started_since = box("running", launched=DECIDED + timedelta(hours=1))
    assert proves_stop(started_since, warned=WARNED, decided=DECIDED, key=key)
    assert not proves_stop(None, warned=WARNED, decided=DECIDED, key=key)


def test_an_outcome_is_settled_by_the_last_step_that_had_something_to_say() -> None:
    outcome = Outcome("i-1", "g5.xlarge", "ana", Action.STOP, "idle for 2 h")
    failed = outcome.settled(None, Settled.retry("Throttling"), None)
    assert (failed.status, failed.applied, failed.detail) == (Status.RETRY, False, "Throttling")
    assert outcome.settled(None, None) == outcome
    assert (outcome.status, outcome.applied) == (Status.DONE, True)  # frozen: the first stays as it was


# ------------------------------------------------------------------ a stop its person undid
def undone_box(stopped: timedelta, **more: str) -> Instance:
    """Running since NOW - 1 h, costguard's stop `stopped` before that start."""
    launched = NOW - timedelta(hours=1)
    return box("running", launched, {tags.STOPPED_AT: formatting.format_time(launched - stopped), **more})


NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)


def test_a_person_who_starts_a_machine_soon_after_costguards_stop_undid_it() -> None:
    machine = undone_box(timedelta(minutes=40))
    assert undone_stop(machine, [], POLICY) == machine.launch_time - timedelta(minutes=40)
    assert undone_stop(undone_box(UNDONE_WITHIN + timedelta(minutes=1)), [], POLICY) is None  # the next day's work
    assert undone_stop(box("running", NOW - timedelta(hours=1)), [], POLICY) is None  # costguard never stopped it
    # costguard's own start (a learned or job start it logged, its working hours' opening) undoes nothing
    assert undone_stop(machine, [machine.launch_time - timedelta(minutes=3)], POLICY) is None
    hours = undone_box(timedelta(minutes=40), **{tags.SCHEDULE: "daily 14:15-18:00 UTC"})
    assert undone_stop(hours, [], POLICY) is None


def test_a_machine_whose_stop_was_undone_is_not_warned_again_until_it_has_run_twice_the_window() -> None:
    machine = undone_box(timedelta(minutes=40))
    warn = Decision(machine.instance_id, Action.WARN, "idle for 120 min", stop_after=NOW + timedelta(minutes=30))
    stopped = machine.launch_time - timedelta(minutes=40)
    held = held_after_undo(warn, machine, stopped, POLICY, NOW)
    assert held.action is Action.NONE
    assert held.reason == (
        "its owner started it again 40 min after costguard stopped it: not warned in its first 4 h (until 18:00 UTC)"
    )
    later = NOW + timedelta(hours=3)
    assert held_after_undo(warn, machine, stopped, POLICY, later) == warn
    assert held_after_undo(warn, machine, None, POLICY, NOW) == warn
    wait = Decision(machine.instance_id, Action.WAIT, "idle")
    assert held_after_undo(wait, machine, stopped, POLICY, NOW) == wait


def test_after_an_undo_a_cheap_machine_waits_until_its_idle_hours_have_paid_for_its_persons_cold_start() -> None:
    """Ski rental: the person who just undid a stop is likely to come back; a stop again pays only once the
    machine's hours since their start cost what their cold start cost ($50 at $150 an hour): 8.8 h for a
    $5.67 machine, the window's 4 h for a $32 one."""
    machine = undone_box(timedelta(minutes=40))
    warn = Decision(machine.instance_id, Action.WARN, "idle for 120 min", stop_after=NOW + timedelta(minutes=30))
    stopped = machine.launch_time - timedelta(minutes=40)
    cheap, dear = 5.672, 32.77
    paid = machine.launch_time + timedelta(hours=COLD_START_MINUTES / 60 * POLICY.person_hour_usd / cheap)
    for at in (machine.launch_time + timedelta(hours=5), paid - timedelta(minutes=1)):
        held = held_after_undo(warn, machine, stopped, POLICY, at, usd_per_hour=cheap)
        assert held.action is Action.NONE
        assert held.reason.startswith(
            "its owner started it again 40 min after costguard stopped it: not warned before its idle hours pay "
            "for their cold start ($50 at $5.67/h: 8 h 49 min)"
        )
    assert held_after_undo(warn, machine, stopped, POLICY, paid, usd_per_hour=cheap) == warn
    later = machine.launch_time + timedelta(hours=4)
    assert held_after_undo(warn, machine, stopped, POLICY, later, usd_per_hour=dear) == warn
    assert held_after_undo(warn, machine, stopped, POLICY, later, usd_per_hour=None) == warn  # unpriced: the window
    nobody = IdlePolicy(person_hour_usd=0)
    assert held_after_undo(warn, machine, stopped, nobody, later, usd_per_hour=cheap) == warn


@given(usd_per_hour=st.floats(min_value=0.05, max_value=200), person=st.sampled_from([0, 60, 150, 400]))
@settings(max_examples=60, deadline=None)
def test_the_hold_after_an_undo_is_two_windows_at_least_and_costs_at_most_one_cold_start_beyond_them(
    usd_per_hour: float, person: int
) -> None:
    """Whatever the machine's price: warned once its idle hours since the person's start cost the cold start, or
    after two windows, whichever is later, and never before two windows."""
    policy = IdlePolicy(person_hour_usd=person)
    machine = undone_box(timedelta(minutes=40))
    warn = Decision(machine.instance_id, Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))
    stopped = machine.launch_time - timedelta(minutes=40)
    window = UNDONE_WAIT * timedelta(minutes=policy.window_minutes)
    pays = timedelta(hours=cold_start_usd(policy) / usd_per_hour)
    until = machine.launch_time + max(window, pays)

    def held(at: datetime) -> bool:
        return held_after_undo(warn, machine, stopped, policy, at, usd_per_hour=usd_per_hour).action is Action.NONE

    assert held(machine.launch_time + window - timedelta(minutes=1))
    assert held(until - timedelta(minutes=1))
    assert not held(until)
    # the idle hours held past the window cost at most the cold start
    assert usd_per_hour * max(timedelta(0), until - machine.launch_time - window) / timedelta(hours=1) <= (
        cold_start_usd(policy) + 1e-6
    )
