"""A sweep's warnings and stops priced together, in the order the machines will go."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.aws.pricing import PriceBook
from costguard.core import formatting, tags
from costguard.core.bill import SLOT, SpillProfile
from costguard.core.money import Billing, Plan, Reserved
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.acts.worth import keep_spill
from costguard.idle.reads.bill import SweepBill
from costguard.idle.rules.decision import Action, Decision
from costguard.state.spill import SpillLog
from testing.aws.dynamodb import DynamoDBClient

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


class Reader:
    """A bill reader over fixed RIs that counts its reads."""

    def __init__(self, ris: int, *, fails: bool = False) -> None:
        self.ris, self.fails, self.reads = ris, fails, 0

    def read(self, running: Sequence[Instance], now: datetime) -> Billing:
        self.reads += 1
        if self.fails:
            raise KeyError("UtilizationPercentage")  # an answer costguard could not read
        ri = Reserved("ri", "p4d.24xlarge", self.ris, now - timedelta(days=1), now + timedelta(days=300))
        return Billing("us-east-1", running=tuple(running), reserved=(ri,))


def p4d(n: int) -> Instance:
    return Instance(f"i-{n:08x}", "us-east-1", "p4d.24xlarge", "running", NOW - timedelta(days=2), zone="us-east-1a")


FLEET = [p4d(n) for n in range(4)]


def sweep_bill(reader: object) -> SweepBill:
    return SweepBill(reader, PriceBook(None), lambda: FLEET, NOW, "us-east-1")  # type: ignore[arg-type]


def test_a_stop_due_is_priced_before_a_new_warning_so_the_warned_machine_is_not_withdrawn() -> None:
    # 4 p4d on 3 RIs: one stop saves the on-demand price. The machine due to stop takes it; the new
    # warning, listed first, would otherwise take it and withdraw a warning its owner already read.
    bill = sweep_bill(Reader(3))
    warn = Decision(FLEET[0].instance_id, Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))
    stop = Decision(FLEET[1].instance_id, Action.STOP, "idle through the grace period")
    [(_, warned), (_, stopped)] = bill.priced([(FLEET[0], warn), (FLEET[1], stop)])
    assert stopped.action is Action.STOP
    assert stopped.bill is not None
    assert stopped.bill.usd_per_hour == 21.96
    assert warned.action is Action.NONE  # once that stop is made, a second saves nothing


def test_a_machine_in_its_grace_period_counts_as_going_before_this_sweeps_warnings() -> None:
    bill = sweep_bill(Reader(3))
    bill.note(FLEET[2], Decision(FLEET[2].instance_id, Action.WAIT, "warned, grace running"))
    warn = Decision(FLEET[0].instance_id, Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))
    [(_, warned)] = bill.priced([(FLEET[0], warn)])
    assert warned.action is Action.NONE


def test_the_bill_is_read_once_a_sweep_and_not_at_all_without_a_warning_or_stop() -> None:
    reader = Reader(0)
    bill = sweep_bill(reader)
    bill.priced([(FLEET[0], Decision(FLEET[0].instance_id, Action.SKIP, "exempt"))])
    assert reader.reads == 0
    bill.priced([(FLEET[0], Decision(FLEET[0].instance_id, Action.STOP, "idle"))])
    assert reader.reads == 1


def test_an_answer_costguard_cannot_read_prices_on_demand_and_says_so_instead_of_failing_the_sweep() -> None:
    bill = sweep_bill(Reader(3, fails=True))
    [(_, stopped)] = bill.priced([(FLEET[0], Decision(FLEET[0].instance_id, Action.STOP, "idle"))])
    assert stopped.action is Action.STOP
    assert stopped.bill is not None
    assert stopped.bill.usd_per_hour == 21.96
    assert "Reserved Instances not read" in stopped.bill.caveat


def test_without_a_reader_a_capacity_block_machine_is_still_not_stopped() -> None:
    block = Instance("i-b", "us-east-1", "p5.48xlarge", "running", NOW, lifecycle="capacity-block")
    bill = SweepBill(None, PriceBook(None), lambda: [block], NOW, "us-east-1")
    [(_, decided)] = bill.priced([(block, Decision("i-b", Action.STOP, "idle"))])
    assert decided.action is Action.CLEAR_WARNING
    ordinary = p4d(9)
    plain = Decision(ordinary.instance_id, Action.STOP, "idle")
    assert bill.priced([(ordinary, plain)]) == [(ordinary, plain)]  # nothing read: the decision as it was


class PlanReader:
    """A bill reader over a Compute Savings Plan whose commitment pays for `room` p4d an hour, used up lately
    (`hourly` False: its commitment and rate not known, used 80 % lately)."""

    def __init__(self, room: float, *, hourly: bool = True) -> None:
        self.room, self.hourly = room, hourly

    def read(self, running: Sequence[Instance], now: datetime) -> Billing:
        plan = Plan(
            "sp-1", "Compute", now + timedelta(days=90), used_percent=100.0 if self.hourly else 80.0,
            commitment_usd_per_hour=self.room * 21.96 * 0.72 if self.hourly else None, rate=0.72,
        )  # fmt: skip
        return Billing("us-east-1", running=tuple(running), plans=(plan,), plan_spill_usd_per_hour=500.0)


def test_a_savings_plan_is_priced_on_the_list_prices_of_the_machines_that_run_now() -> None:
    # 4 p4d on a plan paying for 3: one stop saves the on-demand price, the next warning nothing.
    warn = Decision(FLEET[0].instance_id, Action.WARN, "idle", stop_after=NOW + timedelta(minutes=30))
    stop = Decision(FLEET[1].instance_id, Action.STOP, "idle through the grace period")
    [(_, warned), (_, stopped)] = sweep_bill(PlanReader(3)).priced([(FLEET[0], warn), (FLEET[1], stop)])
    assert stopped.bill is not None
    assert stopped.bill.usd_per_hour == 21.96
    assert warned.action is Action.NONE
    # The plan pays for more than runs (the night): its recent "used up" does not make a stop save.
    [(_, night)] = sweep_bill(PlanReader(5)).priced([(FLEET[1], stop)])
    assert night.action is not Action.STOP
    assert night.bill is not None
    assert night.bill.usd_per_hour == 0


class SpillReader:
    """A bill reader over a Compute Savings Plan whose commitment leaves `spill` USD/h of what runs on demand."""

    def __init__(self, spill: float) -> None:
        self.spill = spill

    def read(self, running: Sequence[Instance], now: datetime) -> Billing:
        worth = sum(PriceBook(None).hourly(i.instance_type, i.region).usd_per_hour or 0 for i in running)
        plan = Plan(
            "sp-1", "Compute", now + timedelta(days=90), used_percent=100.0,
            commitment_usd_per_hour=(worth - self.spill) * 0.72, rate=0.72,
        )  # fmt: skip
        return Billing("us-east-1", running=tuple(running), plans=(plan,))


def machine(n: int, instance_type: str) -> Instance:
    return Instance(f"i-{n:08x}", "us-east-1", instance_type, "running", NOW - timedelta(days=2), zone="us-east-1a")


def test_the_stops_of_a_sweep_that_overshoot_a_plans_spill_leave_no_stop_that_saved_nothing() -> None:
    # $25/h of what runs spills past the plan. Stopped smallest first, the g5 and the p4d would save their
    # price and the p5 the $25 left: but with the p5 stopped the plan has room for both others again, so
    # their stops saved nothing. The largest first: the p5 alone takes the spill and the others run on.
    small, middle, large = machine(1, "g5.12xlarge"), machine(2, "p4d.24xlarge"), machine(3, "p5.48xlarge")
    fleet = [small, middle, large, *(machine(10 + n, "p4d.24xlarge") for n in range(6))]
    bill = SweepBill(SpillReader(25.0), PriceBook(None), lambda: fleet, NOW, "us-east-1")  # type: ignore[arg-type]
    decided = bill.priced([(m, Decision(m.instance_id, Action.STOP, "idle")) for m in (small, middle, large)])
    stopped = {i.instance_id for i, d in decided if d.action is Action.STOP}
    assert stopped == {large.instance_id}
    [(_, big)] = [(i, d) for i, d in decided if i is large]
    assert big.bill is not None
    assert big.bill.usd_per_hour == 25.0


TYPES = ("g5.xlarge", "g5.12xlarge", "g5.48xlarge", "p4d.24xlarge", "p5.48xlarge")


@settings(max_examples=150, deadline=None)
@given(
    idle=st.lists(st.sampled_from(TYPES), min_size=1, max_size=8),
    busy=st.lists(st.sampled_from(TYPES), max_size=6),
    spill=st.floats(min_value=0.5, max_value=150.0),
)
def test_every_stop_a_sweep_makes_on_a_plan_saves_something_with_the_others_made(
    idle: list[str], busy: list[str], spill: float
) -> None:
    # The bill after the sweep's stops, each one undone alone: the plan's room left must not hold it.
    candidates = [machine(n, t) for n, t in enumerate(idle)]
    fleet = candidates + [machine(100 + n, t) for n, t in enumerate(busy)]
    worth = sum(PriceBook(None).hourly(i.instance_type, i.region).usd_per_hour or 0 for i in fleet)
    if spill >= worth:
        return
    bill = SweepBill(SpillReader(spill), PriceBook(None), lambda: fleet, NOW, "us-east-1")  # type: ignore[arg-type]
    decided = bill.priced([(m, Decision(m.instance_id, Action.STOP, "idle")) for m in candidates])
    stopped = [i for i, d in decided if d.action is Action.STOP]
    price = {i.instance_id: PriceBook(None).hourly(i.instance_type, i.region).usd_per_hour or 0 for i in fleet}
    room = worth - spill
    running = sum(price[i.instance_id] for i in fleet if i not in stopped)
    for m in stopped:
        assert running + price[m.instance_id] > room + 1e-6, f"{m.instance_type} stopped for nothing"


def test_the_machines_kept_stopped_are_priced_on_what_runs_now_dearest_first() -> None:
    # 4 p4d run, 2 more are kept stopped, and 3 RIs: back, 6 would run on 3 RIs, so each stop saves its price.
    # With 5 RIs, one would: the first priced saves its price, the second nothing.
    kept = [replace(p4d(10 + n), state="stopped") for n in range(2)]
    bill = sweep_bill(Reader(3))
    assert bill.worth(kept) == {kept[0].instance_id: 21.96, kept[1].instance_id: 21.96}
    assert sweep_bill(Reader(5)).worth(kept) == {kept[0].instance_id: 21.96, kept[1].instance_id: 0.0}
    # The kept machines go first, this sweep's stops still running: a p5 stopped for the $25/h of spill
    # the plan leaves while the g5 is kept stopped, and the g5's $5.67, add up to the $30.67 both save.
    fleet = [machine(1, "p5.48xlarge"), *(machine(10 + n, "p4d.24xlarge") for n in range(6))]
    g5 = replace(machine(2, "g5.12xlarge"), state="stopped")
    bill = SweepBill(SpillReader(25.0), PriceBook(None), lambda: fleet, NOW, "us-east-1")  # type: ignore[arg-type]
    [(_, p5)] = bill.priced([(fleet[0], Decision(fleet[0].instance_id, Action.STOP, "idle"))])
    assert p5.bill is not None
    assert p5.bill.usd_per_hour == 25.0
    assert bill.worth([g5]) == {g5.instance_id: 5.672}


def test_the_machines_kept_stopped_are_not_priced_on_a_plans_recent_use() -> None:
    # Used 80 % lately: room measured while they were stopped. Their stops' own prices stand.
    kept = [replace(p4d(10), state="stopped")]
    assert sweep_bill(PlanReader(3, hourly=False)).worth(kept) == {}


def test_the_machines_kept_stopped_are_not_priced_on_a_bill_not_read_whole() -> None:
    kept = [replace(p4d(10), state="stopped")]
    assert sweep_bill(Reader(3, fails=True)).worth(kept) == {}
    assert SweepBill(None, PriceBook(None), lambda: FLEET, NOW, "us-east-1").worth(kept) == {}


class HourlyPlan:
    """A bill reader with a $35/h Compute Savings Plan (at 0.7 of on demand: $50/h of p4d usage)."""

    def read(self, running: Sequence[Instance], now: datetime) -> Billing:
        plan = Plan("sp-1", "Compute", now + timedelta(days=300), commitment_usd_per_hour=35.0, rate=0.7)
        return Billing("us-east-1", running=tuple(running), plans=(plan,))


def seen(bill: SweepBill, machine: Instance, at: datetime) -> None:
    """A sweep's bill read (pricing a stop of `machine`) and its spill kept, as each sweep does."""
    bill.priced([(machine, Decision(machine.instance_id, Action.STOP, "idle"))])
    keep_spill(bill, at)


