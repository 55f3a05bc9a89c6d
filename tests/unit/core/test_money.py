"""The marginal price of a machine: what the bill would lose without it this hour."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from costguard.core.bill import Bill
from costguard.core.money import Basis, Billing, Hold, Plan, Reserved, units
from costguard.core.records import Instance
from testing.billing import price_in_turn

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)  # a Tuesday
P4D = 21.96
G5_12, G5_24 = 5.672, 8.144
P3_8, P3_16 = 12.24, 24.48


def machine(n: int, instance_type: str = "p4d.24xlarge", zone: str = "us-east-1a", **kw: object) -> Instance:
    return Instance(
        instance_id=f"i-{n:08x}",
        region="us-east-1",
        instance_type=instance_type,
        state="running",
        launch_time=NOW - timedelta(days=3),
        zone=zone,
        platform="Linux/UNIX",
        **kw,  # type: ignore[arg-type]
    )


def ri(count: int, instance_type: str = "p4d.24xlarge", zone: str = "", **kw: object) -> Reserved:
    return Reserved(
        reservation_id=f"ri-{instance_type}-{zone or 'region'}",
        instance_type=instance_type,
        count=count,
        start=NOW - timedelta(days=200),
        end=NOW + timedelta(days=165),
        zone=zone,
        **kw,  # type: ignore[arg-type]
    )


def test_a_machine_without_commitments_costs_its_on_demand_price() -> None:
    m = Bill(Billing("us-east-1", running=[machine(1)]), NOW).price(machine(1), P4D)
    assert (m.usd_per_hour, m.basis, m.why, m.saves) == (P4D, Basis.ON_DEMAND, "on demand", True)


def test_three_regional_ris_cover_the_three_p4d_that_run_so_a_stop_saves_nothing() -> None:
    fleet = [machine(n) for n in range(3)]
    m = Bill(Billing("us-east-1", running=fleet, reserved=[ri(3)]), NOW).price(fleet[0], P4D)
    assert m.usd_per_hour == 0
    assert m.basis is Basis.RESERVED
    assert not m.saves
    assert m.why == "covered: 3 p4d run, 3 Reserved Instances"


def test_five_p4d_on_three_ris_save_the_on_demand_price_of_two_stops_and_nothing_after() -> None:
    fleet = [machine(n) for n in range(5)]
    bill = Bill(Billing("us-east-1", running=fleet, reserved=[ri(3)]), NOW)
    first = bill.price(fleet[0], P4D)
    assert first.usd_per_hour == P4D
    assert first.why == "on demand: 5 p4d run, 3 Reserved Instances"
    priced = price_in_turn(bill, fleet[:3], {"p4d.24xlarge": P4D})
    assert [priced[i.instance_id].usd_per_hour for i in fleet[:3]] == [P4D, P4D, 0.0]


def test_a_regional_linux_ri_floats_across_the_sizes_of_its_family_in_normalized_units() -> None:
    assert units("p3.8xlarge") == 64
    assert units("p3.16xlarge") == 128
    big, small = machine(1, "p3.16xlarge"), machine(2, "p3.8xlarge", zone="us-east-1b")
    billing = Billing("us-east-1", running=[big, small], reserved=[ri(2, "p3.8xlarge")])  # 128 of 192 units
    # 64 units run on demand: stopping the 16xlarge (128 units) saves half its price, the 8xlarge all of its.
    assert Bill(billing, NOW).price(big, P3_16).usd_per_hour == pytest.approx(P3_16 / 2)
    assert Bill(billing, NOW).price(small, P3_8).usd_per_hour == pytest.approx(P3_8)


def test_g5_and_g4dn_reserved_instances_cover_their_exact_size_only() -> None:
    # AWS excludes G4ad, G4dn, G5, G5g and Inf1 from size flexibility.
    big, small = machine(1, "g5.24xlarge"), machine(2, "g5.12xlarge")
    billing = Billing("us-east-1", running=[big, small], reserved=[ri(1, "g5.12xlarge")])
    assert Bill(billing, NOW).price(small, G5_12).usd_per_hour == 0  # its exact RI covers it
    assert Bill(billing, NOW).price(big, G5_24).usd_per_hour == pytest.approx(G5_24)  # none of its size
    two = Billing("us-east-1", running=[big, machine(3, "g5.24xlarge")], reserved=[ri(1, "g5.48xlarge")])
    assert Bill(two, NOW).price(big, G5_24).usd_per_hour == pytest.approx(G5_24)  # a 48xlarge RI covers no 24xlarge


def test_a_zonal_ri_covers_its_type_in_its_zone_only() -> None:
    inside, outside = machine(1, zone="us-east-1a"), machine(2, zone="us-east-1b")
    billing = Billing("us-east-1", running=[inside, outside], reserved=[ri(1, zone="us-east-1a")])
    covered = Bill(billing, NOW).price(inside, P4D)
    assert covered.usd_per_hour == 0
    assert covered.why == "covered: 1 p4d.24xlarge run in us-east-1a, 1 zonal Reserved Instance"
    assert Bill(billing, NOW).price(outside, P4D).usd_per_hour == P4D


def test_a_zonal_ri_overflow_runs_on_demand_unless_a_regional_ri_takes_it() -> None:
    two = [machine(1), machine(2)]
    zonal_only = Billing("us-east-1", running=two, reserved=[ri(1, zone="us-east-1a")])
    assert Bill(zonal_only, NOW).price(two[0], P4D).usd_per_hour == P4D
    both = Billing("us-east-1", running=two, reserved=[ri(1, zone="us-east-1a"), ri(1)])
    assert Bill(both, NOW).price(two[0], P4D).usd_per_hour == 0


def test_an_expired_or_not_yet_started_ri_covers_nothing() -> None:
    fleet = [machine(1)]
    expired = Reserved("ri-old", "p4d.24xlarge", 1, NOW - timedelta(days=400), NOW - timedelta(hours=1))
    future = Reserved("ri-new", "p4d.24xlarge", 1, NOW + timedelta(hours=1), NOW + timedelta(days=365))
    for gone in (expired, future):
        assert Bill(Billing("us-east-1", running=fleet, reserved=[gone]), NOW).price(fleet[0], P4D).usd_per_hour == P4D


def test_a_linux_ri_does_not_cover_a_windows_machine_nor_a_dedicated_one() -> None:
    windows = Instance("i-00000001", "us-east-1", "p4d.24xlarge", "running", NOW, zone="us-east-1a", platform="Windows")
    dedicated = machine(2, tenancy="dedicated")
    billing = Billing("us-east-1", running=[windows, dedicated], reserved=[ri(2)])
    assert Bill(billing, NOW).price(windows, P4D).usd_per_hour == P4D
    assert Bill(billing, NOW).price(dedicated, P4D).usd_per_hour == P4D


def test_a_capacity_block_is_free_to_idle_until_it_ends_mid_week() -> None:
    end = NOW + timedelta(days=2)  # Thursday
    block = Hold("cr-block", "p5.48xlarge", "us-east-1a", total=2, available=0, end=end, block=True)
    inside = machine(1, "p5.48xlarge", lifecycle="capacity-block", capacity_reservation_id="cr-block")
    tuesday = Bill(Billing("us-east-1", running=[inside], holds=[block]), NOW).price(inside, 55.04)
    assert (tuesday.usd_per_hour, tuesday.basis, tuesday.until, tuesday.prepaid) == (
        0.0,
        Basis.CAPACITY_BLOCK,
        end,
        True,
    )
    assert tuesday.why == "in Capacity Block cr-block: prepaid"
    friday = Bill(Billing("us-east-1", running=[inside], holds=[block]), end + timedelta(days=1)).price(inside, 55.04)
    assert not friday.prepaid


def test_a_capacity_reservation_with_free_slots_is_paid_whether_its_machines_run_or_not() -> None:
    odcr = Hold("cr-odcr", "p4d.24xlarge", "us-east-1a", total=4, available=2, end=None, block=False)
    inside = machine(1, capacity_reservation_id="cr-odcr")
    outside = machine(2)  # runs beside the reservation, not in it: on demand
    billing = Billing("us-east-1", running=[inside, outside], holds=[odcr])
    m = Bill(billing, NOW).price(inside, P4D)
    assert (m.usd_per_hour, m.basis, m.hold) == (0.0, Basis.CAPACITY_RESERVATION, odcr)
    assert m.why == "in capacity reservation cr-odcr: billed whether used or not"
    assert Bill(billing, NOW).price(outside, P4D).usd_per_hour == P4D


def test_a_reservation_a_whole_read_does_not_list_has_ended_and_the_machine_runs_on_demand() -> None:
    inside = machine(1, capacity_reservation_id="cr-cancelled")
    m = Bill(Billing("us-east-1", running=[inside]), NOW).price(inside, P4D)
    assert (m.usd_per_hour, m.prepaid) == (P4D, False)


def test_the_instances_own_reservation_id_is_enough_when_the_reservations_could_not_be_read() -> None:
    inside = machine(1, capacity_reservation_id="cr-unread")
    m = Bill(Billing("us-east-1", running=[inside], unread=["capacity reservations"]), NOW).price(inside, P4D)
    assert m.usd_per_hour == 0
    assert m.prepaid
    assert m.caveat == "capacity reservations not read"


def test_a_savings_plan_used_60_percent_lately_makes_a_stop_save_nothing() -> None:
    plan = Plan("sp-1", "Compute", end=NOW + timedelta(days=90), used_percent=60.0)
    m = Bill(Billing("us-east-1", running=[machine(1)], plans=[plan]), NOW).price(machine(1), P4D)
    assert m.usd_per_hour == 0
    assert m.basis is Basis.SAVINGS_PLAN
    assert not m.saves


def test_a_savings_plan_used_up_saves_the_on_demand_price_while_its_spill_lasts() -> None:
    plan = Plan("sp-1", "Compute", end=NOW + timedelta(days=90), used_percent=100.0)
    fleet = [machine(1), machine(2)]
    unknown_spill = Bill(Billing("us-east-1", running=fleet, plans=[plan]), NOW).price(fleet[0], P4D)
    assert unknown_spill.usd_per_hour == P4D
    bill = Bill(Billing("us-east-1", running=fleet, plans=[plan], plan_spill_usd_per_hour=30.0), NOW)
    priced = price_in_turn(bill, fleet, {"p4d.24xlarge": P4D})
    assert [priced[i.instance_id].usd_per_hour for i in fleet] == [P4D, pytest.approx(30.0 - P4D)]


def test_an_ec2_instance_savings_plan_covers_its_family_in_its_region_only() -> None:
    plan = Plan("sp-g5", "EC2Instance", end=NOW + timedelta(days=90), family="g5", region="us-east-1", used_percent=50)
    billing = Billing("us-east-1", running=[machine(1), machine(2, "g5.12xlarge")], plans=[plan])
    assert Bill(billing, NOW).price(machine(1), P4D).usd_per_hour == P4D
    assert Bill(billing, NOW).price(machine(2, "g5.12xlarge"), G5_12).usd_per_hour == 0


def test_a_spot_machine_costs_its_spot_price() -> None:
    spot = machine(1, lifecycle="spot")
    billing = Billing("us-east-1", running=[spot], spot_prices={("p4d.24xlarge", "us-east-1a"): 9.5}, reserved=[ri(1)])
    m = Bill(billing, NOW).price(spot, P4D)
    assert (m.usd_per_hour, m.basis) == (9.5, Basis.SPOT)


def test_a_denied_read_falls_back_to_the_on_demand_price_and_says_so() -> None:
    billing = Billing("us-east-1", running=[machine(1)], unread=["Reserved Instances", "Savings Plans"])
    m = Bill(billing, NOW).price(machine(1), P4D)
    assert m.usd_per_hour == P4D
    assert m.caveat == "Reserved Instances not read; Savings Plans not read; priced on demand"


# ------------------------------------------------------------------ a Savings Plan, hour by hour
RATE = 0.72  # the plan's rate: what a covered hour costs, of on demand
ONE_AND_A_HALF_P4D = round(1.5 * P4D * RATE, 4)  # $23.7168/h: the commitment pays for 1.5 p4d an hour


def plan_of(used_percent: float, commitment: float = ONE_AND_A_HALF_P4D, rate: float | None = RATE) -> Plan:
    return Plan(
        "sp-1",
        "Compute",
        end=NOW + timedelta(days=90),
        used_percent=used_percent,
        commitment_usd_per_hour=commitment,
        rate=rate,
    )


def hourly(billing: Billing) -> Bill:
    prices = {"p4d.24xlarge": P4D, "g5.12xlarge": G5_12}
    return Bill(billing, NOW, list_price=lambda i: prices.get(i.instance_type))


def savings(bill: Bill, fleet: list[Instance]) -> list[float | None]:
    priced = price_in_turn(bill, fleet, {"p4d.24xlarge": P4D, "g5.12xlarge": G5_12})
    return [priced[i.instance_id].usd_per_hour for i in fleet]


def test_a_plan_the_running_fleet_overflows_saves_on_demand_until_its_spill_now_is_used() -> None:
    fleet = [machine(n) for n in range(3)]  # 3 p4d on a plan paying for 1.5: 1.5 p4d billed on demand now
    bill = hourly(Billing("us-east-1", running=fleet, plans=[plan_of(100.0)], plan_spill_usd_per_hour=500.0))
    first = bill.price(fleet[0], P4D)
    assert (first.usd_per_hour, first.basis) == (P4D, Basis.SAVINGS_PLAN)
    assert first.why == "on demand: the Savings Plan's $23.72/h commitment is used up by what runs now"
    bill.stopped(fleet[0], first)
    assert bill.price(fleet[1], P4D).usd_per_hour == pytest.approx(P4D / 2)
    bill.stopped(fleet[1], bill.price(fleet[1], P4D))
    last = bill.price(fleet[2], P4D)
    assert last.usd_per_hour == 0
    assert last.why == "covered: the Savings Plan's $23.72/h commitment is not used up by what runs now"


def test_a_plan_used_up_lately_that_the_fleet_does_not_fill_this_hour_saves_nothing() -> None:
    night = [machine(1)]  # one p4d at night: the plan pays for 1.5, though its last two days were used up
    bill = hourly(Billing("us-east-1", running=night, plans=[plan_of(100.0)], plan_spill_usd_per_hour=30.0))
    m = bill.price(night[0], P4D)
    assert (m.usd_per_hour, m.basis, m.saves) == (0.0, Basis.SAVINGS_PLAN, False)
    assert m.why == "covered: the Savings Plan's $23.72/h commitment is not used up by what runs now"


def test_a_plan_used_60_percent_lately_that_the_fleet_overflows_now_saves() -> None:
    busy = [machine(n) for n in range(3)]
    bill = hourly(Billing("us-east-1", running=busy, plans=[plan_of(60.0)]))
    assert savings(bill, busy) == [P4D, pytest.approx(P4D / 2), 0.0]


def test_reserved_instances_leave_the_plan_only_what_they_do_not_cover() -> None:
    fleet = [machine(n) for n in range(4)]  # 2 RIs cover 2 p4d; the plan pays for 1.5 of the other 2
    bill = hourly(Billing("us-east-1", running=fleet, reserved=[ri(2)], plans=[plan_of(100.0)]))
    assert savings(bill, fleet) == [pytest.approx(P4D / 2), 0.0, 0.0, 0.0]
    wholly = [machine(n) for n in range(2)]  # every machine on an RI: the plan's use is none of theirs
    m = hourly(Billing("us-east-1", running=wholly, reserved=[ri(2)], plans=[plan_of(100.0)])).price(wholly[0], P4D)
    assert (m.usd_per_hour, m.basis) == (0.0, Basis.RESERVED)


def test_an_instance_plan_overflowing_spills_into_a_compute_plan_with_room_so_a_stop_saves_nothing() -> None:
    g5 = [machine(n, "g5.12xlarge") for n in range(3)]
    family_plan = Plan(
        "sp-g5", "EC2Instance", NOW + timedelta(days=90), "g5", "us-east-1", 100.0,
        commitment_usd_per_hour=round(G5_12 * 0.6, 4), rate=0.6,
    )  # fmt: skip
    billing = Billing("us-east-1", running=g5, plans=[family_plan, plan_of(100.0)])
    assert savings(hourly(billing), g5) == [0.0, 0.0, 0.0]  # its 2 g5 of spill fit the Compute plan's 1.5 p4d
    alone = Billing("us-east-1", running=g5, plans=[family_plan])
    assert savings(hourly(alone), g5) == [G5_12, G5_12, 0.0]


def test_a_plan_whose_rate_or_the_fleet_prices_are_unknown_is_priced_on_its_recent_use_as_before() -> None:
    fleet = [machine(1), machine(2)]
    for plan in (plan_of(60.0, rate=None), plan_of(60.0, commitment=0.0)):
        assert savings(hourly(Billing("us-east-1", running=fleet, plans=[plan])), fleet) == [0.0, 0.0]
    used_up = Billing("us-east-1", running=fleet, plans=[plan_of(100.0, rate=None)], plan_spill_usd_per_hour=30.0)
    assert savings(hourly(used_up), fleet) == [P4D, pytest.approx(30.0 - P4D)]
    without_prices = replace(used_up, plans=[plan_of(100.0)])
    assert savings(Bill(without_prices, NOW), fleet) == [P4D, pytest.approx(30.0 - P4D)]


def test_a_fleet_priced_in_turn_gets_the_prices_a_bill_read_afresh_after_each_stop_would_give() -> None:
    # The RI pool is counted once and shrunk by each stop: after every stop, the next machine's price and why
    # are what a bill built anew over the machines still running says of it.
    types = ["p4d.24xlarge", "p3.8xlarge", "p3.16xlarge", "g5.12xlarge", "g5.24xlarge"]
    zones = ["us-east-1a", "us-east-1b"]
    fleet = [machine(n, types[n % 5], zones[n % 2], tenancy="dedicated" if n % 11 == 0 else "default")
             for n in range(60)]  # fmt: skip
    reserved = [ri(4), ri(6, "p3.8xlarge"), ri(3, "g5.12xlarge", zone="us-east-1a"), ri(2, "g5.24xlarge"),
                ri(2, "p3.16xlarge", zone="us-east-1b")]  # fmt: skip
    prices = {"p4d.24xlarge": P4D, "p3.8xlarge": P3_8, "p3.16xlarge": P3_16, "g5.12xlarge": G5_12, "g5.24xlarge": G5_24}
    bill = Bill(Billing("us-east-1", running=fleet, reserved=reserved), NOW)
    saves = 0
    for k, instance in enumerate(fleet):
        afresh = Bill(Billing("us-east-1", running=fleet[k:], reserved=reserved), NOW)
        expected = afresh.price(instance, prices[instance.instance_type])
        marginal = bill.price(instance, prices[instance.instance_type])
        assert (marginal.usd_per_hour, marginal.why) == (expected.usd_per_hour, expected.why), instance
        saves += marginal.saves
        bill.stopped(instance, marginal)
    assert 0 < saves < len(fleet)  # some stops save, some find RIs to spare
