"""The digest's money as the bill shows it: idle hours priced on the bill in turn, the hours already paid
apart with what to do about them, and the one line that names the price basis."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from costguard.core.money import UNREAD_HOLDS, UNREAD_PLANS, UNREAD_RIS, Basis, Billing, Hold, Plan, Reserved
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.weekly.rules.bill import PaidIdle, basis_line, idle_prices, paid_idle
from costguard.digest.weekly.rules.figures import InstanceWeek, settle, summarize, worst_idle
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.messages import digest_message, digest_thread
from tests.unit.digest.organization.test_rules import member_data

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
P4D, P5 = 21.96, 55.04


def machine(n: int, instance_type: str = "p4d.24xlarge", **kw: object) -> Instance:
    return Instance(
        instance_id=f"i-{n}",
        region="us-east-1",
        instance_type=instance_type,
        state="running",
        launch_time=NOW - timedelta(days=30),
        zone="us-east-1a",
        platform="Linux/UNIX",
        **kw,  # type: ignore[arg-type]
    )


def ris(count: int) -> Reserved:
    return Reserved("ri-p4d", "p4d.24xlarge", count, NOW - timedelta(days=100), NOW + timedelta(days=265))


def test_five_idle_p4d_on_three_ris_waste_two_on_demand_prices_and_idle_three_paid_ones_the_most_idle_first() -> None:
    fleet = [machine(n) for n in range(5)]
    idle = {f"i-{n}": 10.0 * (n + 1) for n in range(5)}  # i-4 the most idle
    billing = Billing("us-east-1", running=fleet, reserved=[ris(3)])
    prices = idle_prices(billing, [(m, P4D) for m in fleet], idle, {}, NOW)
    assert [prices[f"i-{n}"].usd_per_hour for n in (4, 3, 2, 1, 0)] == [P4D, P4D, 0.0, 0.0, 0.0]
    assert prices["i-0"].paid_by == "Reserved Instances (p4d, us-east-1)"
    assert prices["i-4"].paid_by == ""
    [paid] = paid_idle(prices, idle, dict.fromkeys(idle, P4D))
    assert (paid.idle_hours, paid.basis, paid.machines) == (60.0, Basis.RESERVED, ("i-0", "i-1", "i-2"))
    assert paid.on_demand_usd == 60 * P4D
    assert paid.advice == "buy fewer at renewal, or move on-demand work onto them"


def test_a_busy_machine_keeps_its_reserved_instance_and_an_idle_one_beside_it_wastes_the_on_demand_price() -> None:
    busy, idle_one = machine(1), machine(2)
    billing = Billing("us-east-1", running=[busy, idle_one], reserved=[ris(1)])
    prices = idle_prices(billing, [(busy, P4D), (idle_one, P4D)], {"i-2": 30.0}, {}, NOW)
    assert set(prices) == {"i-2"}
    assert (prices["i-2"].usd_per_hour, prices["i-2"].paid_by) == (P4D, "")


def test_idle_hours_in_a_capacity_block_are_paid_and_advised_as_a_shorter_block() -> None:
    block = Hold("cr-block", "p5.48xlarge", "us-east-1a", total=1, available=0, end=NOW + timedelta(days=2), block=True)
    inside = machine(1, "p5.48xlarge", lifecycle="capacity-block", capacity_reservation_id="cr-block")
    prices = idle_prices(Billing("us-east-1", running=[inside], holds=[block]), [(inside, P5)], {"i-1": 8.0}, {}, NOW)
    assert (prices["i-1"].usd_per_hour, prices["i-1"].on_demand, prices["i-1"].paid_by) == (
        0.0,
        P5,
        "Capacity Block cr-block",
    )
    [paid] = paid_idle(prices, {"i-1": 8.0}, {"i-1": P5})
    assert paid.advice == "book a shorter or smaller block next time"


def test_an_idle_spot_machine_wastes_its_spot_price_and_its_list_price_when_the_spot_price_is_unknown() -> None:
    spot = machine(1, lifecycle="spot")
    read = Billing("us-east-1", running=[spot], spot_prices={("p4d.24xlarge", "us-east-1a"): 8.5})
    assert idle_prices(read, [(spot, P4D)], {"i-1": 5.0}, {}, NOW)["i-1"].usd_per_hour == 8.5
    unread = Billing("us-east-1", running=[spot], unread=("Spot prices",))
    assert idle_prices(unread, [(spot, P4D)], {"i-1": 5.0}, {}, NOW)["i-1"].usd_per_hour == P4D


def test_a_machine_idle_only_last_week_is_priced_too_so_both_weeks_are_on_one_bill() -> None:
    old = machine(1)
    prices = idle_prices(Billing("us-east-1", running=[old], reserved=[ris(1)]), [(old, P4D)], {}, {"i-1": 4.0}, NOW)
    assert prices["i-1"].usd_per_hour == 0.0


def test_the_basis_line_names_the_commitments_the_prices_are_net_of() -> None:
    plan = Plan("sp-1", "Compute", NOW + timedelta(days=90), used_percent=80.0)
    hold = Hold("cr-1", "p4d.24xlarge", "us-east-1a", total=2, available=1, end=None, block=False)
    line = basis_line([Billing("us-east-1", reserved=[ris(3)], holds=[hold], plans=[plan])], NOW)
    assert line == (
        "Prices as your bill shows them now, not hour by hour: on demand less 3 Reserved Instances, a capacity "
        "reservation and a Savings Plan (its recent use from Cost Explorer); Spot at its price."
    )


def test_the_basis_line_of_a_savings_plan_whose_room_is_judged_on_what_runs_now_says_no_more_than_its_now() -> None:
    plan = Plan("sp-1", "Compute", NOW + timedelta(days=90), commitment_usd_per_hour=10.0, rate=0.7)
    line = basis_line([Billing("us-east-1", reserved=[ris(6)], plans=[plan])], NOW)
    assert line == (
        "Prices as your bill shows them now, not hour by hour: on demand less 6 Reserved Instances and a Savings "
        "Plan; Spot at its price."
    )


def test_a_bill_that_could_not_be_read_is_said_to_be_the_on_demand_list_without_an_aws_error_code() -> None:
    denied = Billing("us-east-1", unread=(UNREAD_RIS, UNREAD_HOLDS, UNREAD_PLANS))
    # why (AccessDenied) goes to the alerts channel with the permission to grant (digest/gaps.py), not here
    assert basis_line([denied], NOW) == "Prices: on-demand list (the bill was not read)."


def test_a_bill_partly_read_says_what_was_not_read_and_that_it_is_priced_on_demand_there() -> None:
    partly = Billing("us-east-1", reserved=[ris(2)], unread=(UNREAD_PLANS,))
    line = basis_line([partly], NOW)
    assert line.startswith("Prices as your bill shows them now, not hour by hour: on demand less 2 Reserved Instances")
    assert "; Spot at its price. " in line
    assert line.endswith("Not read: Savings Plans: on demand there.")


def test_idle_hours_on_paid_capacity_are_not_waste_in_either_week_nor_among_the_worst_idle() -> None:
    start = NOW - timedelta(days=7)
    hours = tuple(Hour(start + timedelta(hours=k), 0.3, 0.0, 0.0) for k in range(10))  # 10 idle hours
    paid = InstanceWeek("i-1", "p4d.24xlarge", "us-east-1", "alice", "nlp", 8, P4D, True, "running", hours)
    spot = replace(paid, instance_id="i-2", owner="bob")
    week = summarize([paid, spot], start, NOW, IdlePolicy())
    assert week.fleet.waste_usd == 20 * P4D  # at list, before the bill is read
    priced = [replace(paid, bill_usd_per_hour=0.0, paid_by="Reserved Instances (p4d, us-east-1)"),
              replace(spot, bill_usd_per_hour=8.5)]  # fmt: skip
    settle(week, priced)
    assert (week.fleet.waste_usd, week.fleet.paid_idle_hours) == (85.0, 10.0)
    assert (week.per_owner["alice"].waste_usd, week.per_owner["alice"].paid_idle_hours) == (0.0, 10.0)
    assert (week.per_team["nlp"].waste_usd, week.per_owner["bob"].waste_usd) == (85.0, 85.0)
    assert [(i.instance_id, per_day) for i, _, per_day in worst_idle(priced, week)] == [("i-2", 8.5 * 24)]


def test_the_digest_names_its_price_basis_saves_on_the_bill_beside_on_demand_and_sends_paid_hours_to_commitments() -> (
    None
):
    data = member_data()
    data.basis = "Prices as your bill shows them: on demand less 3 Reserved Instances."
    data.saved_usd, data.saved_list_usd = 10.06, 43.92
    data.this_week.fleet.paid_idle_hours = 10.0
    data.paid_idle = [PaidIdle("Reserved Instances (p4d, us-east-1)", Basis.RESERVED, 10.0, 219.6, ("i-1",))]
    post, thread = digest_message(data), {r.name: r.message for r in digest_thread(data)}
    # the post: what the idle machines cost on the bill, what stops would have saved, what costguard's did
    headline = json.dumps(post.slack_blocks())
    assert "Idle GPU machines cost *$38.06* on the bill this week" in headline
    assert "what stopping them while idle would have saved" in headline
    assert "The stops costguard made saved *$10.06* on the bill." in headline
    # the thread: the basis under the owners' idle cost; the saving beside its on-demand worth; paid hours
    owners = thread["owners"].slack_blocks()
    assert owners[-1]["elements"][0]["text"] == data.basis
    body = json.dumps(thread["housekeeping"].slack_blocks())
    # the bill's saving is the post's (said once); its on-demand worth beside the hours off
    assert "Stopped machines stayed off 10 h ($43.92 at on-demand prices)." in body
    assert "$10.06" not in body
    assert (
        "10 idle machine-hours on Reserved Instances (p4d, us-east-1), already paid ($220 on demand): "
        "Buy fewer at renewal, or move on-demand work onto them."
    ) in body


def test_a_used_up_savings_plan_past_its_spill_is_not_idle_committed_capacity_nor_waste() -> None:
    # The plan was used up lately and its on-demand spill ($20/h) is what the first idle p4d's stop saves: the
    # second's saves nothing, but the plan has nothing to spare: no "commit less" for it.
    plan = Plan("sp-1", "Compute", NOW + timedelta(days=90), used_percent=100.0)
    fleet = [machine(1), machine(2)]
    billing = Billing("us-east-1", running=fleet, plans=[plan], plan_spill_usd_per_hour=20.0)
    prices = idle_prices(billing, [(m, P4D) for m in fleet], {"i-1": 20.0, "i-2": 10.0}, {}, NOW)
    assert (prices["i-1"].usd_per_hour, prices["i-1"].paid_by) == (20.0, "")
    assert (prices["i-2"].usd_per_hour, prices["i-2"].paid_by) == (0.0, "")
    covered = Billing("us-east-1", running=fleet, plans=[replace(plan, used_percent=60.0)])
    room = idle_prices(covered, [(m, P4D) for m in fleet], {"i-1": 20.0, "i-2": 10.0}, {}, NOW)
    assert {p.paid_by for p in room.values()} == {"a Savings Plan"}
    assert paid_idle(room, {"i-1": 20.0, "i-2": 10.0}, {})[0].advice == "commit less at renewal"


def test_a_savings_plan_with_room_lately_that_the_fleet_overflows_now_makes_the_most_idle_hour_waste() -> None:
    # 3 p4d on a plan paying for 2 an hour, used 60 % lately: the most idle wastes the on-demand price, the next
    # idles on the plan's commitment (commit less), the busy one keeps the rest of it.
    plan = Plan(
        "sp-1", "Compute", NOW + timedelta(days=90), used_percent=60.0,
        commitment_usd_per_hour=2 * P4D * 0.72, rate=0.72,
    )  # fmt: skip
    fleet = [machine(1), machine(2), machine(3)]
    billing = Billing("us-east-1", running=fleet, plans=[plan])
    prices = idle_prices(billing, [(m, P4D) for m in fleet], {"i-1": 20.0, "i-2": 10.0}, {}, NOW)
    assert (prices["i-1"].usd_per_hour, prices["i-1"].paid_by) == (P4D, "")
    assert (prices["i-2"].usd_per_hour, prices["i-2"].paid_by) == (0.0, "a Savings Plan")
