"""testing/bill.py, the benchmarks' judge of what a stop saved: each commitment applied as AWS applies it,
and a stop that saves nothing on the bill seen to save nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from testing.bill import Commitments, Held, Machine, Reserved, SavingsPlan, bill

NOW = datetime(2026, 11, 10, 12, tzinfo=UTC)
BEFORE, AFTER = NOW - timedelta(days=30), NOW + timedelta(days=30)


def p3(n: int, size: str, zone: str = "us-east-1a") -> Machine:
    price = {"2xlarge": 3.06, "8xlarge": 12.24, "16xlarge": 24.48}[size]
    return Machine(f"i-p3{n}", f"p3.{size}", zone, price)


def test_nothing_committed_every_running_machine_pays_on_demand_or_spot() -> None:
    spot = Machine("i-s", "g5.xlarge", "us-east-1a", 1.006, lifecycle="spot", spot=0.4)
    hour = bill([p3(1, "8xlarge"), spot], Commitments(), NOW)
    assert hour.on_demand == pytest.approx(12.24)
    assert hour.spot == pytest.approx(0.4)
    assert hour.total == pytest.approx(12.64)


def test_a_capacity_block_is_paid_whether_its_instances_run_or_not() -> None:
    block = Held("cr-b", "p5.48xlarge", "us-east-1a", 2, 31.464, BEFORE, AFTER, block=True)
    inside = Machine("i-b", "p5.48xlarge", "us-east-1a", 55.04, lifecycle="capacity-block", reservation="cr-b")
    both = bill([inside], Commitments(held=[block]), NOW)
    assert both.total == pytest.approx(2 * 31.464)
    assert bill([], Commitments(held=[block]), NOW).total == both.total


def test_an_instance_in_a_block_that_ended_is_an_error_not_a_price() -> None:
    block = Held("cr-b", "p5.48xlarge", "us-east-1a", 1, 31.464, BEFORE, NOW, block=True)
    inside = Machine("i-b", "p5.48xlarge", "us-east-1a", 55.04, lifecycle="capacity-block", reservation="cr-b")
    with pytest.raises(ValueError, match="not active"):
        bill([inside], Commitments(held=[block]), NOW)


def test_a_capacity_reservation_is_billed_at_on_demand_for_its_count_used_or_not() -> None:
    odcr = Held("cr-1", "p4d.24xlarge", "us-east-1a", 1, 21.96, BEFORE, AFTER, block=False)
    inside = Machine("i-r", "p4d.24xlarge", "us-east-1a", 21.96, reservation="cr-1")
    outside = Machine("i-o", "p4d.24xlarge", "us-east-1a", 21.96)
    assert bill([inside], Commitments(held=[odcr]), NOW).total == pytest.approx(21.96)
    assert bill([], Commitments(held=[odcr]), NOW).total == pytest.approx(21.96)
    assert bill([inside, outside], Commitments(held=[odcr]), NOW).total == pytest.approx(2 * 21.96)
    ended = Held("cr-1", "p4d.24xlarge", "us-east-1a", 1, 21.96, BEFORE, NOW, block=False)
    assert bill([inside], Commitments(held=[ended]), NOW).total == pytest.approx(21.96)  # on demand now


def test_a_regional_size_flexible_ri_covers_units_across_sizes_smallest_first() -> None:
    # Two p3.8xlarge RIs give 128 units; 16 + 64 + 128 = 208 units run: 80 units left at on demand.
    ri = Reserved("p3.8xlarge", 2, 7.0, BEFORE, AFTER, size_flexible=True)
    running = [p3(1, "2xlarge"), p3(2, "8xlarge"), p3(3, "16xlarge")]
    hour = bill(running, Commitments(reserved=[ri]), NOW)
    assert hour.ri_fees == pytest.approx(14.0)
    assert hour.on_demand == pytest.approx(24.48 * 80 / 128)
    assert hour.by_machine["i-p33"] == pytest.approx(24.48 * 80 / 128)  # the largest is the one left over
    # Without the p3.16xlarge the RIs have room: stopping the p3.2xlarge then saves nothing.
    fewer = bill(running[:2], Commitments(reserved=[ri]), NOW).total
    assert bill(running[1:2], Commitments(reserved=[ri]), NOW).total == pytest.approx(fewer)


def test_a_regional_ri_not_size_flexible_covers_its_exact_type_only() -> None:
    ri = Reserved("g5.12xlarge", 1, 3.4, BEFORE, AFTER)
    small, big = Machine("i-1", "g5.2xlarge", "us-east-1a", 1.212), Machine("i-2", "g5.12xlarge", "us-east-1b", 5.672)
    hour = bill([small, big], Commitments(reserved=[ri]), NOW)
    assert hour.on_demand == pytest.approx(1.212)
    assert hour.ri_fees == pytest.approx(3.4)


def test_a_zonal_ri_covers_its_type_in_its_zone_before_the_regional_ones() -> None:
    zonal = Reserved("g5.12xlarge", 1, 3.4, BEFORE, AFTER, zone="us-east-1b")
    here, there = Machine("i-1", "g5.12xlarge", "us-east-1b", 5.672), Machine("i-2", "g5.12xlarge", "us-east-1a", 5.672)
    hour = bill([here, there], Commitments(reserved=[zonal]), NOW)
    assert hour.by_machine == {"i-1": 0.0, "i-2": pytest.approx(5.672)}
    assert bill([there], Commitments(reserved=[zonal]), NOW).on_demand == pytest.approx(5.672)


def test_a_savings_plan_commitment_is_paid_and_covers_usage_at_its_rate_up_to_it() -> None:
    plan = SavingsPlan(commitment=7.2, discount=0.28, start=BEFORE, end=AFTER)  # covers $10/h of on demand
    one = Machine("i-1", "g5.12xlarge", "us-east-1a", 5.672)
    two = Machine("i-2", "g5.48xlarge", "us-east-1a", 16.288)
    under = bill([one], Commitments(plans=[plan]), NOW)
    assert under.total == pytest.approx(7.2)  # used in part: the hour costs the commitment, no more
    assert bill([], Commitments(plans=[plan]), NOW).total == pytest.approx(7.2)  # a stop here saves $0
    over = bill([one, two], Commitments(plans=[plan]), NOW)
    assert over.plan_spill == pytest.approx(5.672 + 16.288 - 10.0)
    assert over.total == pytest.approx(7.2 + 11.96)


def test_part_of_an_hour_is_billed_in_proportion() -> None:
    plan = SavingsPlan(commitment=7.2, discount=0.28, start=BEFORE, end=AFTER)
    machines = [Machine("i-1", "g5.48xlarge", "us-east-1a", 16.288)]
    whole = bill(machines, Commitments(plans=[plan]), NOW).total
    assert bill(machines, Commitments(plans=[plan]), NOW, hours=1 / 12).total == pytest.approx(whole / 12)