def swept(now: datetime, fleet: list[Instance], log: SpillLog | None, kept: Sequence[Instance] = ()) -> SweepBill:
    reader = HourlyPlan()
    return SweepBill(
        reader,  # type: ignore[arg-type]
        PriceBook(None),
        lambda: fleet,
        now,
        "us-east-1",
        policy=IdlePolicy(),
        profile=log,
        stopped=lambda: kept,
    )


def test_a_spill_profile_whose_read_failed_is_not_written_over_with_one_quarter_hour() -> None:
    log = SpillLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]
    at = datetime(2026, 11, 17, 8, 0, tzinfo=UTC)
    seen(swept(at, FLEET, log), FLEET[0], at)
    kept = log.read("us-east-1")
    assert kept is not None

    def throttled(region: str) -> None:
        raise RuntimeError("ThrottlingException")

    later = at + timedelta(minutes=15)
    read = log.read
    log.read = throttled  # type: ignore[method-assign]
    seen(swept(later, FLEET, log), FLEET[0], later)
    log.read = read  # type: ignore[method-assign]
    assert log.read("us-east-1") == kept  # the week kept as it was, not replaced by this quarter-hour alone


def test_the_spill_a_sweep_finds_is_kept_and_prices_next_weeks_night_stop_over_its_morning() -> None:
    # Four Tuesday-morning sweeps see 4 p4d spill past the plan ($87.84 of usage on $50 of room). A week on, at
    # 02:00, two p4d run inside the plan: a stop saves $0 now, but its machine stays off to its run at 09:00,
    # and from 08:00 the plan spills: the stop is made, and says what it saves.
    # The night before, every quarter-hour from 02:00 is seen too, two p4d inside the plan: a profile prices only
    # the hours it has seen (an hour never seen would leave the stop priced on this hour alone).
    log = SpillLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]
    night_before = datetime(2026, 11, 17, 2, 0, tzinfo=UTC)
    for quarter in range(24):
        at = night_before + timedelta(minutes=15 * quarter)
        seen(swept(at, FLEET[:2], log), FLEET[0], at)
    morning = datetime(2026, 11, 17, 8, 0, tzinfo=UTC)
    for quarter in range(4):
        at = morning + timedelta(minutes=15 * quarter)
        bill = swept(at, FLEET, log)
        bill.priced([(FLEET[0], Decision(FLEET[0].instance_id, Action.STOP, "idle"))])
        keep_spill(bill, at)
    night = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)
    bill = swept(night, FLEET[:2], log)
    stop = Decision(FLEET[0].instance_id, Action.STOP, "idle", start_at=night + timedelta(hours=7))
    [(_, stopped)] = bill.priced([(FLEET[0], stop)])
    assert stopped.action is Action.STOP
    assert stopped.worth is not None
    assert (
        stopped.worth.text() == "saves about $22 by Tue 09:00 UTC on the bill: the Savings Plan spills from 08:00 UTC"
    )
    fresh = swept(night, FLEET[:2], None)
    [(_, today)] = fresh.priced([(FLEET[0], stop)])  # no profile: priced on this hour, as before
    assert today.action is Action.CLEAR_WARNING


