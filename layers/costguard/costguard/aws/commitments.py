"""Reads Reserved Instances (per governed region), Savings Plans, their 30-day utilization and Cost
Explorer's purchase recommendations. Takes its clients. Utilization or recommendation failures are
reported and leave the value unknown; failing to list the commitments themselves raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

from costguard.aws.clients import READ_ERRORS, error_code, utc_time
from costguard.aws.costexplorer import EC2_COMPUTE
from costguard.core.observability import logger
from costguard.core.records import Commitment

if TYPE_CHECKING:
    from mypy_boto3_ce import CostExplorerClient
    from mypy_boto3_savingsplans import SavingsPlansClient


def reserved_zone(ri: Mapping[str, Any]) -> str:
    """The Availability Zone a Reserved Instance is scoped to, "" for a regional one (its discount floats across
    the region). A zonal reservation names its zone; older answers carry no Scope field at all."""
    zone = str(ri.get("AvailabilityZone") or "")
    scope = ri.get("Scope") or ("Availability Zone" if zone else "Region")
    return zone if scope == "Availability Zone" else ""


class ReadOnce:
    """The commitments' listings of one invocation, each asked once per client (so once per region) and shared
    by every reader handed it: the weekly digest's bill and its commitments section list the same Reserved
    Instances and Savings Plans. A refused read is refused once, and raised again to each reader, which says so."""

    def __init__(self) -> None:
        self._answers: dict[tuple[Any, str], list[Mapping[str, Any]] | BaseException] = {}

    def reserved(self, client: Any) -> list[Mapping[str, Any]]:
        """The active Reserved Instances of the client's region (DescribeReservedInstances)."""
        return self._once(client, "DescribeReservedInstances", lambda: active_reserved(client))

    def plans(self, client: Any) -> list[Mapping[str, Any]]:
        """Every active Savings Plan (DescribeSavingsPlans)."""
        return self._once(client, "DescribeSavingsPlans", lambda: active_plans(client))

    def _once(self, client: Any, call: str, read: Callable[[], list[Mapping[str, Any]]]) -> list[Mapping[str, Any]]:
        key = (client, call)
        if key not in self._answers:
            try:
                self._answers[key] = read()
            except READ_ERRORS as exc:
                self._answers[key] = exc
        answer = self._answers[key]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def active_reserved(client: Any) -> list[Mapping[str, Any]]:
    """The active Reserved Instances of the client's region (DescribeReservedInstances). Raises what the client
    raises."""
    response = client.describe_reserved_instances(Filters=[{"Name": "state", "Values": ["active"]}])
    return list(response.get("ReservedInstances", []))


def active_plans(client: SavingsPlansClient) -> list[Mapping[str, Any]]:
    """Every active Savings Plan, page by page (DescribeSavingsPlans). Raises what the client raises."""
    found: list[Mapping[str, Any]] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"states": ["active"]}
        if token:
            params["nextToken"] = token
        response = client.describe_savings_plans(**params)
        found += response.get("savingsPlans", [])
        token = response.get("nextToken")
        if not token:
            return found


