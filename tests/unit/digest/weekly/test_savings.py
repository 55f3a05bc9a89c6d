"""What the week's stops saved: hours each stopped machine stayed off, priced as the bill shows it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.aws.pricing import PriceBook
from costguard.core.records import Instance
from costguard.digest.weekly.savings import saved_by_stops, unknown_ends
from costguard.state.entries import Entry, EntryKind
from costguard.state.worth import Worth

START = datetime(2026, 11, 16, tzinfo=UTC)
END = START + timedelta(days=7)


def stop(at: datetime, saving: float = 21.96, list_hourly: float = 0.0, kind: EntryKind = EntryKind.STOP) -> Entry:
    return Entry(
        at=at,
        kind=kind,
        instance_id="i-p",
        region="us-east-1",
        mode="enforce",
        instance_type="p4d.24xlarge",
        hourly_saving=saving,
        list_hourly=list_hourly,
    )


def test_a_machine_stopped_three_times_with_no_start_known_between_counts_its_last_stop_only() -> None:
    # Stopped Monday, Wednesday and Friday, started again by its owner in between at times nothing recorded;
    # stopped now. Before, each stop counted until the next one: the days it ran between a start and the next
    # stop were said saved. Now the first two stops' ends are unknown, never counted as off: 3 days.
    stops = [stop(START + timedelta(days=d)) for d in (0, 2, 4)]
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START - timedelta(days=30))
    hours, usd, _ = saved_by_stops(stops, {"i-p": machine}, END, PriceBook(None))
    assert hours == 3 * 24
    assert round(usd, 2) == round(3 * 24 * 21.96, 2)
    assert unknown_ends(stops, {"i-p": machine}, END, {}) == 2


def test_each_stop_counts_until_the_first_start_known_after_it() -> None:
    # Stopped Monday and Tuesday; its person started it Monday 10:00 (EC2's state change), its last start
    # (its launch time) Tuesday 03:00.
    stops = [stop(START), stop(START + timedelta(days=1))]
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", START + timedelta(days=1, hours=3))
    started = {"i-p": [START + timedelta(hours=10)]}
    hours, *_ = saved_by_stops(stops, {"i-p": machine}, END, PriceBook(None), started=started)
    assert hours == 10 + 3
    assert unknown_ends(stops, {"i-p": machine}, END, started) == 0


def test_costguard_own_start_in_the_ledger_ends_the_stop_before_it() -> None:
    morning = Entry(START + timedelta(hours=8), EntryKind.MORNING_START, "i-p", "us-east-1", "enforce")
    stops = [stop(START), stop(START + timedelta(days=1)), morning]
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START + timedelta(hours=8))
    hours, *_ = saved_by_stops(stops, {"i-p": machine}, END, PriceBook(None))
    assert hours == 8 + 6 * 24


def test_a_stop_whose_machine_runs_again_later_than_the_next_stop_is_unknown_not_off() -> None:
    stops = [stop(START), stop(START + timedelta(days=1))]
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", START + timedelta(days=1, hours=3))
    hours, *_ = saved_by_stops(stops, {"i-p": machine}, END, PriceBook(None))
    assert hours == 3  # the second stop until its machine's launch; the first ran again nobody knows when
    assert unknown_ends(stops, {"i-p": machine}, END, {}) == 1


def test_a_stop_priced_on_the_bill_at_zero_saves_nothing_and_is_not_priced_again_at_list() -> None:
    prepaid = stop(END - timedelta(hours=5), saving=0.0, list_hourly=21.96)
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START)
    hours, usd, _ = saved_by_stops([prepaid], {"i-p": machine}, END, PriceBook(None))
    assert (hours, usd) == (5.0, 0.0)


def test_a_stop_from_slack_in_a_capacity_block_saves_nothing() -> None:
    slack = stop(END - timedelta(hours=5), saving=0.0, kind=EntryKind.STOP_FROM_SLACK)
    machine = Instance("i-p", "us-east-1", "p5.48xlarge", "stopped", START, lifecycle="capacity-block")
    hours, usd, _ = saved_by_stops([slack], {"i-p": machine}, END, PriceBook(None))
    assert (hours, usd) == (5.0, 0.0)


def test_the_on_demand_figure_beside_the_saving_is_the_stops_list_price_and_an_older_stop_is_not_said_to_differ() -> (
    None
):
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START)
    on_the_bill = stop(END - timedelta(hours=5), saving=8.0, list_hourly=21.96)
    assert saved_by_stops([on_the_bill], {"i-p": machine}, END, PriceBook(None)) == (5.0, 40.0, 5 * 21.96)
    older = stop(END - timedelta(hours=5), saving=20.0)  # recorded before stops were priced on the bill
    assert saved_by_stops([older], {"i-p": machine}, END, PriceBook(None)) == (5.0, 100.0, 100.0)
    slack = stop(END - timedelta(hours=5), saving=0.0, kind=EntryKind.STOP_FROM_SLACK)
    block = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START, lifecycle="capacity-block")
    assert saved_by_stops([slack], {"i-p": block}, END, PriceBook(None)) == (5.0, 0.0, 5 * 21.96)


def test_a_stopped_hour_is_counted_at_the_price_the_sweeps_last_found_for_it() -> None:
    # Stopped at night while a Savings Plan had room for most of it ($4.50/h saved); the day's work fills
    # the plan at 09:00 and the sweeps find it saves its whole price; at 19:00 room again.
    at = START + timedelta(hours=1)
    night = stop(at, saving=4.5, list_hourly=21.96)
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", at + timedelta(hours=20))
    worth = [
        Worth(at - timedelta(hours=1), "us-east-1", {"i-p": 99.0}),  # before the stop: not this stop's
        Worth(at + timedelta(hours=8), "us-east-1", {"i-p": 21.96, "i-other": 5.0}),
        Worth(at + timedelta(hours=18), "us-east-1", {"i-p": 3.0}),
        Worth(at + timedelta(hours=21), "us-east-1", {"i-p": 50.0}),  # after it was started again
    ]
    hours, usd, list_usd = saved_by_stops([night], {"i-p": machine}, END, PriceBook(None), worth)
    assert hours == 20
    assert round(usd, 2) == round(8 * 4.5 + 10 * 21.96 + 2 * 3.0, 2)
    assert round(list_usd, 2) == round(20 * 21.96, 2)
    assert saved_by_stops([night], {"i-p": machine}, END, PriceBook(None)).usd == 20 * 4.5  # without: the stop's


def test_a_stop_made_before_the_week_and_still_off_counts_its_hours_inside_the_week_only() -> None:
    # Stopped Friday 18:00 of the week before, still off Monday 00:00, started Monday 09:00 by its person
    # (its launch time). The bill of this week saved its 9 hours; the 54 before Monday were last week's.
    friday = stop(START - timedelta(days=2, hours=6), saving=4.5, list_hourly=21.96)
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", START + timedelta(hours=9))
    hours, usd, list_usd = saved_by_stops([friday], {"i-p": machine}, END, PriceBook(None), start=START)
    assert (hours, round(usd, 2), round(list_usd, 2)) == (9.0, round(9 * 4.5, 2), round(9 * 21.96, 2))
    assert unknown_ends([friday], {"i-p": machine}, END, {}, start=START) == 0


def test_a_stop_before_the_week_whose_machine_ran_again_before_it_counts_nothing_and_is_not_unknown() -> None:
    # Stopped Friday, started Saturday by its person (EC2's state change), stopped again Tuesday of this week.
    friday, tuesday = stop(START - timedelta(days=3)), stop(START + timedelta(days=1))
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START - timedelta(days=2))
    started = {"i-p": [START - timedelta(days=2)]}
    hours, *_ = saved_by_stops([friday, tuesday], {"i-p": machine}, END, PriceBook(None), started=started, start=START)
    assert hours == 6 * 24  # Tuesday's stop to the week's end
    assert unknown_ends([friday, tuesday], {"i-p": machine}, END, started, start=START) == 0


def test_stops_before_the_week_that_ended_before_the_last_one_are_neither_counted_nor_unknown() -> None:
    # Stopped Wednesday and Friday of the week before with no start known between them: the Wednesday stop
    # ended before Friday's, before this week; Friday's is still in force Monday, until now.
    stops = [stop(START - timedelta(days=5)), stop(START - timedelta(days=3))]
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "stopped", START - timedelta(days=10))
    hours, *_ = saved_by_stops(stops, {"i-p": machine}, END, PriceBook(None), start=START)
    assert hours == 7 * 24
    assert unknown_ends(stops, {"i-p": machine}, END, {}, start=START) == 0


def test_a_stop_before_the_week_is_priced_from_the_weeks_start_at_the_price_the_sweeps_last_found() -> None:
    # Stopped Sunday 20:00 at $4.50/h; the sweep of 23:45 found it saves $21.96/h, the one of Monday 06:00 $3.
    sunday = stop(START - timedelta(hours=4), saving=4.5, list_hourly=21.96)
    machine = Instance("i-p", "us-east-1", "p4d.24xlarge", "running", START + timedelta(hours=10))
    worth = [
        Worth(START - timedelta(minutes=15), "us-east-1", {"i-p": 21.96}),
        Worth(START + timedelta(hours=6), "us-east-1", {"i-p": 3.0}),
    ]
    hours, usd, _ = saved_by_stops([sunday], {"i-p": machine}, END, PriceBook(None), worth, start=START)
    assert hours == 10
    assert round(usd, 2) == round(6 * 21.96 + 4 * 3.0, 2)
