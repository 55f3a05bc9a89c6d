"""AWS calls moto does not implement, answered from the seeded fleet. The one place the demo fakes AWS.

The demo's AWS endpoint is a small proxy on 127.0.0.1: every request is forwarded to moto's server,
except the operations listed in `AwsGaps.handlers`, which are answered here in AWS's own wire format
(so the handlers and boto3 run unchanged): CloudTrail LookupEvents (90-day event history), and the Cost
Explorer reports (costs, forecast, reservation and Savings Plans use, purchase recommendations, anomaly
monitors); EC2's DescribeReservedInstances, DescribeSpotPriceHistory and DescribeCapacityReservations,
Savings Plans' DescribeSavingsPlans, the Pricing API's GetProducts and SSM's Run Command by testing/aws's
stand-ins (ec2.py, savingsplans.py, pricing.py, ssm.py) over the demo's bill, prices and machines.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, parse_qsl
from xml.sax.saxutils import escape

from testing import local_http
from testing.aws.cloudtrail import CloudTrail
from testing.aws.costexplorer import CostExplorer, Period, json_targets, plan_use
from testing.aws.ec2 import Ec2, Ec2World
from testing.aws.errors import ApiError
from testing.aws.pricing import Pricing
from testing.aws.savingsplans import SavingsPlans
from testing.aws.ssm import SystemsManager

Answer = tuple[int, dict[str, str], bytes]
Handler = Callable[[dict[str, Any], str], Answer]


@dataclass
class TrailEvent:
    """One CloudTrail record of the demo account's history (testing/aws/cloudtrail.py answers LookupEvents)."""

    record: dict[str, Any]


