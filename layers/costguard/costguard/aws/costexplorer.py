"""Cost Explorer adapter: month-to-date spend, the month's forecast, and what moved versus the same
days of last month, by service, instance type and owner tag; and who drives an anomaly (by owner tag,
its days against the days before). Takes its client.

Every call that fails is recorded and said in the message, never dropped silently: an alert with
partial context is better than no alert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.core.observability import logger
from costguard.core.records import Drivers, Mover, SpendPicture

if TYPE_CHECKING:
    from mypy_boto3_ce import CostExplorerClient

EC2_COMPUTE = "Amazon Elastic Compute Cloud - Compute"
SAGEMAKER = "Amazon SageMaker"
METRIC = "UnblendedCost"


def periods(today: date) -> tuple[tuple[date, date], tuple[date, date]]:
    """This month's complete days [1st, today) and the same days of last month."""
    start = today.replace(day=1)
    previous_start = (start - timedelta(days=1)).replace(day=1)
    days = (today - start).days
    previous_end = min(previous_start + timedelta(days=days), start)
    return (start, today), (previous_start, previous_end)


class CostExplorer:
    def __init__(self, client: CostExplorerClient, owner_tag_key: str, ec2_only: bool = False) -> None:
        self.client = client
        self.owner_tag_key = owner_tag_key
        self.ec2_only = ec2_only

    def spend_picture(self, today: date) -> SpendPicture:
        picture = SpendPicture()
        (start, end), (previous_start, previous_end) = periods(today)
        scope = self._scope()
        ec2_scope = {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}}
        groupings: list[tuple[str, dict[str, str], dict[str, Any] | None]] = [
            ("by_service", {"Type": "DIMENSION", "Key": "SERVICE"}, scope),
            ("by_instance_type", {"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}, ec2_scope),
            ("by_owner", {"Type": "TAG", "Key": self.owner_tag_key}, scope),
            *self._sagemaker_grouping(),
        ]
        for attribute, group_by, group_filter in groupings:
            compared = self._compare(
                (start, end), (previous_start, previous_end), group_by, group_filter, picture.errors
            )
            if compared is None:
                continue
            movers, current_total = compared
            if attribute == "by_sagemaker":
                movers = [Mover(sagemaker_usage(m.key), m.current, m.previous) for m in movers]
            setattr(picture, attribute, movers)
            if attribute == "by_service":
                picture.month_to_date = current_total
        picture.forecast_month = self._forecast(today, picture)
        return picture

    def _sagemaker_grouping(self) -> list[tuple[str, dict[str, str], dict[str, Any] | None]]:
        """SageMaker's spend by usage type (USE1-Notebk:ml.g5.xlarge, USE1-Host:…): which notebook instances,
        endpoints and Studio apps drive it. Not asked when the budget covers EC2 only."""
        if self.ec2_only:
            return []
        scope = {"Dimensions": {"Key": "SERVICE", "Values": [SAGEMAKER]}}
        return [("by_sagemaker", {"Type": "DIMENSION", "Key": "USAGE_TYPE"}, scope)]

    def drivers(self, start: date, end: date, services: Sequence[str] = ()) -> Drivers:
        """Who drives a jump (an anomaly's days, [start, end)): spend by owner tag against as many days
        just before, for these services (all spend when none is named). Two GetCostAndUsage calls."""
        found = Drivers(start, end, tuple(services))
        before = (start - timedelta(days=found.days), start)
        scope = {"Dimensions": {"Key": "SERVICE", "Values": list(services)}} if services else None
        group_by = {"Type": "TAG", "Key": self.owner_tag_key}
        compared = self._compare((start, end), before, group_by, scope, found.errors)
        if compared is not None:
            found.by_owner = compared[0]
        return found

    def _compare(
        self,
        current: tuple[date, date],
        previous: tuple[date, date],
        group_by: Mapping[str, str],
        group_filter: dict[str, Any] | None,
        errors: list[str],
    ) -> tuple[list[Mover], float] | None:
        """What moved between two periods, by one grouping, the biggest rise first, and the current
        period's total; None if Cost Explorer did not answer (the failure is in `errors`)."""
        now = self._grouped(*current, group_by, group_filter, errors) if current[1] > current[0] else {}
        then = self._grouped(*previous, group_by, group_filter, errors) if previous[1] > previous[0] else {}
        if now is None or then is None:
            return None
        movers = [Mover(_label(k), now.get(k, 0.0), then.get(k, 0.0)) for k in set(now) | set(then)]
        movers.sort(key=lambda m: m.delta, reverse=True)
        return movers, sum(now.values())

    def _scope(self) -> dict[str, Any] | None:
        return {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}} if self.ec2_only else None

    def _grouped(
        self,
        start: date,
        end: date,
        group_by: Mapping[str, str],
        group_filter: dict[str, Any] | None,
        errors: list[str],
    ) -> dict[str, float] | None:
        params: dict[str, Any] = {
            "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
            "Granularity": "MONTHLY",
            "Metrics": [METRIC],
            "GroupBy": [dict(group_by)],
        }
        if group_filter:
            params["Filter"] = group_filter
        totals: dict[str, float] = {}
        try:
            while True:
                response = self.client.get_cost_and_usage(**params)
                for result in response.get("ResultsByTime", []):
                    for group in result.get("Groups", []):
                        key = group["Keys"][0]
                        totals[key] = totals.get(key, 0.0) + float(group["Metrics"][METRIC]["Amount"])
                token = response.get("NextPageToken")
                if not token:
                    return totals
                params["NextPageToken"] = token
        except READ_ERRORS as exc:
            self._failed(errors, f"GetCostAndUsage by {group_by['Key']}", exc)
            return None

    def _forecast(self, today: date, picture: SpendPicture) -> float | None:
        next_month = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
        if picture.month_to_date is None:
            return None
        params: dict[str, Any] = {
            "TimePeriod": {"Start": today.isoformat(), "End": next_month.isoformat()},
            "Metric": "UNBLENDED_COST",
            "Granularity": "MONTHLY",
        }
        scope = self._scope()
        if scope:
            params["Filter"] = scope
        try:
            response = self.client.get_cost_forecast(**params)
        except READ_ERRORS as exc:
            self._failed(picture.errors, "GetCostForecast", exc)
            return None
        return picture.month_to_date + float(response["Total"]["Amount"])

    @staticmethod
    def _failed(errors: list[str], call: str, exc: BaseException) -> None:
        errors.append(f"{call}: {error_code(exc)}")
        logger.warning("cost explorer call failed", call=call, error=str(exc))


_SAGEMAKER_USAGE = {"Notebk": "notebook instances", "Host": "endpoints", "Studio": "Studio apps"}


def sagemaker_usage(key: str) -> str:
    """A SageMaker usage type as a person reads it: "USE1-Notebk:ml.g5.xlarge" is "ml.g5.xlarge notebook
    instances (USE1)"; a usage type of another form is shown as it is."""
    region, _, rest = key.partition("-")
    what, _, instance_type = rest.partition(":")
    for marker, name in _SAGEMAKER_USAGE.items():
        if what.startswith(marker) and instance_type:
            return f"{instance_type} {name} ({region})"
    return key or "(none)"


def _label(key: str) -> str:
    # Tag groups come back as "Owner$alice"; untagged spend as "Owner$".
    if "$" in key:
        value = key.split("$", 1)[1]
        return value or "(no owner tag)"
    return key or "(none)"


def monthly_spend(
    client: CostExplorerClient, start: date, end: date, group_by: Sequence[Mapping[str, str]]
) -> dict[tuple[str, ...], dict[date, float]]:
    """EC2 compute cost a month in [start, end), by up to two groupings: {(key, ...): {month: USD}}.
    Tag keys come back as "Owner$alice" and are labelled as _label does. Raises on a failed call."""
    params: dict[str, Any] = {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Granularity": "MONTHLY",
        "Metrics": [METRIC],
        "Filter": {"Dimensions": {"Key": "SERVICE", "Values": [EC2_COMPUTE]}},
        "GroupBy": [dict(g) for g in group_by],
    }
    out: dict[tuple[str, ...], dict[date, float]] = {}
    while True:
        response = client.get_cost_and_usage(**params)
        for result in response.get("ResultsByTime", []):
            month = date.fromisoformat(result["TimePeriod"]["Start"])
            for group in result.get("Groups", []):
                key = tuple(_label(k) for k in group["Keys"])
                amount = float(group["Metrics"][METRIC]["Amount"])
                out.setdefault(key, {})[month] = out.get(key, {}).get(month, 0.0) + amount
        token = response.get("NextPageToken")
        if not token:
            return out
        params["NextPageToken"] = token


ANOMALY_DAYS = 90  # Cost Anomaly Detection keeps its findings 90 days


def cost_anomalies(client: CostExplorerClient, start: date, end: date) -> list[Mapping[str, Any]] | None:
    """Cost Anomaly Detection's findings in [start, end) (its last 90 days at most); None when the account
    has no anomaly monitor (the feature is off). Raises on a failed call."""
    if not client.get_anomaly_monitors(MaxResults=1).get("AnomalyMonitors"):
        return None
    since = max(start, end - timedelta(days=ANOMALY_DAYS))
    params: dict[str, Any] = {"DateInterval": {"StartDate": since.isoformat(), "EndDate": end.isoformat()}}
    found: list[Mapping[str, Any]] = []
    while True:
        response = client.get_anomalies(**params)
        found += response.get("Anomalies", [])
        token = response.get("NextPageToken")
        if not token:
            return found
        params["NextPageToken"] = token
