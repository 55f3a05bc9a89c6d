"""deep_dive end to end: moto's table and secret, the Slack stand-in, and Cost Explorer and the Pricing
API through botocore's Stubber (moto answers neither), every request asserted exactly."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from PIL import Image

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION
from costguard.aws.costexplorer import EC2_COMPUTE
from costguard.aws.pricing import PriceBook
from costguard.digest.handoff import encode
from costguard.digest.weekly.rules.figures import Week
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.summary import account_week
from costguard.runtime import Runtime
from costguard.state.entries import Entry, EntryKind
from costguard.state.weeks import WeekRecords
from testing.handlers import LambdaContext, load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, TABLE
from tests.unit.digest.quarterly.test_rules import EVERY_REGION_P4D

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

app = load_handler("deep_dive")
NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # a Monday: the quarter is August to October
PERIOD = {"Start": "2026-08-01", "End": "2026-11-01"}
MONTHS = ("2026-08-01", "2026-09-01", "2026-10-01")
EC2 = {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}}


def spend_answer(rows: dict[tuple[str, ...], tuple[float, float, float]]) -> dict[str, Any]:
    ends = ("2026-09-01", "2026-10-01", "2026-11-01")
    return {
        "ResultsByTime": [
            {
                "TimePeriod": {"Start": start, "End": end},
                "Total": {},
                "Groups": [
                    {"Keys": list(keys), "Metrics": {"UnblendedCost": {"Amount": f"{amounts[m]:.2f}", "Unit": "USD"}}}
                    for keys, amounts in rows.items()
                ],
                "Estimated": False,
            }
            for m, (start, end) in enumerate(zip(MONTHS, ends, strict=True))
        ]
    }


def expect_spend(stub: Stubber, group_by: list[dict[str, str]], rows: dict[tuple[str, ...], Any]) -> None:
    params = {"TimePeriod": PERIOD, "Granularity": "MONTHLY", "Metrics": ["UnblendedCost"], "Filter": EC2}
    stub.add_response("get_cost_and_usage", spend_answer(rows), {**params, "GroupBy": group_by})


def product(region: str, price: float) -> str:
    on_demand = {"x": {"priceDimensions": {"y": {"unit": "Hrs", "pricePerUnit": {"USD": f"{price:.4f}"}}}}}
    return json.dumps({"product": {"attributes": {"regionCode": region}}, "terms": {"OnDemand": on_demand}})


@pytest.fixture
def stubbed(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> Any:
    ce = boto3.client("ce", region_name=GLOBAL_ENDPOINT_REGION)
    pricing = boto3.client("pricing", region_name=GLOBAL_ENDPOINT_REGION)
    runtime.clients._clients[("ce", GLOBAL_ENDPOINT_REGION)] = ce
    monkeypatch.setattr(Runtime, "prices", PriceBook(pricing))
    monkeypatch.setattr(runtime, "now", lambda: NOW)
    app._settings.cache_clear()
    with Stubber(ce) as ce_stub, Stubber(pricing) as pricing_stub:
        yield ce_stub, pricing_stub
    app._settings.cache_clear()


def expect_the_quarter(ce: Stubber, pricing: Stubber) -> None:
    expect_spend(ce, [{"Type": "DIMENSION", "Key": "LINKED_ACCOUNT"}], {("123456789012",): (9000, 9500, 17500)})
    expect_spend(ce, [{"Type": "DIMENSION", "Key": "REGION"}], {("us-east-1",): (9000, 9500, 17500)})
    expect_spend(
        ce,
        [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}],
        {("p4d.24xlarge",): (8000, 8500, 16500), ("c6i.4xlarge",): (1000, 1000, 1000)},
    )
    expect_spend(
        ce, [{"Type": "TAG", "Key": "Owner"}], {("Owner$alice",): (8000, 8500, 16500), ("Owner$",): (1000,) * 3}
    )
    expect_spend(ce, [{"Type": "TAG", "Key": "Team"}], {("Team$nlp",): (9000, 9500, 17500)})
    expect_spend(
        ce,
        [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}, {"Type": "DIMENSION", "Key": "REGION"}],
        {("p4d.24xlarge", "us-east-1"): (8000, 8500, 16500), ("c6i.4xlarge", "us-east-1"): (1000, 1000, 1000)},
    )
    pricing.add_response(
        "get_products",
        {"PriceList": [product("us-east-1", 21.96), product("ap-south-1", 19.22)]},
        {"ServiceCode": "AmazonEC2", "Filters": EVERY_REGION_P4D, "MaxResults": 100},
    )
    ce.add_response("get_anomaly_monitors", {"AnomalyMonitors": []}, {"MaxResults": 1})
    ce.add_response(
        "get_reservation_utilization", {"UtilizationsByTime": [], "Total": {"UtilizationPercentage": "91.5"}},
        {"TimePeriod": PERIOD},
    )  # fmt: skip
    ce.add_response(
        "get_reservation_coverage",
        {"CoveragesByTime": [], "Total": {"CoverageHours": {"CoverageHoursPercentage": "40"}}},
        {"TimePeriod": PERIOD},
    )
    ce.add_response(
        "get_savings_plans_utilization",
        {"SavingsPlansUtilizationsByTime": [], "Total": {"Utilization": {"UtilizationPercentage": "88"}}},
        {"TimePeriod": PERIOD},
    )
    ce.add_response(
        "get_savings_plans_coverage",
        {"SavingsPlansCoverages": [{"Coverage": {"CoveragePercentage": "30"}}]},
        {"TimePeriod": PERIOD},
    )


def a_week(start: datetime, idle: float, waste: float, stops: int, saved: float) -> str:
    data = DigestData(
        start, start + timedelta(days=7), [], {}, Week(start, start + timedelta(days=7)), Week(start, start),
        [Entry(start, EntryKind.STOP, f"i-{n:017x}", REGION, "enforce") for n in range(stops)], 0.0, saved,
        None, None, None, {}, [], "Owner",  # type: ignore[arg-type]
    )  # fmt: skip
    data.this_week.fleet.idle_gpu_hours, data.this_week.fleet.waste_usd = idle, waste
    return encode(account_week(data, account="123456789012", label="", regions=(REGION,)))


def test_the_quarterly_deep_dive_posts_the_report_with_its_chart_and_csv_once(
    runtime: Runtime, slack: SlackStandIn, stubbed: Any
) -> None:
    ce, pricing = stubbed
    expect_the_quarter(ce, pricing)
    records = WeekRecords(boto3.client("dynamodb", region_name=REGION), TABLE)
    for start, idle, waste, stops, saved in (
        (datetime(2026, 8, 3, tzinfo=UTC), 120.0, 500.0, 2, 80.0),
        (datetime(2026, 10, 26, tzinfo=UTC), 30.0, 100.0, 1, 20.0),
        (datetime(2026, 11, 2, tzinfo=UTC), 999.0, 9999.0, 9, 999.0),  # November: not this quarter
    ):
        records.keep("123456789012", start, a_week(start, idle, waste, stops, saved))

    result = app.lambda_handler(load_event("deep_dive/quarterly.json"), LambdaContext(), runtime=runtime)
    ce.assert_no_pending_responses()
    pricing.assert_no_pending_responses()

    assert result["quarter"] == "Aug 2026 to Oct 2026"
    assert result["total_usd"] == 36_000.0  # 9,000 + 9,500 + 17,500
    assert result["weeks_recorded"] == 2
    assert result["region_moves"] == 1  # $33,000 of p4d: 33,000 x (1 - 19.22 / 21.96) = $4,117
    assert len(result["files"]) == 2
    [post] = slack.messages
    text = json.dumps(post.blocks, ensure_ascii=False)
    assert "EC2 compute cost *$36,000* over the quarter, month by month $9,000 → $9,500 → $17,500 (+94%" in text
    assert "accelerated instances *$33,000* (92%)" in text
    # Cost Anomaly Detection is off: October's jumps over 50 % and $100 instead
    assert "*Anomalies* (month over month: rises of more than 50% and $100; Cost Anomaly Detection is not on)" in text
    assert (
        "Oct 2026, instance type p4d.24xlarge: $8,000 more, $8,500 to $16,500 (+94%)" in text
    )  # a month's rise, dated by its month
    assert (
        "*costguard's quarter* (2 weekly records): 150 idle GPU-hours ($600 that stops would have saved, as each "
        "week's digest priced it); 3 idle machines" in text
    )
    assert "stopped, saving $100." in text
    assert "Reserved Instances 92% used, 40% of eligible hours covered; Savings Plans 88% used, 30%" in text
    assert "*p4d.24xlarge* in us-east-1: $21.96/h; cheapest: ap-south-1 $19.22, us-east-1 $21.96; *$4,117 less*" in text
    chart, table = slack.files
    assert chart["bytes"][:8] == b"\x89PNG\r\n\x1a\n"
    assert Image.open(io.BytesIO(chart["bytes"])).size == (1600, 800)  # 800 by 400 points, at twice that
    rows = table["bytes"].decode().splitlines()
    assert rows[0] == "dimension,line,2026-08,2026-09,2026-10,total,change,change %"
    assert "owner,(no owner tag),1000.00,1000.00,1000.00,3000.00,0.00,0.0" in rows
    # The scheduler's retry after a run that posted: nothing twice (the reads are made again, and stubbed so).
    expect_the_quarter(ce, pricing)
    again = app.lambda_handler(load_event("deep_dive/quarterly.json"), LambdaContext(), runtime=runtime)
    assert again["status"] == "already-posted"
    assert len(slack.messages) == 1
    assert len(slack.files) == 2


def test_without_cost_explorer_the_deep_dive_still_goes_out_and_says_what_it_could_not_read(
    runtime: Runtime, slack: SlackStandIn, stubbed: Any
) -> None:
    ce, _ = stubbed
    for _ in range(6):
        ce.add_client_error("get_cost_and_usage", "AccessDeniedException")
    ce.add_client_error("get_anomaly_monitors", "AccessDeniedException")
    for call in ("get_reservation_utilization", "get_reservation_coverage", "get_savings_plans_utilization"):
        ce.add_client_error(call, "AccessDeniedException")
    ce.add_client_error("get_savings_plans_coverage", "AccessDeniedException")
    records = WeekRecords(boto3.client("dynamodb", region_name=REGION), TABLE)
    records.posted("123456789012", datetime(2026, 9, 7, tzinfo=UTC), datetime(2026, 9, 14, 9, tzinfo=UTC))  # unkept
    records.keep("123456789012", datetime(2026, 9, 14, tzinfo=UTC), "not a week")  # cannot be read
    result = app.lambda_handler(load_event("deep_dive/quarterly.json"), LambdaContext(), runtime=runtime)
    assert result["status"] == "posted"
    assert "spend by account: AccessDeniedException" in result["errors"]
    assert "Cost Anomaly Detection: AccessDeniedException" in result["errors"]
    # the weeks whose digests' figures the quarter cannot add up are said, not silently short
    assert "the figures of the weeks of 2026-09-07 (never kept)" in result["errors"]
    assert "the figures of 1 week (unreadable)" in result["errors"]
    text = json.dumps(slack.messages[0].blocks)
    assert "Not available: spend by account: AccessDeniedException" in text
    assert slack.files[1]["bytes"].decode().splitlines() == [
        "dimension,line,2026-08,2026-09,2026-10,total,change,change %"
    ]
