"""A stop is worth what the bill saves over the hours it keeps the machine off, on the region's spill profile."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.bill import SLOT, Bill, Exposure, SpillProfile
from costguard.core.money import Basis, Billing, Hold, Marginal, Plan, Reserved
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, Decision, KeptFor
from costguard.idle.rules.pipeline import stepped
from costguard.idle.rules.trail import Rule
from costguard.idle.rules.worth import (
    LONGEST_OFF,
    in_force,
    judged,
    off_until,
    over_its_off_period,
    over_off_period,
    restart_usd,
    stopped_until,
    undone_after,
)

TUESDAY = datetime(2026, 11, 24, tzinfo=UTC)  # a Tuesday
P4D = 21.96
POLICY = IdlePolicy()  # the team's hours: weekdays 08:00-19:00 UTC; a person's hour $150


def p4d(n: int, *, lifecycle: str = "", reservation: str = "") -> Instance:
    return Instance(
        f"i-{n:08x}",
        "us-east-1",
        "p4d.24xlarge",
        "running",
        TUESDAY - timedelta(days=2),
        zone="us-east-1a",
        lifecycle=lifecycle,
        capacity_reservation_id=reservation,
    )


def price(_: Instance) -> float:
    return P4D


def profile(key: str, spill: float, start: datetime, end: datetime, *, else_: float = 0.0) -> SpillProfile:
    """A profile learned over a whole week: `spill` from `start` to `end`, `else_` at every other quarter-hour."""
    week = SpillProfile("us-east-1")
    moment = TUESDAY - timedelta(days=1)
    while moment < TUESDAY + timedelta(days=6):
        week = week.learned({key: spill if start <= moment < end else else_}, moment)
        moment += SLOT
    return week


def stop(machine: Instance, **fields: object) -> Decision:
    return Decision(machine.instance_id, Action.STOP, "idle through the grace period", **fields)  # type: ignore[arg-type]


def priced(
    billing: Billing, machine: Instance, decision: Decision, week: SpillProfile | None, now: datetime
) -> Decision:
    exposure = Bill(billing, now, list_price=price).exposure(machine, P4D)
    until = off_until(decision, machine, POLICY, now)
    found = over_off_period(exposure, week, now, until, restart_usd(POLICY))
    return judged(decision, exposure.marginal, found, until)


def compute_plan(commitment: float, *, end: datetime | None = None) -> Plan:
    return Plan("sp-1", "Compute", end or TUESDAY + timedelta(days=300), commitment_usd_per_hour=commitment, rate=0.7)


def on_plan(fleet: Sequence[Instance], plan: Plan) -> Billing:
    return Billing("us-east-1", running=tuple(fleet), plans=(plan,))


def test_an_idle_machine_on_an_under_used_plan_at_night_is_stopped_for_the_morning_when_the_plan_spills() -> None:
    # At 02:00 the $35/h plan ($50/h of on-demand usage) has room for both p4d: a stop saves $0 now. The week
    # says the plan spills $40/h from 08:00; the machine's learned run is at 10:00: two hours of its full price.
    now = TUESDAY + timedelta(hours=2)
    fleet = [p4d(0), p4d(1)]
    week = profile("sp:Compute", 40.0, TUESDAY + timedelta(hours=8), TUESDAY + timedelta(hours=19))
    decision = stop(fleet[0], start_at=TUESDAY + timedelta(hours=10), next_work="its run at 10:00")
    after = priced(on_plan(fleet, compute_plan(35.0)), fleet[0], decision, week, now)
    assert after.action is Action.STOP
    assert after.bill is not None
    assert after.bill.usd_per_hour == 0.0  # nothing now
    assert after.worth is not None
    assert after.worth.usd == 43.92
    assert after.worth.text() == "saves about $44 by Tue 10:00 UTC on the bill: the Savings Plan spills from 08:00 UTC"
    step = stepped(Rule.BILL, decision, after).trail[-1]
    assert step.rule is Rule.BILL
    assert "saves about $44 by Tue 10:00 UTC" in step.why
    assert "spills from 08:00 UTC" in step.why


def test_a_night_that_stays_under_the_plan_until_the_team_comes_in_saves_nothing_and_is_not_stopped() -> None:
    # Off until the team's hours open at 08:00; the plan spills only from 09:00: the stop saves nothing.
    now = TUESDAY + timedelta(hours=2)
    fleet = [p4d(0), p4d(1)]
    week = profile("sp:Compute", 40.0, TUESDAY + timedelta(hours=9), TUESDAY + timedelta(hours=19))
    after = priced(on_plan(fleet, compute_plan(35.0)), fleet[0], stop(fleet[0]), week, now)
    assert after.action is Action.CLEAR_WARNING
    assert after.kept_for is KeptFor.NOTHING_SAVED
    assert "nor until Tue 08:00 UTC" in after.reason


def test_a_first_weeks_friday_night_stop_is_priced_on_this_hour_when_the_weekend_was_never_seen() -> None:
    # A profile of the weekdays only (a deploy on Monday): the plan has room now, Friday 22:00, and the weekend's
    # quarter-hours were never seen. Monday morning spills, but the machine may well be back before then: the
    # stop is judged on this hour alone (it saves nothing now: not made), never on hours the bill has not shown.
    friday = TUESDAY + timedelta(days=3, hours=22)
    week = SpillProfile("us-east-1")
    moment = TUESDAY - timedelta(days=1)
    while moment < friday:
        week = week.learned({"sp:Compute": 40.0 if 8 <= moment.hour < 19 else 0.0}, moment)
        moment += SLOT
    fleet = [p4d(0), p4d(1)]
    after = priced(on_plan(fleet, compute_plan(35.0)), fleet[0], stop(fleet[0]), week, friday)
    assert after.action is Action.CLEAR_WARNING
    assert after.worth is not None
    assert not after.worth.profiled
    assert "priced on this hour alone" in after.reason


def test_a_small_spill_worth_less_than_a_restart_is_not_stopped_for() -> None:
    # $2/h of spill for an hour (07:00-08:00) saves $2: less than a restart is expected to cost ($50 x 0.1).
    now = TUESDAY + timedelta(hours=2)
    fleet = [p4d(0), p4d(1)]
    week = profile("sp:Compute", 2.0, TUESDAY + timedelta(hours=7), TUESDAY + timedelta(hours=19))
    after = priced(on_plan(fleet, compute_plan(35.0)), fleet[0], stop(fleet[0]), week, now)
    assert after.action is Action.CLEAR_WARNING
    assert after.worth is not None
    assert after.worth.usd == 2.0
    assert "saves about $2.00 on the bill, no more than its restart is expected to cost ($5.00)" in after.reason


def test_an_ri_pool_that_frees_at_18_saves_only_the_hours_before() -> None:
    # 4 p4d on 3 RIs at 14:00: a stop saves the on-demand price now; from 18:00 the others stop and the RIs
    # cover it. Off until Wednesday 08:00 (18 hours), it saves the 4 hours to 18:00 alone.
    now = TUESDAY + timedelta(hours=14)
    fleet = [p4d(n) for n in range(4)]
    ris = (Reserved("ri", "p4d.24xlarge", 3, TUESDAY - timedelta(days=10), TUESDAY + timedelta(days=300)),)
    week = profile("ri:p4d/default", 192.0, TUESDAY + timedelta(hours=8), TUESDAY + timedelta(hours=18))
    after = priced(Billing("us-east-1", running=tuple(fleet), reserved=ris), fleet[0], stop(fleet[0]), week, now)
    assert after.action is Action.STOP
    assert after.worth is not None
    assert after.worth.until == TUESDAY + timedelta(days=1, hours=8)
    assert after.worth.usd == round(4 * P4D, 2)


def test_a_capacity_block_ending_at_03_saves_nothing_over_its_off_period() -> None:
    # The block is prepaid to its end, and its machine ends with it.
    now = TUESDAY + timedelta(hours=22)
    block = Hold("cb-1", "p4d.24xlarge", "us-east-1a", 1, 0, TUESDAY + timedelta(days=1, hours=3), block=True)
    machine = p4d(0, lifecycle="capacity-block", reservation="cb-1")
    week = SpillProfile("us-east-1")
    after = priced(Billing("us-east-1", running=(machine,), holds=(block,)), machine, stop(machine), week, now)
    assert after.action is Action.CLEAR_WARNING
    assert after.worth is not None
    assert after.worth.usd == 0.0


def test_a_capacity_reservation_ending_at_03_saves_the_on_demand_hours_after_it() -> None:
    now = TUESDAY + timedelta(hours=22)
    held = Hold("cr-1", "p4d.24xlarge", "us-east-1a", 1, 0, TUESDAY + timedelta(days=1, hours=3), block=False)
    machine = p4d(0, reservation="cr-1")
    week = SpillProfile("us-east-1")
    after = priced(Billing("us-east-1", running=(machine,), holds=(held,)), machine, stop(machine), week, now)
    assert after.action is Action.STOP
    assert after.worth is not None
    assert after.worth.usd == round(5 * P4D, 2)  # 03:00 to 08:00
    assert after.worth.text().endswith("the capacity reservation spills from 03:00 UTC")


def test_a_plan_expiring_mid_week_makes_the_hours_after_its_end_worth_their_price() -> None:
    # The plan has room all night (the profile says no spill) but ends at 05:00: from then the machine is billed
    # on demand, and the stop saves its price to the team's 08:00.
    now = TUESDAY + timedelta(hours=1)
    fleet = [p4d(0), p4d(1)]
    week = profile("sp:Compute", 0.0, TUESDAY, TUESDAY)
    plan = compute_plan(35.0, end=TUESDAY + timedelta(hours=5))
    after = priced(on_plan(fleet, plan), fleet[0], stop(fleet[0]), week, now)
    assert after.action is Action.STOP
    assert after.worth is not None
    assert after.worth.usd == round(3 * P4D, 2)


def test_with_no_profile_yet_a_stop_is_priced_on_this_hour_and_the_trail_says_so() -> None:
    now = TUESDAY + timedelta(hours=2)
    fleet = [p4d(0), p4d(1)]
    covered = priced(on_plan(fleet, compute_plan(35.0)), fleet[0], stop(fleet[0]), None, now)
    assert covered.action is Action.CLEAR_WARNING  # today's rule: it saves nothing this hour
    assert covered.reason.endswith("no profile of the bill's week for its hours off yet: priced on this hour alone")
    on_demand = priced(Billing("us-east-1", running=tuple(fleet)), fleet[0], stop(fleet[0]), None, now)
    assert on_demand.action is Action.STOP
    step = stepped(Rule.BILL, stop(fleet[0]), on_demand).trail[-1]
    assert step.why == (
        "a stop saves $21.96/h on the bill now: on demand; "
        "no profile of the bill's week for its hours off yet: priced on this hour alone"
    )


def test_two_stops_in_one_sweep_share_the_mornings_spill_in_turn() -> None:
    # The plan spills $30/h from 08:00 to 10:00: the first p4d takes $21.96 of it, the second the $8.04 left.
    now = TUESDAY + timedelta(hours=2)
    fleet = [p4d(0), p4d(1)]
    week = profile("sp:Compute", 30.0, TUESDAY + timedelta(hours=8), TUESDAY + timedelta(hours=19))
    bill = Bill(on_plan(fleet, compute_plan(35.0)), now, list_price=price)
    until = TUESDAY + timedelta(hours=10)
    first = over_off_period(bill.exposure(fleet[0], P4D), week, now, until, 5.0)
    assert first is not None
    second = over_off_period(bill.exposure(fleet[1], P4D), week, now, until, 5.0, first.takes)
    assert second is not None
    assert (first.worth.usd, second.worth.usd) == (round(2 * P4D, 2), round(2 * (30 - P4D), 2))


SATURDAY = TUESDAY + timedelta(days=4)
MONDAY = TUESDAY + timedelta(days=6)


def mondays_spill(usd: float) -> SpillProfile:
    """A week learned the Monday before: `usd` an hour spilling from 08:00 to 10:00, nothing else."""
    learned = MONDAY - timedelta(days=7)
    return profile("sp:Compute", usd, learned + timedelta(hours=8), learned + timedelta(hours=10))


def covered_now(on_demand: float) -> Exposure:
    """A machine the Compute plan covers now, whose usage is on demand where the plan spills."""
    marginal = Marginal(0.0, on_demand, Basis.SAVINGS_PLAN, "covered: the plan has room now")
    return Exposure(marginal, plan_keys=("sp:Compute",))


def test_stops_of_earlier_sweeps_still_off_take_their_share_of_the_spill_before_a_new_stop() -> None:
    # $10/h spills on Monday 08:00-10:00. Three Saturday sweeps each stop a $4/h machine off until Monday 10:00:
    # the first two, still off, take $8/h of it; the third saves the $2/h left, not its full $4/h, and says so.
    week = mondays_spill(10.0)
    until = MONDAY + timedelta(hours=10)
    kept: list[tuple[str, Exposure, datetime]] = []
    saved = []
    for n in range(3):
        now = SATURDAY + timedelta(minutes=15 * n)
        found = over_off_period(covered_now(4.0), week, now, until, 1.0, kept=in_force(kept, week, now))
        assert found is not None
        saved.append(found.worth.usd)
        kept.append((f"i-{n}", covered_now(4.0), until))
    assert saved == [8.0, 8.0, 4.0]
    assert found is not None
    assert found.worth.room_taken_usd == 4.0
    assert found.worth.text() == (
        "saves about $4 by Mon 10:00 UTC on the bill: the Savings Plan spills from 08:00 UTC; "
        "2 machines costguard keeps stopped already take $4 of that spill"
    )


def test_a_stop_whose_spill_the_machines_kept_stopped_took_is_not_made_and_the_reason_says_who_took_it() -> None:
    week = mondays_spill(10.0)
    until = MONDAY + timedelta(hours=10)
    now = SATURDAY + timedelta(hours=1)
    kept = in_force([("i-a", covered_now(6.0), until), ("i-b", covered_now(6.0), until)], week, now)
    found = over_off_period(covered_now(4.0), week, now, until, 1.0, kept=kept)
    assert found is not None
    assert found.worth.usd == 0.0
    machine = p4d(9)
    after = judged(stop(machine), covered_now(4.0).marginal, found, until)
    assert after.action is Action.CLEAR_WARNING
    assert after.kept_for is KeptFor.NOTHING_SAVED
    assert "nor until Mon 10:00 UTC; 2 machines costguard keeps stopped already take $8 of that spill" in after.reason


def test_a_machine_kept_stopped_takes_the_spill_only_until_it_is_expected_to_run_again() -> None:
    # Back at 09:00 (its start-at): from then the spill is the new stop's again.
    week = mondays_spill(10.0)
    until = MONDAY + timedelta(hours=10)
    now = SATURDAY
    kept = in_force([("i-a", covered_now(10.0), MONDAY + timedelta(hours=9))], week, now)
    found = over_off_period(covered_now(4.0), week, now, until, 1.0, kept=kept)
    assert found is not None
    assert found.worth.usd == 4.0  # 09:00-10:00 alone


def test_a_machine_kept_stopped_is_expected_off_until_its_start_at_else_its_owners_next_working_hours() -> None:
    now = SATURDAY + timedelta(hours=1)
    start_at = MONDAY + timedelta(hours=6)
    promised = replace(p4d(1), state="stopped", tags={tags.START_AT: start_at.isoformat()})
    assert stopped_until(promised, POLICY, now) == start_at
    plain = replace(p4d(2), state="stopped")
    assert stopped_until(plain, POLICY, now) == MONDAY + timedelta(hours=8)  # the team's hours open
    past = replace(p4d(3), state="stopped", tags={tags.START_AT: (now - timedelta(hours=2)).isoformat()})
    assert stopped_until(past, POLICY, now) == MONDAY + timedelta(hours=8)


def test_a_machine_stopped_days_ago_that_nobody_started_stays_off_over_the_hours_a_week_ago_counted_it() -> None:
    # Stopped on Tuesday 02:00, five days before Sunday 02:00 (past LONGEST_OFF, no start promised): nobody wanted it
    # back through two working days, so it is taken as off to the horizon (not back at Monday 08:00), and only to
    # the quarter-hours the sweeps a week before learned gross of it: its stop's week and LONGEST_OFF on.
    now = SATURDAY + timedelta(days=1, hours=2)
    five_days = replace(
        p4d(1), state="stopped", tags={tags.STOPPED_AT: (now - timedelta(days=5)).isoformat()}, launch_time=TUESDAY
    )
    assert stopped_until(five_days, POLICY, now) == now + LONGEST_OFF
    nine_days = replace(five_days, tags={tags.STOPPED_AT: (now - timedelta(days=9)).isoformat()})
    nine_days = replace(nine_days, launch_time=now - timedelta(days=10))
    assert stopped_until(nine_days, POLICY, now) == now - timedelta(days=9) + timedelta(days=7) + LONGEST_OFF
    last_night = replace(five_days, tags={tags.STOPPED_AT: (now - timedelta(hours=4)).isoformat()})
    assert stopped_until(last_night, POLICY, now) == MONDAY + timedelta(hours=8)  # the team's hours open
    # a start costguard will make brings it back: a start-at just due, or its working hours' schedule
    due = {**five_days.tags, tags.START_AT: (now - timedelta(minutes=5)).isoformat()}
    assert stopped_until(replace(five_days, tags=due), POLICY, now) == MONDAY + timedelta(hours=8)
    hours = {**five_days.tags, tags.SCHEDULE: "Mon-Fri 08:00-19:00 UTC"}
    assert stopped_until(replace(five_days, tags=hours), POLICY, now) == MONDAY + timedelta(hours=8)


def test_with_no_machine_kept_stopped_a_stop_is_priced_and_said_as_before() -> None:
    week = mondays_spill(10.0)
    until = MONDAY + timedelta(hours=10)
    alone = over_off_period(covered_now(4.0), week, SATURDAY, until, 1.0)
    none_kept = over_off_period(covered_now(4.0), week, SATURDAY, until, 1.0, kept=in_force([], week, SATURDAY))
    assert alone == none_kept
    assert alone is not None
    assert alone.worth.text() == "saves about $8 by Mon 10:00 UTC on the bill: the Savings Plan spills from 08:00 UTC"


def undone(machine: Instance, *, stopped: datetime, started: datetime) -> Instance:
    """The machine costguard stopped at `stopped`, running again since `started` (someone else's start)."""
    return replace(machine, launch_time=started, tags={**machine.tags, tags.STOPPED_AT: stopped.isoformat()})


def test_how_soon_a_person_undid_costguards_last_stop_is_known_and_a_days_start_is_no_undo() -> None:
    machine = undone(p4d(4), stopped=SATURDAY + timedelta(hours=5), started=SATURDAY + timedelta(hours=7))
    assert undone_after(machine, POLICY) == timedelta(hours=2)
    assert undone_after(p4d(5), POLICY) is None  # never stopped by costguard
    next_day = undone(p4d(6), stopped=SATURDAY - timedelta(hours=14), started=SATURDAY + timedelta(hours=7))
    assert undone_after(next_day, POLICY) is None, "started 21 h on: the day's work, not an undo"


def mondays_from_six(usd: float) -> SpillProfile:
    """The plan has room all weekend and spills `usd` an hour on Monday from 06:00 to 10:00."""
    learned = MONDAY - timedelta(days=7)
    return profile("sp:Compute", usd, learned + timedelta(hours=6), learned + timedelta(hours=10))


def test_a_weekend_stop_of_a_machine_its_person_keeps_starting_again_saves_nothing_and_is_not_made() -> None:
    # Priced to Monday 08:00 (its owner's hours), the stop is worth $8 (06:00-08:00 at $4/h); its person started the
    # machine again 2 h after costguard's last stop, and the plan has room until then: it saves nothing.
    now = SATURDAY + timedelta(hours=9)
    machine = undone(p4d(7), stopped=SATURDAY + timedelta(hours=5), started=SATURDAY + timedelta(hours=7))
    exposure = covered_now(4.0)
    found, until = over_its_off_period(exposure, mondays_from_six(10.0), now, stop(machine), machine, POLICY)
    assert until == now + timedelta(hours=2)
    after = judged(stop(machine), exposure.marginal, found, until)
    assert after.action is Action.CLEAR_WARNING
    assert after.kept_for is KeptFor.NOTHING_SAVED
    assert "nor until Sat 11:00 UTC" in after.reason
    plain = p4d(8)  # nobody undid its stops: priced to its owner's hours, and stopped
    found, until = over_its_off_period(exposure, mondays_from_six(10.0), now, stop(plain), plain, POLICY)
    assert until == MONDAY + timedelta(hours=8)
    kept = judged(stop(plain), exposure.marginal, found, until)
    assert kept.action is Action.STOP
    assert kept.worth is not None
    assert kept.worth.usd == 8.0


def test_a_stop_of_a_machine_its_person_undid_that_saves_before_they_come_back_is_priced_to_its_whole_off_period() -> (
    None
):
    # Sunday 05:00: the person may be back in 2 h, but the machine is on demand now ($21.96/h): the stop saves from
    # its first quarter-hour, and is priced as any other, to its owner's hours.
    now = SATURDAY + timedelta(days=1, hours=5)
    machine = undone(p4d(9), stopped=now - timedelta(hours=4), started=now - timedelta(hours=2))
    on_demand = Exposure(Marginal(P4D, P4D, Basis.ON_DEMAND, "on demand"))
    found, until = over_its_off_period(on_demand, mondays_from_six(10.0), now, stop(machine), machine, POLICY)
    assert until == MONDAY + timedelta(hours=8)
    assert found is not None
    assert found.worth.usd == round(27 * P4D, 2)
