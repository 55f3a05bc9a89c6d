"""Cost Explorer over a world's bill, where moto answers almost nothing: GetCostAndUsage, and the reports
(forecast, reservation and Savings Plans use and coverage, recommendations, anomaly monitors and
anomalies) a world answers, in the shape both boto3's client and the wire use, at least as strict as Cost
Explorer about what it is sent.

Kept as Cost Explorer keeps them: a TimePeriod of ISO dates whose start comes before its end (refused
otherwise, as Cost Explorer refuses it); GetCostAndUsage's Granularity (DAILY, MONTHLY or HOURLY) and
Metrics (at least one, each one it knows) are required, at most two GroupBy of DIMENSION, TAG or
COST_CATEGORY; every amount is given under each metric asked; the groups come 1,000 a page behind a
NextPageToken (Cost Explorer does not document its page: this is the benchmarks' assumption, and the
floor they count is made of the same pages). A report the world does not answer is refused, not answered
empty.

The world is a `Bill`: its cost periods for a query, and the reports it answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Protocol

from testing.aws.errors import ApiError, unsupported

PAGE = 1_000  # groups (or totals) a GetCostAndUsage page
GRANULARITIES = ("DAILY", "MONTHLY", "HOURLY")
METRICS = (
    "UnblendedCost",
    "BlendedCost",
    "AmortizedCost",
    "NetUnblendedCost",
    "NetAmortizedCost",
    "UsageQuantity",
    "NormalizedUsageAmount",
)
GROUP_TYPES = ("DIMENSION", "TAG", "COST_CATEGORY")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass
class Period:
    """One period of a GetCostAndUsage answer: its total (no grouping) or its groups (keys -> USD)."""

    start: str
    end: str
    total: float | None = None
    groups: list[tuple[Sequence[str], float]] = field(default_factory=list)
    estimated: bool = False


class Bill(Protocol):
    def cost_and_usage(
        self,
        start: str,
        end: str,
        granularity: str,
        group_by: tuple[tuple[str, str], ...],
        scope: Mapping[str, Any] | None,
    ) -> list[Period]:
        """The periods of [start, end) at `granularity`, grouped by (type, key) pairs, within `scope` (the Filter)."""
        ...

    def reports(self) -> Mapping[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
        """The other operations it answers (GetCostForecast, GetReservationUtilization, ...), by name."""
        ...


def _validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


def check_period(period: Mapping[str, Any] | None, start: str = "Start", end: str = "End") -> tuple[str, str]:
    if not period or not _DATE.match(str(period.get(start, ""))) or not _DATE.match(str(period.get(end, ""))):
        raise _validation(f"a time period of ISO dates is required: {period!r}")
    first, last = str(period[start]), str(period[end])
    date.fromisoformat(first), date.fromisoformat(last)
    if first >= last:
        raise _validation(f"Start date ({first}) must be before end date ({last})")
    return first, last


class CostExplorer:
    def __init__(self, bill: Bill) -> None:
        self.bill = bill

    def get_cost_and_usage(self, params: Mapping[str, Any]) -> dict[str, Any]:
        start, end = check_period(params.get("TimePeriod"))
        granularity = params.get("Granularity")
        if granularity not in GRANULARITIES:
            raise _validation(f"Granularity {granularity!r}: one of {', '.join(GRANULARITIES)}")
        metrics = list(params.get("Metrics") or [])
        if not metrics or any(m not in METRICS for m in metrics):
            raise _validation(f"Metrics {metrics!r}: at least one of {', '.join(METRICS)}")
        group_by = tuple((str(g.get("Type")), str(g.get("Key"))) for g in params.get("GroupBy") or [])
        if len(group_by) > 2 or any(kind not in GROUP_TYPES for kind, _ in group_by):
            raise _validation(f"GroupBy {group_by!r}: at most two, of {', '.join(GROUP_TYPES)}")
        periods = self.bill.cost_and_usage(start, end, str(granularity), group_by, params.get("Filter"))
        # Pages of rows (a group of a period, or a period's total), periods in order.
        rows = [(p, g) for p in periods for g in (p.groups if group_by else [None])]
        first = 0
        if params.get("NextPageToken"):
            token = str(params["NextPageToken"])
            if not token.isdigit() or int(token) >= len(rows):
                raise ApiError("InvalidNextTokenException", "The NextPageToken is invalid")
            first = int(token)
        page = rows[first : first + PAGE]
        results: list[dict[str, Any]] = []
        for period, group in page:
            if not results or results[-1]["TimePeriod"]["Start"] != period.start:
                total = {} if group_by else {m: _amount(period.total or 0.0) for m in metrics}
                results.append(
                    {
                        "TimePeriod": {"Start": period.start, "End": period.end},
                        "Total": total,
                        "Groups": [],
                        "Estimated": period.estimated,
                    }
                )
            if group is not None:
                keys, amount = group
                results[-1]["Groups"].append({"Keys": list(keys), "Metrics": {m: _amount(amount) for m in metrics}})
        answer: dict[str, Any] = {"ResultsByTime": results, "DimensionValueAttributes": []}
        if group_by:
            answer["GroupDefinitions"] = [{"Type": kind, "Key": key} for kind, key in group_by]
        if first + PAGE < len(rows):
            answer["NextPageToken"] = str(first + PAGE)
        return answer

    def report(self, operation: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
        """One of the other operations, its time period checked, answered by the world (or refused)."""

        def answer(params: Mapping[str, Any]) -> dict[str, Any]:
            handler = self.bill.reports().get(operation)
            if handler is None:
                raise unsupported(f"Cost Explorer's {operation} for this world")
            if "TimePeriod" in params:
                check_period(params["TimePeriod"])
            if "DateInterval" in params:
                check_period(params["DateInterval"], "StartDate", "EndDate")
            return handler(params)

        return answer


def plan_use(arn: str, committed: float, used: float, worth: float) -> dict[str, Any]:
    """One Savings Plan's utilization details as Cost Explorer gives them: its commitment over the period, the
    part used, and what the usage it covered would have cost on demand (`worth`)."""
    percent = 100 * used / committed if committed else 0.0
    return {
        "SavingsPlanArn": arn,
        "Attributes": {},
        "Utilization": {
            "TotalCommitment": f"{committed:.2f}",
            "UsedCommitment": f"{used:.2f}",
            "UnusedCommitment": f"{committed - used:.2f}",
            "UtilizationPercentage": f"{percent:.2f}",
        },
        "Savings": {"NetSavings": f"{worth - committed:.2f}", "OnDemandCostEquivalent": f"{worth:.2f}"},
        "AmortizedCommitment": {
            "AmortizedRecurringCommitment": f"{committed:.2f}",
            "AmortizedUpfrontCommitment": "0.00",
            "TotalAmortizedCommitment": f"{committed:.2f}",
        },
    }


def _amount(usd: float) -> dict[str, str]:
    return {"Amount": f"{usd:.10f}", "Unit": "USD"}


REPORTS = (
    "GetCostForecast",
    "GetReservationUtilization",
    "GetReservationCoverage",
    "GetSavingsPlansUtilization",
    "GetSavingsPlansUtilizationDetails",
    "GetSavingsPlansCoverage",
    "GetReservationPurchaseRecommendation",
    "GetSavingsPlansPurchaseRecommendation",
    "GetAnomalyMonitors",
    "GetAnomalies",
)


def json_targets(explorer: CostExplorer) -> dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]]:
    """The stand-in's operations by their JSON target (AWSInsightsIndexService.<Operation>)."""
    out: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
        "AWSInsightsIndexService.GetCostAndUsage": explorer.get_cost_and_usage
    }
    out.update({f"AWSInsightsIndexService.{name}": explorer.report(name) for name in REPORTS})
    return out
