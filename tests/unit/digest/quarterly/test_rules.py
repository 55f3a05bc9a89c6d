"""The quarterly deep dive on hand-built quarters: every expected figure worked out here, by hand; Cost
Explorer and Pricing requests asserted exactly with botocore's Stubber (moto answers neither)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.aws.costexplorer import EC2_COMPUTE, cost_anomalies, monthly_spend
from costguard.aws.pricing import PriceBook
from costguard.digest.quarterly.rules import (
    Anomaly,
    Line,
    Quarter,
    RegionPrice,
    chart_bars,
    csv_text,
    fastest_growing,
    jumps,
    quarter_bounds,
    quarter_message,
)
from testing.slack_text import as_read, dates_in, plain_times
from tests.unit.digest.organization.test_rules import END, MEMBER, week_of

MONTHS = (date(2026, 8, 1), date(2026, 9, 1), date(2026, 10, 1))
EVERY_REGION_P4D = [
    {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "p4d.24xlarge"},
    {"Type": "TERM_MATCH", "Field": "locationType", "Value": "AWS Region"},
    {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
    {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
    {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
    {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
    {"Type": "TERM_MATCH", "Field": "licenseModel", "Value": "No License required"},
]  # what the Pricing API is asked for p4d.24xlarge in every region


def test_the_quarter_is_the_three_full_months_before_this_one() -> None:
    assert quarter_bounds(date(2027, 1, 4)) == (date(2026, 10, 1), date(2027, 1, 1), "2026 Q4")
    assert quarter_bounds(date(2026, 7, 6)) == (date(2026, 4, 1), date(2026, 7, 1), "2026 Q2")
    assert quarter_bounds(date(2026, 11, 22)) == (date(2026, 8, 1), date(2026, 11, 1), "Aug 2026 to Oct 2026")
    assert quarter_bounds(date(2026, 2, 10)) == (date(2025, 11, 1), date(2026, 2, 1), "Nov 2025 to Jan 2026")


def lines() -> list[Line]:
    return [
        Line("instance type", "p4d.24xlarge", (10_000.0, 12_000.0, 21_000.0)),
        Line("instance type", "g5.12xlarge", (4_000.0, 3_000.0, 3_500.0)),
        Line("instance type", "c6i.4xlarge", (1_000.0, 1_000.0, 1_000.0)),
        Line("region", "us-east-1", (14_000.0, 15_000.0, 24_500.0)),
        Line("region", "eu-west-1", (1_000.0, 1_000.0, 1_000.0)),
        Line("owner", '=HYPERLINK("https://evil.example")', (0.0, 0.0, 150.0)),
        Line("owner", "alice", (15_000.0, 16_000.0, 25_350.0)),
    ]


def test_month_over_month_jumps_are_rises_over_the_share_and_the_amount() -> None:
    found = jumps(lines(), MONTHS, percent=50.0, at_least_usd=100.0)
    # p4d: 12,000 -> 21,000 is +75 % and $9,000; us-east-1: 15,000 -> 24,500 is +63 % and $9,500;
    # alice +58 % ($9,350); the new owner line: $150 from nothing. 10,000 -> 12,000 is only +20 %.
    assert [(a.where, a.impact_usd, a.start) for a in found] == [
        ("region us-east-1", 9_500.0, date(2026, 10, 1)),
        ("owner alice", 9_350.0, date(2026, 10, 1)),
        ("instance type p4d.24xlarge", 9_000.0, date(2026, 10, 1)),
        ('owner =HYPERLINK("https://evil.example")', 150.0, date(2026, 10, 1)),
    ]
    assert found[0].detail == "more, $15,000 to $24,500 (+63%)"
    # growth first to last month: p4d +$11,000, us-east-1 +$10,500, alice +$10,350
    assert [x.name for x in fastest_growing(lines(), limit=2)] == ["p4d.24xlarge", "us-east-1"]


def test_the_csv_has_every_line_month_by_month_and_no_cell_a_spreadsheet_would_run() -> None:
    quarter = Quarter("Aug 2026 to Oct 2026", MONTHS, lines())
    rows = list(csv.reader(io.StringIO(csv_text(quarter))))
    assert rows[0] == ["dimension", "line", "2026-08", "2026-09", "2026-10", "total", "change", "change %"]
    assert [
        "instance type",
        "p4d.24xlarge",
        "10000.00",
        "12000.00",
        "21000.00",
        "43000.00",
        "11000.00",
        "110.0",
    ] in rows
    assert ["owner", '\'=HYPERLINK("https://evil.example")', "0.00", "0.00", "150.00", "150.00", "150.00", ""] in rows
    assert len(rows) == 1 + len(lines())


def test_the_report_adds_up_the_months_and_names_region_moves_over_the_threshold() -> None:
    quarter = Quarter("Aug 2026 to Oct 2026", MONTHS, lines(), accelerated=(14_000.0, 15_000.0, 24_500.0))
    quarter.regions = [
        # the quarter's $40,000 of p4d in us-east-1 at $21.96/h; $19.22/h in the cheapest region:
        # 40,000 x (1 - 19.22 / 21.96) = $4,991
        RegionPrice("p4d.24xlarge", "us-east-1", 21.96, (("ap-south-1", 19.22), ("us-east-1", 21.96)), 40_000.0),
        RegionPrice("g5.12xlarge", "us-east-1", 5.672, (("us-east-1", 5.672),), 10_500.0),  # the cheapest already
    ]
    assert quarter.regions[0].saving_usd == pytest.approx(40_000 * (1 - 19.22 / 21.96))
    assert quarter.totals == (15_000.0, 16_000.0, 25_500.0)  # the instance types, month by month
    text = json.dumps(quarter_message(quarter, datetime(2026, 11, 22, 9, tzinfo=UTC)).blocks, ensure_ascii=False)
    assert "EC2 compute cost *$56,500* over the quarter, month by month $15,000 → $16,000 → $25,500 (+70%" in text
    assert "accelerated instances *$53,500* (95%)" in text
    assert "*p4d.24xlarge* in us-east-1: $21.96/h; cheapest: ap-south-1 $19.22, us-east-1 $21.96; *$4,991 less*" in text
    assert "1 move would have saved more than $100 this quarter" in text
    assert "=HYPERLINK" in text  # shown as text in Slack, where it runs nothing
    assert chart_bars(quarter) == [
        ("Aug\n2026", 14_000.0, 1_000.0),
        ("Sep\n2026", 15_000.0, 1_000.0),
        ("Oct\n2026", 24_500.0, 1_000.0),
    ]


def test_monthly_spend_asks_cost_explorer_for_ec2_compute_by_month_and_reads_every_page() -> None:
    client = boto3.client("ce", region_name="us-east-1")
    expected: dict[str, Any] = {
        "TimePeriod": {"Start": "2026-08-01", "End": "2026-11-01"},
        "Granularity": "MONTHLY",
        "Metrics": ["UnblendedCost"],
        "Filter": {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}},
        "GroupBy": [{"Type": "TAG", "Key": "Owner"}],
    }

    def month(start: str, end: str, groups: list[tuple[str, str]]) -> dict[str, Any]:
        return {
            "TimePeriod": {"Start": start, "End": end},
            "Total": {},
            "Groups": [{"Keys": [k], "Metrics": {"UnblendedCost": {"Amount": a, "Unit": "USD"}}} for k, a in groups],
            "Estimated": False,
        }

    with Stubber(client) as stub:
        stub.add_response(
            "get_cost_and_usage",
            {"ResultsByTime": [month("2026-08-01", "2026-09-01", [("Owner$alice", "100.5"), ("Owner$", "7")])],
             "NextPageToken": "page-2"},
            expected,
        )  # fmt: skip
        stub.add_response(
            "get_cost_and_usage",
            {"ResultsByTime": [month("2026-10-01", "2026-11-01", [("Owner$alice", "200")])]},
            {**expected, "NextPageToken": "page-2"},
        )
        spend = monthly_spend(client, date(2026, 8, 1), date(2026, 11, 1), [{"Type": "TAG", "Key": "Owner"}])
        stub.assert_no_pending_responses()
    assert spend == {
        ("alice",): {date(2026, 8, 1): 100.5, date(2026, 10, 1): 200.0},
        ("(no owner tag)",): {date(2026, 8, 1): 7.0},
    }


def test_anomalies_are_read_only_when_a_monitor_exists_and_within_their_90_days() -> None:
    client = boto3.client("ce", region_name="us-east-1")
    with Stubber(client) as stub:
        stub.add_response("get_anomaly_monitors", {"AnomalyMonitors": []}, {"MaxResults": 1})
        assert cost_anomalies(client, date(2026, 8, 1), date(2026, 11, 1)) is None  # off: the caller uses jumps
        monitor = {
            "MonitorName": "services",
            "MonitorType": "DIMENSIONAL",
            "MonitorArn": "arn:aws:ce::1:anomalymonitor/x",
        }
        stub.add_response("get_anomaly_monitors", {"AnomalyMonitors": [monitor]}, {"MaxResults": 1})
        found = {
            "AnomalyId": "a1",
            "AnomalyStartDate": "2026-09-14",
            "AnomalyScore": {"MaxScore": 0.9, "CurrentScore": 0.5},
            "Impact": {"MaxImpact": 300.0, "TotalImpact": 1234.5},
            "MonitorArn": "arn:aws:ce::1:anomalymonitor/x",
            "RootCauses": [{"Service": EC2_COMPUTE, "Region": "us-east-1", "LinkedAccount": "111122223333"}],
        }
        # 90 days before 1 Nov is 3 Aug: anomalies are kept that long
        stub.add_response(
            "get_anomalies",
            {"Anomalies": [found]},
            {"DateInterval": {"StartDate": "2026-08-03", "EndDate": "2026-11-01"}},
        )
        anomalies = cost_anomalies(client, date(2026, 8, 1), date(2026, 11, 1))
        stub.assert_no_pending_responses()
    assert anomalies == [found]


def test_region_prices_come_from_one_pricing_query_without_a_location_read_page_by_page() -> None:
    client = boto3.client("pricing", region_name="us-east-1")

    def product(region: str, price: str, location_type: str = "AWS Region") -> str:
        return json.dumps(
            {
                "product": {"attributes": {"regionCode": region, "locationType": location_type}},
                "terms": {
                    "OnDemand": {"x": {"priceDimensions": {"y": {"unit": "Hrs", "pricePerUnit": {"USD": price}}}}}
                },
            }
        )

    expected = {"ServiceCode": "AmazonEC2", "Filters": EVERY_REGION_P4D, "MaxResults": 100}
    with Stubber(client) as stub:
        first = [product("us-east-1", "21.9600000000"), product("ap-south-1", "19.2200000000")]
        stub.add_response("get_products", {"PriceList": first, "NextToken": "t"}, expected)
        stub.add_response(
            "get_products", {"PriceList": [product("eu-west-1", "23.4100000000")]}, {**expected, "NextToken": "t"}
        )
        book = PriceBook(client)
        assert book.across_regions("p4d.24xlarge") == {"us-east-1": 21.96, "ap-south-1": 19.22, "eu-west-1": 23.41}
        stub.assert_no_pending_responses()
    assert book.hourly("p4d.24xlarge", "eu-west-1").usd_per_hour == 23.41  # kept: no second call


def test_the_quarter_says_its_waste_as_each_week_priced_it_and_sends_paid_idle_hours_to_buying_less() -> None:
    weeks = [
        replace(week_of(MEMBER, label="", end=END, waste=100.0, idle=50.0, gpu=700.0, util=60.0, stopped=1,
                        saved=20.0), paid_idle_hours=40.0),
        week_of(MEMBER, label="", end=END - timedelta(days=7), waste=50.0, idle=20.0, gpu=300.0, util=20.0),
    ]  # fmt: skip
    quarter = Quarter("2026 Q3", MONTHS, [Line("instance type", "p4d.24xlarge", (1.0, 2.0, 3.0))], weeks=weeks)
    text = json.dumps(quarter_message(quarter, datetime(2026, 11, 22, 9, tzinfo=UTC)).blocks, ensure_ascii=False)
    assert (
        "70 idle GPU-hours ($150 that stops would have saved, as each week's digest priced it); 1 idle machine "
        "stopped, saving $20.00. 40 idle machine-hours were on capacity already paid: buy less at renewal."
    ) in text


def test_the_report_s_days_are_each_reader_s_and_a_month_s_rise_is_dated_by_its_month() -> None:
    rises = jumps(lines(), MONTHS, percent=50.0, at_least_usd=100.0)[:1]
    spike = Anomaly(date(2026, 9, 14), 2_400.0, "Amazon EC2", "Cost Anomaly Detection")
    quarter = Quarter("Aug 2026 to Oct 2026", MONTHS, lines(), anomalies=[spike, *rises])
    message = quarter_message(quarter, datetime(2026, 11, 22, 9, tzinfo=UTC))
    shown = as_read(message.slack_blocks())
    assert "• Mon 14 Sep 2026 UTC, Amazon EC2: $2,400" in shown  # Cost Anomaly Detection's day, as a Slack date
    assert "• Oct 2026, region us-east-1: $9,500 more" in shown  # a month, not a moment
    assert "Generated Sun 22 Nov 2026 UTC." in shown
    assert dates_in(message.slack_blocks()) == [
        int(datetime(2026, 9, 14, 12, tzinfo=UTC).timestamp()),
        int(datetime(2026, 11, 22, 9, tzinfo=UTC).timestamp()),
    ]
    assert not plain_times(message.slack_blocks())