def kept_off(n: int, stopped_at: datetime, start_at: datetime | None = None) -> Instance:
    """A p4d costguard stopped at `stopped_at` and keeps stopped (to its start-at, if any)."""
    marks = {tags.STOPPED_AT: formatting.format_time(stopped_at)}
    if start_at is not None:
        marks[tags.START_AT] = formatting.format_time(start_at)
    return replace(p4d(n), state="stopped", launch_time=stopped_at - timedelta(hours=5), tags=marks)


LEARNED_AT = datetime(2026, 11, 17, 8, 0, tzinfo=UTC)


def spill_learned(kept: Sequence[Instance]) -> float | None:
    """The Savings Plan's spill a sweep at LEARNED_AT keeps in a fresh profile, two p4d running inside the $50/h
    plan and costguard keeping `kept` stopped."""
    log = SpillLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]
    bill = swept(LEARNED_AT, FLEET[:2], log, kept)
    bill.priced([(FLEET[0], Decision(FLEET[0].instance_id, Action.STOP, "idle"))])
    keep_spill(bill, LEARNED_AT, kept)
    week = log.read("us-east-1")
    assert week is not None
    return week.at("sp:Compute", LEARNED_AT)


def test_the_spill_is_learned_as_if_the_machines_costguard_keeps_stopped_were_running() -> None:
    # costguard keeps two more p4d stopped. Running, the four would spill $37.84/h past the plan: that is the
    # spill kept (the stops still in force then take it again when stops are priced).
    kept = [kept_off(2, LEARNED_AT - timedelta(hours=10)), kept_off(3, LEARNED_AT - timedelta(hours=10))]
    assert spill_learned(kept) == round(4 * 21.96 - 50.0, 4)