@dataclass
class AwsGaps:
    trail: dict[str, list[TrailEvent]] = field(default_factory=dict)  # region -> events
    prices: dict[tuple[str, str], float] = field(default_factory=dict)  # (instance type, region) -> USD/h
    # Cost Explorer: (group-by key, period start) -> {group: USD}; the forecast of the rest of the month.
    costs: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    forecast_rest_of_month: float = 0.0
    # The deep dive's quarter: group-by keys -> {group keys: {first day of a month (ISO): USD}}.
    quarter: dict[tuple[str, ...], dict[tuple[str, ...], dict[str, float]]] = field(default_factory=dict)
    daily_spend: dict[str, float] = field(default_factory=dict)  # ISO date -> USD
    coverage: dict[str, float] = field(default_factory=lambda: {"ri": 0.0, "sp": 0.0})  # % of eligible use covered
    reserved_instances: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # region -> RIs
    savings_plans: list[dict[str, Any]] = field(default_factory=list)
    utilization: dict[str, float] = field(default_factory=dict)  # RI id or SP ARN -> %
    # EC2 Spot prices: (instance type, zone) -> USD/h (moto answers every type $0.00001, in every zone)
    spot_prices: dict[tuple[str, str], float] = field(default_factory=dict)
    # SSM: each managed instance's activity check answer (None: managed, but it never answers).
    activity: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    answered: list[str] = field(default_factory=list)
    # The account's own access key: its commitments are answered to it alone (None: to every caller).
    home_key: str | None = None
    # SageMaker: (ml.* type, region) -> {usage type: USD/h}, as the Pricing API's AmazonSageMaker products say.
    sagemaker_prices: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    # Cost Anomaly Detection: its monitors (none: the feature is off) and what they found, as GetAnomalies says.
    anomaly_monitors: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[dict[str, Any]] = field(default_factory=list)

    @property
    def handlers(self) -> dict[str, Callable[[dict[str, Any], str], Answer]]:
        return {
            "CloudTrail_20131101.LookupEvents": self.lookup_events,
            "AWSPriceListService.GetProducts": self._answered(self.pricing.get_products),
            **{target: self._answered(call) for target, call in json_targets(self.costexplorer).items()},
            "query.DescribeReservedInstances": self._ec2_answer,
            "query.DescribeCapacityReservations": self._ec2_answer,  # moto has none
            # moto has no Studio apps, user profiles or spaces: the demo's domain has none.
            "SageMaker.ListApps": lambda _b, _r: _json({"Apps": []}),
            "SageMaker.ListUserProfiles": lambda _b, _r: _json({"UserProfiles": []}),
            "SageMaker.ListSpaces": lambda _b, _r: _json({"Spaces": []}),
            "query.DescribeSpotPriceHistory": self._ec2_answer,
            "rest./DescribeSavingsPlans": self.describe_savings_plans,
            "AmazonSSM.DescribeInstanceInformation": self._answered(self.ssm.describe_instance_information),
            "AmazonSSM.GetServiceSetting": self._answered(self.ssm.get_service_setting),
            "AmazonSSM.SendCommand": self._answered(self.ssm.send_command),
            "AmazonSSM.ListCommandInvocations": self._answered(self.ssm.list_command_invocations),
        }

    # ------------------------------------------------------------------ SSM and Pricing: testing/aws's stand-ins
    def __post_init__(self) -> None:
        self.ssm = SystemsManager(_DemoNodes(self.activity))
        self.pricing = Pricing(_DemoPrices(self))
        self.costexplorer = CostExplorer(self)
        self.savingsplans = SavingsPlans(lambda: self.savings_plans)
        self.cloudtrail = CloudTrail(lambda region: [e.record for e in self.trail.get(region, [])])
        self._ec2s: dict[tuple[str, bool], Ec2] = {}

    def _answered(
        self, operation: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> Callable[[dict[str, Any], str], Answer]:
        def answer(body: dict[str, Any], _region: str) -> Answer:
            try:
                return _json(operation(body))
            except ApiError as exc:
                return _json_error(exc.status, exc.code, exc.message)

        return answer

    # ------------------------------------------------------------------ Cost Explorer (testing/aws/costexplorer.py)
    def cost_and_usage(
        self,
        start: str,
        end: str,
        granularity: str,
        group_by: tuple[tuple[str, str], ...],
        scope: Mapping[str, Any] | None,
    ) -> list[Period]:
        """The demo's bill for testing/aws/costexplorer.py: the daily spend; the deep dive's months; the
        budget alerts' groups of one period (to the cent)."""
        if not group_by:  # the digest's daily spend
            return [
                Period(day, _next_day(day), round(amount, 2), estimated=True)
                for day, amount in sorted(self.daily_spend.items())
                if start <= day < end
            ]
        keys = tuple(key for _, key in group_by)
        if granularity == "MONTHLY" and keys in self.quarter:  # the deep dive's three months
            rows = self.quarter[keys]
            months = sorted({m for by_month in rows.values() for m in by_month if start <= m < end})
            return [
                Period(
                    month,
                    _next_month(month),
                    groups=[(group, round(by[month], 2)) for group, by in sorted(rows.items()) if month in by],
                )
                for month in months
            ]
        groups = self.costs.get((group_by[0][1], start), {})
        return [Period(start, end, groups=[((k,), round(v, 2)) for k, v in groups.items()], estimated=True)]

    def reports(self) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        return {
            "GetCostForecast": self.get_cost_forecast,
            "GetAnomalyMonitors": self.get_anomaly_monitors,
            "GetAnomalies": self.get_anomalies,
            "GetReservationUtilization": self.get_reservation_utilization,
            "GetSavingsPlansUtilizationDetails": self.get_savings_plans_utilization_details,
            "GetReservationCoverage": self.get_reservation_coverage,
            "GetSavingsPlansUtilization": self.get_savings_plans_utilization,
            "GetSavingsPlansCoverage": self.get_savings_plans_coverage,
            "GetReservationPurchaseRecommendation": self.get_reservation_recommendation,
            "GetSavingsPlansPurchaseRecommendation": self.get_savings_plans_recommendation,
        }

    def get_anomaly_monitors(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"AnomalyMonitors": self.anomaly_monitors}

    def get_anomalies(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The anomalies that started in the DateInterval (its end included, as AWS reads it), one page."""
        interval = body.get("DateInterval", {})
        start, end = str(interval.get("StartDate", "")), str(interval.get("EndDate", "9999"))
        return {"Anomalies": [a for a in self.anomalies if start <= str(a.get("AnomalyStartDate", ""))[:10] <= end]}

    def get_cost_forecast(self, body: Mapping[str, Any]) -> dict[str, Any]:
        amount = f"{self.forecast_rest_of_month:.2f}"
        return {"Total": {"Amount": amount, "Unit": "USD"}, "ForecastResultsByTime": []}

    def get_reservation_utilization(self, body: Mapping[str, Any]) -> dict[str, Any]:
        groups = [
            {
                "Key": "SUBSCRIPTION_ID",
                "Value": str(1_000_000 + n),
                "Attributes": {"leaseId": ri["ReservedInstancesId"], "instanceType": ri["InstanceType"]},
                "Utilization": {"UtilizationPercentage": f"{self.utilization.get(ri['ReservedInstancesId'], 0):.1f}"},
            }
            for n, ri in enumerate(r for ris in self.reserved_instances.values() for r in ris)
        ]
        ris = [r for rs in self.reserved_instances.values() for r in rs]
        total = sum(self.utilization.get(r["ReservedInstancesId"], 0) * r["InstanceCount"] for r in ris)
        count = sum(r["InstanceCount"] for r in ris) or 1
        summary = {"UtilizationPercentage": f"{total / count:.1f}"}
        return {
            "UtilizationsByTime": [{"TimePeriod": body["TimePeriod"], "Groups": groups, "Total": summary}],
            "Total": summary,
        }

    def get_reservation_coverage(self, body: Mapping[str, Any]) -> dict[str, Any]:
        total = {"CoverageHours": {"CoverageHoursPercentage": f"{self.coverage['ri']:.1f}"}}
        return {"CoveragesByTime": [{"TimePeriod": body["TimePeriod"], "Groups": [], "Total": total}], "Total": total}

    def get_savings_plans_utilization(self, body: Mapping[str, Any]) -> dict[str, Any]:
        plans = [self.utilization.get(p["savingsPlanArn"], 0) for p in self.savings_plans] or [0.0]
        total = {"Utilization": {"UtilizationPercentage": f"{sum(plans) / len(plans):.1f}"}}
        return {"SavingsPlansUtilizationsByTime": [], "Total": total}

    def get_savings_plans_coverage(self, body: Mapping[str, Any]) -> dict[str, Any]:
        coverage = {"CoveragePercentage": f"{self.coverage['sp']:.1f}"}
        return {"SavingsPlansCoverages": [{"Attributes": {}, "Coverage": coverage, "TimePeriod": body["TimePeriod"]}]}

    def get_savings_plans_utilization_details(self, body: Mapping[str, Any]) -> dict[str, Any]:
        period = body.get("TimePeriod") or {}
        try:
            days = (date.fromisoformat(period["End"]) - date.fromisoformat(period["Start"])).days
        except (KeyError, ValueError):
            days = 1
        details: list[dict[str, Any]] = []
        for p in self.savings_plans:
            percent = self.utilization.get(p["savingsPlanArn"], 0)
            total = float(p.get("commitment") or 0) * 24 * max(days, 1)
            used = total * percent / 100
            details.append(plan_use(p["savingsPlanArn"], total, used, used / PLAN_RATE))  # worth: on demand
        return {"SavingsPlansUtilizationDetails": details, "TimePeriod": body["TimePeriod"]}

    def get_reservation_recommendation(self, body: Mapping[str, Any]) -> dict[str, Any]:
        details = [
            {
                "InstanceDetails": {"EC2InstanceDetails": {"InstanceType": ri["InstanceType"], "Region": region}},
                "RecommendedNumberOfInstancesToPurchase": str(ri["InstanceCount"]),
                # A 1-year no-upfront reservation saves roughly 31 % of on-demand over a 730-hour month.
                "EstimatedMonthlySavingsAmount": f"{self._hourly(ri, region) * 730 * 0.31:.2f}",
            }
            for region, ris in self.reserved_instances.items()
            for ri in ris
        ]
        return {"Recommendations": [{"RecommendationDetails": details}]}

    def _hourly(self, ri: dict[str, Any], region: str) -> float:
        return float(self.prices.get((ri["InstanceType"], region), 0.0)) * int(ri["InstanceCount"])

    def get_savings_plans_recommendation(self, body: Mapping[str, Any]) -> dict[str, Any]:
        return {"SavingsPlansPurchaseRecommendation": {}}

    # ------------------------------------------------------------------ EC2 and Savings Plans: testing/aws's stand-ins
    def _ec2(self, region: str) -> Ec2:
        home = self.home()
        if (region, home) not in self._ec2s:
            self._ec2s[region, home] = Ec2(_DemoBill(self, region, home), region)
        return self._ec2s[region, home]

    def home(self) -> bool:
        """Whether the request being answered is the demo account's own (its commitments are its own: another
        account of the organization, the member, sees none of them)."""
        return self.home_key is None or getattr(_CALLER, "key", self.home_key) == self.home_key

    def _ec2_answer(self, body: dict[str, Any], region: str) -> Answer:
        try:
            xml = self._ec2(region).query(body)
        except ApiError as exc:
            return _xml_error(exc)
        return 200, {"Content-Type": "text/xml;charset=UTF-8"}, xml.encode()

    def describe_savings_plans(self, body: dict[str, Any], _region: str) -> Answer:
        if not self.home():
            return _json({"savingsPlans": []}, content_type="application/json")
        try:
            return _json(self.savingsplans.describe_savings_plans(body), content_type="application/json")
        except ApiError as exc:
            data = json.dumps({"message": exc.message}).encode()
            return exc.status, {"Content-Type": "application/json", "x-amzn-ErrorType": exc.code}, data

    def add_launch(self, region: str, record: dict[str, Any]) -> None:
        self.trail.setdefault(region, []).append(TrailEvent(record))

    # ------------------------------------------------------------------ CloudTrail
    def lookup_events(self, body: dict[str, Any], region: str) -> Answer:
        try:
            answer = self.cloudtrail.lookup_events(body, region)
        except ApiError as exc:
            return _json_error(exc.status, exc.code, exc.message)
        for event in answer["Events"]:
            event["EventTime"] = event["EventTime"].timestamp()  # the wire's epoch seconds
        return _json(answer)


def cost_and_usage(groups: dict[str, float], start: str, end: str) -> dict[str, Any]:
    """A GetCostAndUsage answer, grouped, in Cost Explorer's shape (also used by the tests)."""
    return {
        "ResultsByTime": [
            {
                "TimePeriod": {"Start": start, "End": end},
                "Total": {},
                "Groups": [
                    {"Keys": [k], "Metrics": {"UnblendedCost": {"Amount": f"{v:.2f}", "Unit": "USD"}}}
                    for k, v in groups.items()
                ],
                "Estimated": True,
            }
        ],
        "DimensionValueAttributes": [],
    }


def _next_day(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def _next_month(month: str) -> str:
    first = date.fromisoformat(month)
    return (first.replace(day=28) + timedelta(days=4)).replace(day=1).isoformat()


def _json(body: Any, content_type: str = "application/x-amz-json-1.1") -> Answer:
    return 200, {"Content-Type": content_type}, json.dumps(body).encode()


def _json_error(status: int, code: str, message: str) -> Answer:
    body = json.dumps({"__type": code, "message": message}).encode()
    return status, {"Content-Type": "application/x-amz-json-1.1"}, body


def _xml_error(exc: ApiError) -> Answer:
    xml = (
        f"<Response><Errors><Error><Code>{escape(exc.code)}</Code><Message>{escape(exc.message)}</Message>"
        "</Error></Errors><RequestID>demo</RequestID></Response>"
    )
    return exc.status, {"Content-Type": "text/xml;charset=UTF-8"}, xml.encode()


@dataclass
class _DemoBill(Ec2World):
    """The demo's EC2 bill in one region for testing/aws/ec2.py: its Reserved Instances (active, regional,
    Linux, as the demo's records leave out) and Spot prices; the machines themselves are moto's."""

    gaps: AwsGaps
    region: str
    home: bool = True  # the demo account's own request (another account has no Reserved Instances)

    def reserved_instances(self) -> list[dict[str, Any]]:
        if not self.home:
            return []
        defaults = {"Duration": 31536000, "FixedPrice": 0.0, "UsagePrice": 0.0, "ProductDescription": "Linux/UNIX",
                    "State": "active", "InstanceTenancy": "default", "CurrencyCode": "USD",
                    "Scope": "Region"}  # fmt: skip
        return [defaults | ri for ri in self.gaps.reserved_instances.get(self.region, [])]

    def spot_prices(self, instance_types: Sequence[str]) -> list[tuple[str, str, float]]:
        return [(t, zone, usd) for (t, zone), usd in sorted(self.gaps.spot_prices.items()) if t in instance_types]

    def now(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC)  # a Spot price asked with no StartTime: one the demo set long ago


@dataclass
class _DemoNodes:
    """The demo's managed instances for testing/aws/ssm.py: those given an activity answer (None: managed,
    but it never answers)."""

    activity: dict[str, dict[str, Any] | None]

    def nodes(self) -> list[tuple[str, str]]:
        return [(i, "Online") for i in self.activity]

    def check(self, instance_id: str) -> str | None:
        answer = self.activity.get(instance_id)
        return json.dumps(answer) if answer is not None else None


@dataclass
class _DemoPrices:
    """The demo's prices for testing/aws/pricing.py."""

    gaps: AwsGaps

    def ec2(self, instance_type: str) -> dict[str, float]:
        return {region: usd for (t, region), usd in self.gaps.prices.items() if t == instance_type}

    def sagemaker(self, instance_name: str, region: str) -> dict[str, float]:
        return dict(self.gaps.sagemaker_prices.get((instance_name, region), {}))


PLAN_RATE = 0.72  # a covered hour under the demo's Savings Plan costs this share of on demand
_CALLER = threading.local()  # the access key of the request this server thread answers


class GapProxy(local_http.Served):
    """127.0.0.1 endpoint: gaps answered by AwsGaps, everything else forwarded to moto."""

    http11 = True

    def __init__(self, gaps: AwsGaps, moto_port: int) -> None:
        self.gaps = gaps
        self.moto_port = moto_port

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        operation = self._operation(request, body)
        handler = self.gaps.handlers.get(operation)
        if handler is not None:
            self.gaps.answered.append(operation)
            payload = json.loads(body or b"{}") if body.startswith(b"{") else dict(parse_qsl(body.decode()))
            _CALLER.key = _access_key(request.headers.get("Authorization", ""))
            status, headers, data = handler(payload, _region(request.headers.get("Authorization", "")))
        else:
            status, headers, data = self._forward(request, body)
        request.send_response(status)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    @staticmethod
    def _operation(request: BaseHTTPRequestHandler, body: bytes) -> str:
        target = request.headers.get("X-Amz-Target", "")
        if target:  # com.amazonaws.cloudtrail.v20131101.CloudTrail_20131101.LookupEvents
            return ".".join(target.split(".")[-2:])
        if request.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
            action = parse_qs(body.decode(errors="replace")).get("Action", [""])[0]
            return f"query.{action}"
        return f"rest.{request.path}"

    def _forward(self, request: BaseHTTPRequestHandler, body: bytes) -> Answer:
        connection = http.client.HTTPConnection("127.0.0.1", self.moto_port, timeout=300)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("connection", "content-length")}
        connection.request(request.command, request.path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        skip = {"connection", "content-length", "transfer-encoding", "server", "date"}
        out = {k: v for k, v in response.getheaders() if k.lower() not in skip}
        connection.close()
        return response.status, out, data


def _access_key(authorization: str) -> str:
    try:
        return authorization.split("Credential=", 1)[1].split("/", maxsplit=1)[0]
    except IndexError:
        return ""


def _region(authorization: str) -> str:
    # AWS4-HMAC-SHA256 Credential=AKID/20261121/us-east-1/cloudtrail/aws4_request, ...
    try:
        return authorization.split("Credential=", 1)[1].split("/")[2]
    except IndexError:
        return "us-east-1"
