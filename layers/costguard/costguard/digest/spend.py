"""The week's money from Cost Explorer: spend this week and last, and the use of commitments. A failed
call is one missing section of the digest, named in it, never a reason to send none."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from costguard.aws.clients import READ_ERRORS, error_code
from costguard.aws.commitments import CommitmentReader
from costguard.digest.commitments import CommitmentUse


def commitment_use(
    ce: Any, reader: CommitmentReader, start: datetime, end: datetime, *, now: datetime, errors: list[str]
) -> CommitmentUse:
    out = CommitmentUse()
    period = {"Start": start.date().isoformat(), "End": end.date().isoformat()}
    calls: list[tuple[str, Callable[[], Any], Callable[[Any], Any], str]] = [
        (
            "GetReservationUtilization",
            lambda: ce.get_reservation_utilization(TimePeriod=period),
            lambda r: r["Total"]["UtilizationPercentage"],
            "ri_utilization",
        ),
        (
            "GetReservationCoverage",
            lambda: ce.get_reservation_coverage(TimePeriod=period),
            lambda r: r["Total"]["CoverageHours"]["CoverageHoursPercentage"],
            "ri_coverage",
        ),
        (
            "GetSavingsPlansUtilization",
            lambda: ce.get_savings_plans_utilization(TimePeriod=period),
            lambda r: r["Total"]["Utilization"]["UtilizationPercentage"],
            "sp_utilization",
        ),
        (
            "GetSavingsPlansCoverage",
            lambda: ce.get_savings_plans_coverage(TimePeriod=period),
            lambda r: r["SavingsPlansCoverages"][0]["Coverage"]["CoveragePercentage"],
            "sp_coverage",
        ),
    ]
    for name, call, pick, attribute in calls:
        try:
            setattr(out, attribute, float(pick(call())))
        except READ_ERRORS as exc:
            errors.append(f"{name}: {error_code(exc)}")
        except (KeyError, IndexError, TypeError, ValueError):
            setattr(out, attribute, None)  # no commitment of that kind: nothing to report
    soon = now + timedelta(days=30)
    try:
        listed = reader.commitments()
    except READ_ERRORS as exc:  # one section of the digest, not a reason to send none
        # DescribeReservedInstances or DescribeSavingsPlans: the call that failed, to grant if it was refused
        errors.append(f"{getattr(exc, 'operation_name', '') or 'DescribeReservedInstances'}: {error_code(exc)}")
        return out
    out.expiring = sorted((c for c in listed if now <= c.end <= soon), key=lambda c: c.end)
    return out


def weekly_spend(
    ce: Any, earlier: datetime, start: datetime, end: datetime, errors: list[str]
) -> tuple[float | None, float | None]:
    try:
        response = ce.get_cost_and_usage(
            TimePeriod={"Start": earlier.date().isoformat(), "End": end.date().isoformat()},
            Granularity="DAILY",
            Metrics=["UnblendedCost"],
        )
    except READ_ERRORS as exc:
        errors.append(f"GetCostAndUsage: {error_code(exc)}")
        return None, None
    this_week = last_week = 0.0
    for day in response.get("ResultsByTime", []):
        amount = float(day["Total"]["UnblendedCost"]["Amount"])
        if day["TimePeriod"]["Start"] >= start.date().isoformat():
            this_week += amount
        else:
            last_week += amount
    return this_week, last_week