def test_a_machine_costguard_stopped_days_ago_does_not_swell_the_learned_spill() -> None:
    # costguard keeps two more p4d stopped: one since 10 hours ago (off for the night: counted as running), one
    # since 9 days ago, which nothing says comes back (not counted). The spill is learned as if only the first ran.
    kept = [kept_off(2, LEARNED_AT - timedelta(hours=10)), kept_off(3, LEARNED_AT - timedelta(days=9))]
    assert spill_learned(kept) == round(3 * 21.96 - 50.0, 4)


def tuesdays_morning_spill() -> SpillLog:
    """A region's profile learned on Tuesday 17 Nov: the Savings Plan spilled $30/h from 08:00 to 10:00, nothing
    else that day."""
    log = SpillLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]
    week = SpillProfile("us-east-1")
    moment = datetime(2026, 11, 17, tzinfo=UTC)
    while moment < datetime(2026, 11, 18, tzinfo=UTC):
        week = week.learned({"sp:Compute": 30.0 if 8 <= moment.hour < 10 else 0.0}, moment)
        moment += SLOT
    log.write(week, moment)
    return log


def test_a_machine_costguard_keeps_stopped_takes_the_mornings_spill_before_a_new_stop_and_the_stop_says_so() -> None:
    # The week before spilled $30/h from 08:00 to 10:00 (learned with every machine running). At 02:00 one p4d
    # costguard stopped last night is off until its run at 10:00: it takes $21.96/h of that spill. A new stop of
    # a p4d off until 10:00 saves the $8.04/h left, not its whole price, and its words say why.
    log = tuesdays_morning_spill()
    night = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)
    run = night + timedelta(hours=8)
    stop = Decision(FLEET[0].instance_id, Action.STOP, "idle", start_at=run)
    [(_, alone)] = swept(night, FLEET[:2], log).priced([(FLEET[0], stop)])
    assert alone.worth is not None
    assert alone.worth.usd == round(2 * 21.96, 2)
    # Stopped last night, or before a long weekend (73 h ago): its start-at says it runs at 10:00 all the same.
    for stopped_ago in (timedelta(hours=3), timedelta(hours=73)):
        kept = [kept_off(5, night - stopped_ago, start_at=run)]
        [(_, after)] = swept(night, FLEET[:2], log, kept).priced([(FLEET[0], stop)])
        assert after.action is Action.STOP
        assert after.worth is not None
        assert after.worth.usd == round(2 * (30.0 - 21.96), 2), stopped_ago
        assert after.worth.text() == (
            "saves about $16 by Tue 10:00 UTC on the bill: the Savings Plan spills from 08:00 UTC; "
            "1 machine costguard keeps stopped already takes $28 of that spill"
        )


