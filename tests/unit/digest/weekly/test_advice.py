"""Right-sizing and Spot advice on hand-built weeks: every expected figure worked out here, by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from costguard.aws.ec2 import Ec2
from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from costguard.core.settings import IdlePolicy, Mode
from costguard.digest.owners import SPOT_WARNING
from costguard.digest.weekly.rules.advice import Advice, advise, observe, spot_advice, spot_candidates
from costguard.digest.weekly.rules.figures import InstanceWeek
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.messages import advice_line
from testing.slack_text import as_read, plain_times

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7)
POLICY = IdlePolicy()


def price(instance_type: str, region: str) -> float | None:
    return BUNDLED_USD_PER_HOUR.get(instance_type)


def days(
    count: int, first: int, length: int, *, cpu: float, gpu_max: float, gpu_avg: float, busy: int | None
) -> list[Hour]:
    """`length` hours from `first` o'clock on each of the week's first `count` days."""
    return [
        Hour(START + timedelta(days=d, hours=first + k), cpu, gpu_max, gpu_avg, busy)
        for d in range(count)
        for k in range(length)
    ]


def machine(instance_type: str, gpus: int, hours: list[Hour], *, lifecycle: str = "", zone: str = "") -> InstanceWeek:
    usd = BUNDLED_USD_PER_HOUR[instance_type]
    return InstanceWeek(
        "i-0a", instance_type, "us-east-1", "ana", "", gpus, usd, True, "running", tuple(hours), lifecycle, zone
    )


def test_a_four_gpu_machine_that_used_one_gpu_all_week_is_told_the_one_gpu_size_that_fits_its_cpu() -> None:
    # g5.12xlarge: 4 A10G, 48 vCPUs, $5.672/h. 10 h a day for 7 days, one GPU at 60 % (max 80 %),
    # CPUUtilization at most 10 %: 4.8 of 48 vCPUs, so 5 needed. The 1-GPU g5 sizes with 5 vCPUs or more:
    # g5.2xlarge (8, $1.212), 4xlarge (16, $1.624), 8xlarge (32, $2.448), 16xlarge (64, $4.096).
    box = machine("g5.12xlarge", 4, days(7, 8, 10, cpu=10.0, gpu_max=80.0, gpu_avg=15.0, busy=1))
    [advice] = advise(observe([box], START, END), POLICY, price)
    assert (advice.kind, advice.suggested, advice.hours) == ("fewer-gpus", "g5.2xlarge", 70.0)
    assert advice.saving_usd == pytest.approx((5.672 - 1.212) * 70)  # $312.20
    assert advice.basis.startswith("at most 1 of its 4 GPUs in use in any of its 70 hours this week")
    assert "kept 5 vCPUs busy" in advice.basis
    line = advice_line(advice, END)
    assert "*g5.2xlarge* instead, $1.21/h rather than $5.67/h, *$312 less* this week" in line


def test_a_machine_whose_gpu_averaged_low_while_it_worked_is_told_a_cheaper_gpu_with_as_much_memory() -> None:
    # g5.xlarge: 1 A10G (24 GB), $1.006/h. 8 working hours a day for 6 days at 10 % average (max 30 %).
    # Same GPU count, at least 24 GB, cheaper: g6.xlarge (L4, 24 GB) at $0.8048/h. 48 h: (1.006 - 0.8048) x 48.
    box = machine("g5.xlarge", 1, days(6, 9, 8, cpu=20.0, gpu_max=30.0, gpu_avg=10.0, busy=1))
    [advice] = advise(observe([box], START, END), POLICY, price)
    assert (advice.kind, advice.suggested) == ("cheaper-gpu", "g6.xlarge")
    assert advice.saving_usd == pytest.approx((1.006 - 0.8048) * 48)  # $9.66
    assert advice.basis.startswith("its 1 A10G GPU averaged 10% over the 48 hours it worked this week")


def test_no_advice_without_a_week_of_data_or_when_the_count_of_busy_gpus_is_unknown() -> None:
    four_days = machine("g5.12xlarge", 4, days(4, 8, 10, cpu=10.0, gpu_max=80.0, gpu_avg=60.0, busy=1))
    unknown = machine("g5.12xlarge", 4, days(7, 8, 10, cpu=10.0, gpu_max=80.0, gpu_avg=60.0, busy=None))
    every_gpu = machine("g5.12xlarge", 4, days(7, 8, 10, cpu=10.0, gpu_max=80.0, gpu_avg=60.0, busy=4))
    # the agent reported 2 of the type's 4 GPUs: the two silent ones are missing data, not spare GPUs
    half_seen = machine("g5.12xlarge", 2, days(7, 8, 10, cpu=10.0, gpu_max=80.0, gpu_avg=60.0, busy=1))
    assert advise(observe([four_days, unknown, every_gpu, half_seen], START, END), POLICY, price) == []


def test_on_demand_work_in_runs_of_a_few_hours_is_priced_on_spot_in_its_zone() -> None:
    # p4d.24xlarge on demand, $21.96/h. Two 4-hour runs a day (08-12, 14-18) for 6 days: twelve runs of 4 h;
    # on the 7th day 1 h (too short to count). 48 h at a Spot price of $8.7838/h: (21.96 - 8.7838) x 48.
    hours = days(6, 8, 4, cpu=60.0, gpu_max=95.0, gpu_avg=90.0, busy=8) + days(6, 14, 4, cpu=60.0, gpu_max=95.0,
                                                                              gpu_avg=90.0, busy=8)  # fmt: skip
    hours += [Hour(START + timedelta(days=6, hours=8), 60.0, 95.0, 90.0, 8)]
    box = machine("p4d.24xlarge", 8, hours, zone="us-east-1a")
    spot_box = machine("p4d.24xlarge", 8, hours, lifecycle="spot", zone="us-east-1a")
    [(candidate, run_hours, longest)] = spot_candidates(observe([box, spot_box], START, END), POLICY)
    assert (candidate, run_hours, longest) == (box, 48, 4)
    [advice] = spot_advice([(box, 48, 4)], price, {("p4d.24xlarge", "us-east-1a"): 8.7838})
    assert advice.saving_usd == pytest.approx((21.96 - 8.7838) * 48)  # $632.46
    assert advice.basis == (
        "48 h of work in runs of 2 to 6 h this week, none longer (the longest 4 h: what an interruption could "
        "cost), on demand at $21.96/h; Spot in us-east-1a now $8.78/h"
    )
    assert spot_advice([(box, 48, 4)], price, {("p4d.24xlarge", "us-east-1a"): 25.0}) == []  # dearer: nothing
    assert spot_advice([(box, 48, 4)], price, {("p4d.24xlarge", "us-east-1b"): 5.0}) == []  # not its zone


def test_a_run_of_days_without_a_break_gets_no_spot_advice_however_much_spot_would_save() -> None:
    # The p4d: 181 hours of training without an idle hour. Spot would take it back mid-run, and
    # costguard cannot see whether the job saves checkpoints: no advice that could cost days of work.
    week = [Hour(START + timedelta(hours=k), 60.0, 95.0, 90.0, 8) for k in range(181)]
    assert spot_candidates(observe([machine("p4d.24xlarge", 8, week, zone="us-east-1a")], START, END), POLICY) == []
    # Short runs all week but one of 12 hours: that one run is what an interruption would cost. None.
    hours = days(6, 8, 4, cpu=60.0, gpu_max=95.0, gpu_avg=90.0, busy=8)
    hours += [Hour(START + timedelta(days=6, hours=k), 60.0, 95.0, 90.0, 8) for k in range(12)]
    assert spot_candidates(observe([machine("p4d.24xlarge", 8, hours, zone="us-east-1a")], START, END), POLICY) == []


def test_idle_hours_break_a_run_into_runs_spot_can_take_back() -> None:
    working = [Hour(START + timedelta(days=d, hours=k), 60.0, 95.0, 90.0, 8) for d in range(6) for k in range(4)]
    # idle: CPU 1 % of 96 vCPUs with no core over 4 % (the agent's busiest core), its GPUs quiet
    idle = [Hour(START + timedelta(days=d, hours=4), 1.0, 0.5, 0.5, 0, core_max=4.0) for d in range(6)]
    more = [Hour(START + timedelta(days=d, hours=5 + k), 60.0, 95.0, 90.0, 8) for d in range(6) for k in range(4)]
    box = machine("p4d.24xlarge", 8, working + idle + more, zone="us-east-1a")
    assert spot_candidates(observe([box], START, END), POLICY) == [(box, 48, 4)]  # 4 h, idle, 4 h: never 9 in a row
    # without the idle hour, nine hours in a row each day: longer than a run Spot is advised for
    whole = [Hour(START + timedelta(days=d, hours=k), 60.0, 95.0, 90.0, 8) for d in range(6) for k in range(9)]
    assert spot_candidates(observe([machine("p4d.24xlarge", 8, whole, zone="us-east-1a")], START, END), POLICY) == []


def test_the_spot_price_is_asked_once_per_type_at_the_digests_time_and_read_for_the_machines_zone() -> None:
    client = boto3.client("ec2", region_name="us-east-1")
    at = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    with Stubber(client) as stub:
        stub.add_response(
            "describe_spot_price_history",
            {
                "SpotPriceHistory": [
                    {"AvailabilityZone": "us-east-1a", "InstanceType": "p4d.24xlarge", "SpotPrice": "9.10",
                     "Timestamp": at - timedelta(hours=5), "ProductDescription": "Linux/UNIX"},
                    {"AvailabilityZone": "us-east-1a", "InstanceType": "p4d.24xlarge", "SpotPrice": "8.7838",
                     "Timestamp": at - timedelta(hours=1), "ProductDescription": "Linux/UNIX"},
                    {"AvailabilityZone": "us-east-1b", "InstanceType": "p4d.24xlarge", "SpotPrice": "7.00",
                     "Timestamp": at - timedelta(hours=1), "ProductDescription": "Linux/UNIX"},
                    {"AvailabilityZone": "us-east-1c", "InstanceType": "p4d.24xlarge", "SpotPrice": "NaN",
                     "Timestamp": at - timedelta(hours=1), "ProductDescription": "Linux/UNIX"},
                ]
            },
            {"InstanceTypes": ["p4d.24xlarge"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": at, "EndTime": at},
        )  # fmt: skip
        prices = Ec2(client, "us-east-1", Mode.ENFORCE).spot_prices(
            [("p4d.24xlarge", "us-east-1a"), ("p4d.24xlarge", "us-east-1c")], at
        )
        stub.assert_no_pending_responses()
    assert prices == {("p4d.24xlarge", "us-east-1a"): 8.7838}  # the newest in its zone; NaN is no price


def test_the_digest_shows_the_advice_and_warns_about_spot_interruptions() -> None:
    from costguard.digest.weekly.rules.messages import digest_thread  # noqa: PLC0415
    from tests.unit.digest.organization.test_rules import member_data  # noqa: PLC0415

    box = machine("p4d.24xlarge", 8, [], zone="us-east-1a")
    spot = Advice(box, "spot", "", 21.96, 8.7838, 72.0, "72 h of work in runs")
    data = member_data()
    data.advice = [spot]
    [advice] = [r.message for r in digest_thread(data) if r.name == "advice"]  # in the thread, not the post
    text = json.dumps(advice.slack_blocks())
    # a line each in the channel; the prices and the work it rests on are in its owner's message
    assert "`i-0a` p4d.24xlarge (ana): *Spot* instead, *$949 less* this week" in text
    assert "72 h of work" not in text
    assert json.dumps(SPOT_WARNING)[1:-1] in text


def test_the_digest_shows_the_two_largest_savings_and_leaves_a_spot_warning_out_when_no_spot_line_is_shown() -> None:
    from costguard.digest.weekly.rules.messages import digest_thread  # noqa: PLC0415
    from tests.unit.digest.organization.test_rules import member_data  # noqa: PLC0415

    box = machine("g5.12xlarge", 4, [], zone="us-east-1a")
    smaller = Advice(box, "fewer-gpus", "g5.8xlarge", 5.0, 2.0, 87.0, "")  # $261 less
    hours = Advice(replace(box, instance_id="i-0b"), "schedule", "daily 08:00-10:00 UTC", 1.0, 0.0, 163.0, "")
    spot = Advice(replace(box, instance_id="i-0c"), "spot", "", 1.0, 0.5, 16.9, "")  # $8.45 less
    data = member_data()
    data.advice = [smaller, hours, spot]
    [advice] = [r.message for r in digest_thread(data) if r.name == "advice"]
    [section] = [b["text"]["text"] for b in advice.slack_blocks() if b["type"] == "section"]
    assert section == (
        "*The same work for less*\n"
        "• `i-0a` g5.12xlarge (ana): *g5.8xlarge* instead, *$261 less* this week\n"
        "• `i-0b` g5.12xlarge (ana): tag `costguard:schedule` = `daily 08:00-10:00 UTC`, *$163 less* this week\n"
        "• and 1 more in its owner's message"
    )
    assert "Spot" not in json.dumps(advice.slack_blocks())  # its warning goes with the Spot line


def test_a_machine_that_works_the_same_hours_and_idles_after_them_is_offered_a_working_hours_tag() -> None:
    from costguard.digest.weekly.rules.advice import schedule_advice  # noqa: PLC0415
    from costguard.idle.rules.schedule import parse_schedule  # noqa: PLC0415

    # g5.xlarge, $1.006/h. Monday to Friday (the week starts on a Monday): works 09:00-17:00 UTC, then runs
    # idle until midnight: 5 x 7 = 35 idle hours outside its hours, $35.21.
    work = days(5, 9, 8, cpu=40.0, gpu_max=90.0, gpu_avg=70.0, busy=1)
    idle = days(5, 17, 7, cpu=1.0, gpu_max=0.5, gpu_avg=0.5, busy=0)
    box = machine("g5.xlarge", 1, work + idle)
    [advice] = schedule_advice(observe([box], START, END), POLICY)
    assert (advice.kind, advice.suggested, advice.hours) == ("schedule", "weekdays 09:00-17:00 UTC", 35.0)
    assert advice.saving_usd == pytest.approx(35 * 1.006)
    assert advice.basis == (
        "worked within 09:00-17:00 UTC on 5 days (40 of its 40 working hours), and sat idle 35 h outside them"
    )
    parse_schedule(advice.suggested)  # the tag costguard itself reads
    line = advice_line(advice, END)
    assert "tag it `costguard:schedule` = `weekdays 09:00-17:00 UTC`" in line  # the tag's value, as written
    # The hours it worked within, on each reader's clock.
    assert "Worked within 09:00 UTC-17:00 UTC on 5 days" in as_read(line)
    assert not plain_times(line.replace("`weekdays 09:00-17:00 UTC`", ""))
    # already scheduled: nothing to suggest
    assert schedule_advice(observe([box], START, END), POLICY, exclude=frozenset({"i-0a"})) == []


def test_irregular_hours_or_no_idle_time_outside_them_suggest_no_working_hours() -> None:
    from costguard.digest.weekly.rules.advice import schedule_advice  # noqa: PLC0415

    # a different 4-hour slot each day: no window holds 80 % of the work within 16 hours
    scattered = [
        Hour(START + timedelta(days=d, hours=(d * 5) % 20 + k), 40.0, 90.0, 70.0, 1) for d in range(7) for k in range(4)
    ]
    idle = days(7, 0, 1, cpu=1.0, gpu_max=0.5, gpu_avg=0.5, busy=0)
    assert schedule_advice(observe([machine("g5.xlarge", 1, scattered + idle)], START, END), POLICY) == []
    # regular hours, but stopped after them: nothing idle to save
    regular = days(6, 9, 8, cpu=40.0, gpu_max=90.0, gpu_avg=70.0, busy=1)
    assert schedule_advice(observe([machine("g5.xlarge", 1, regular)], START, END), POLICY) == []