@dataclass
class CommitmentReader:
    ec2: Mapping[str, Any]  # region -> EC2 client
    savingsplans: SavingsPlansClient
    ce: CostExplorerClient
    errors: list[str] = field(default_factory=list)
    once: ReadOnce | None = None  # the listings already read this invocation (the weekly digest's bill read them)

    def commitments(self) -> list[Commitment]:
        found: list[Commitment] = []
        once = self.once or ReadOnce()
        for region, client in self.ec2.items():
            for ri in once.reserved(client):
                found.append(
                    Commitment(
                        kind="reserved-instance",
                        commitment_id=ri["ReservedInstancesId"],
                        start=utc_time(ri["Start"]),
                        end=utc_time(ri["End"]),
                        region=region,
                        instance_type=ri["InstanceType"],
                        count=int(ri.get("InstanceCount", 1)),
                        scope=reserved_zone(ri) or "Region",
                        offering_class=ri.get("OfferingClass", ""),
                        payment_option=ri.get("OfferingType", ""),
                    )
                )
        for plan in once.plans(self.savingsplans):
            found.append(
                Commitment(
                    kind="savings-plan",
                    commitment_id=plan["savingsPlanId"],
                    arn=plan.get("savingsPlanArn", ""),
                    start=utc_time(plan["start"]),
                    end=utc_time(plan["end"]),
                    region=plan.get("region", ""),
                    instance_type=plan.get("ec2InstanceFamily", ""),
                    scope=plan.get("savingsPlanType", ""),
                    offering_class=plan.get("savingsPlanType", ""),
                    payment_option=plan.get("paymentOption", ""),
                    hourly_commitment=float(plan["commitment"]) if plan.get("commitment") else None,
                )
            )
        return found

    def utilization(self, today: date) -> dict[str, float]:
        """Commitment id (RI) or ARN (Savings Plan) → utilization % over the last 30 days."""
        period: Any = {"Start": (today - timedelta(days=30)).isoformat(), "End": today.isoformat()}
        out: dict[str, float] = {}
        try:
            response = self.ce.get_reservation_utilization(
                TimePeriod=period, GroupBy=[{"Type": "DIMENSION", "Key": "SUBSCRIPTION_ID"}]
            )
            for window in response.get("UtilizationsByTime", []):
                for group in window.get("Groups", []):
                    lease = (group.get("Attributes") or {}).get("leaseId") or group.get("Value", "")
                    out[lease] = float(group["Utilization"]["UtilizationPercentage"])
        except READ_ERRORS as exc:
            self._failed("GetReservationUtilization", exc)
        try:
            token: str | None = None
            while True:
                params: dict[str, Any] = {"TimePeriod": period}
                if token:
                    params["NextToken"] = token
                details = self.ce.get_savings_plans_utilization_details(**params)
                for detail in details.get("SavingsPlansUtilizationDetails", []):
                    out[detail["SavingsPlanArn"]] = float(detail["Utilization"]["UtilizationPercentage"])
                token = details.get("NextToken")
                if not token:
                    break
        except READ_ERRORS as exc:
            self._failed("GetSavingsPlansUtilizationDetails", exc)
        return out

    def recommendation(self, commitment: Commitment) -> str | None:
        """Cost Explorer's own purchase recommendation, in one sentence, or None."""
        if commitment.kind == "reserved-instance":
            return self._ri_recommendations.get(commitment.instance_type) or self._ri_recommendations.get("*")
        return self._sp_recommendation

    @cached_property
    def _ri_recommendations(self) -> dict[str, str]:
        try:
            response = self.ce.get_reservation_purchase_recommendation(
                Service=EC2_COMPUTE,
                LookbackPeriodInDays="THIRTY_DAYS",
                TermInYears="ONE_YEAR",
                PaymentOption="NO_UPFRONT",
            )
        except READ_ERRORS as exc:
            self._failed("GetReservationPurchaseRecommendation", exc)
            return {}
        out: dict[str, str] = {}
        for recommendation in response.get("Recommendations", []):
            for detail in recommendation.get("RecommendationDetails", []):
                instance_type = detail.get("InstanceDetails", {}).get("EC2InstanceDetails", {}).get("InstanceType", "")
                count = detail.get("RecommendedNumberOfInstancesToPurchase", "?")
                saving = float(detail.get("EstimatedMonthlySavingsAmount", 0) or 0)
                out[instance_type] = (
                    f"Cost Explorer recommends {count} × {instance_type} (1 year, no upfront), "
                    f"saving about ${saving:,.0f} a month."
                )
            summary = recommendation.get("RecommendationSummary") or {}
            if summary.get("TotalEstimatedMonthlySavingsAmount"):
                total = float(summary["TotalEstimatedMonthlySavingsAmount"])
                out["*"] = f"Cost Explorer's EC2 reservation recommendations would save about ${total:,.0f} a month."
        return out

    @cached_property
    def _sp_recommendation(self) -> str | None:
        try:
            response = self.ce.get_savings_plans_purchase_recommendation(
                SavingsPlansType="COMPUTE_SP",
                TermInYears="ONE_YEAR",
                PaymentOption="NO_UPFRONT",
                LookbackPeriodInDays="THIRTY_DAYS",
            )
        except READ_ERRORS as exc:
            self._failed("GetSavingsPlansPurchaseRecommendation", exc)
            return None
        summary = (response.get("SavingsPlansPurchaseRecommendation") or {}).get(
            "SavingsPlansPurchaseRecommendationSummary"
        ) or {}
        if not summary.get("HourlyCommitmentToPurchase"):
            return None
        hourly = float(summary["HourlyCommitmentToPurchase"])
        saving = float(summary.get("EstimatedMonthlySavingsAmount", 0) or 0)
        return (
            f"Cost Explorer recommends a Compute Savings Plan of ${hourly:,.2f}/h (1 year, no upfront), "
            f"saving about ${saving:,.0f} a month."
        )

    def _failed(self, call: str, exc: BaseException) -> None:
        self.errors.append(f"{call}: {error_code(exc)}")
        logger.warning("cost explorer call failed", call=call, error=str(exc))