def test_a_machine_stopped_before_the_morning_the_spill_was_learned_and_off_since_takes_its_share_a_week_on() -> None:
    # The spill of last Tuesday's 08:00-10:00 ($30/h) was learned while costguard kept a p4d stopped since that
    # night (counted as running). It is still off a week later, with no start promised: its share of the morning
    # is taken first, as it was counted, and a new stop off until 10:00 saves the $8.04/h left (before: priced on
    # the whole $30/h, the stops of the second Monday after a deploy saved nothing). A p4d stopped four days before
    # that morning was not counted then: it takes nothing now.
    log = tuesdays_morning_spill()
    night = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)
    stop = Decision(FLEET[0].instance_id, Action.STOP, "idle", start_at=night + timedelta(hours=8))
    counted_then = [kept_off(5, datetime(2026, 11, 17, 2, 0, tzinfo=UTC))]
    [(_, after)] = swept(night, FLEET[:2], log, counted_then).priced([(FLEET[0], stop)])
    assert after.worth is not None
    assert after.worth.usd == round(2 * (30.0 - 21.96), 2)
    assert "1 machine costguard keeps stopped already takes $28 of that spill" in after.worth.text()
    not_counted_then = [kept_off(6, datetime(2026, 11, 13, 2, 0, tzinfo=UTC))]
    [(_, alone)] = swept(night, FLEET[:2], log, not_counted_then).priced([(FLEET[0], stop)])
    assert alone.worth is not None
    assert alone.worth.usd == round(2 * 21.96, 2)


def test_a_profiled_stop_is_priced_on_this_hour_when_the_machines_costguard_keeps_stopped_cannot_be_read() -> None:
    log = SpillLog(DynamoDBClient(), "costguard-state")  # type: ignore[arg-type]
    week = SpillProfile("us-east-1")
    night = datetime(2026, 11, 24, 2, 0, tzinfo=UTC)
    moment = night - timedelta(days=7)
    while moment < night - timedelta(days=6):
        week = week.learned({"sp:Compute": 30.0}, moment)
        moment += SLOT
    log.write(week, moment)

    def unread() -> Sequence[Instance]:
        raise RuntimeError("RequestLimitExceeded")

    bill = SweepBill(
        HourlyPlan(),  # type: ignore[arg-type]
        PriceBook(None),
        lambda: FLEET[:2],
        night,
        "us-east-1",
        policy=IdlePolicy(),
        profile=log,
        stopped=unread,
    )
    stop = Decision(FLEET[0].instance_id, Action.STOP, "idle", start_at=night + timedelta(hours=8))
    [(_, after)] = bill.priced([(FLEET[0], stop)])
    assert after.worth is not None
    assert not after.worth.profiled  # priced on this hour alone, and said
    assert after.action is Action.CLEAR_WARNING
