"""Savings Plans' DescribeSavingsPlans over a world's plans (boto3's shape, as the REST-JSON wire carries
it), for the digest's endpoint and the demo's gap proxy; at least as strict as the service about what
costguard sends: states and filters from the API's enums, maxResults 0 to 1,000, an unknown parameter
refused (ValidationException), pages followed by nextToken."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from testing.aws.errors import ApiError

STATES = {"payment-pending", "payment-failed", "active", "retired", "queued", "queued-deleted",
          "pending-return", "returned"}  # fmt: skip
FILTERS = {"region": "region", "ec2-instance-family": "ec2InstanceFamily", "commitment": "commitment",
           "upfront": "upfront", "term": "termDurationInSeconds", "savings-plan-type": "savingsPlanType",
           "payment-option": "paymentOption", "start": "start", "end": "end"}  # fmt: skip
PARAMETERS = {"savingsPlanArns", "savingsPlanIds", "nextToken", "maxResults", "states", "filters"}
PAGE_MAX = 1000


def _validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


class SavingsPlans:
    def __init__(self, plans: Callable[[], Sequence[Mapping[str, Any]]]) -> None:
        self.plans = plans

    def describe_savings_plans(self, params: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(params) - PARAMETERS)
        if unknown:
            raise _validation(f"Unknown parameter: {unknown[0]}")
        states = list(params.get("states") or [])
        wrong = [s for s in states if s not in STATES]
        if wrong:
            raise _validation(f"Value '{wrong[0]}' at 'states' failed to satisfy constraint: one of {sorted(STATES)}")
        size = int(params.get("maxResults", PAGE_MAX))
        if not 0 <= size <= PAGE_MAX:
            raise _validation(f"maxResults {size}: 0 to {PAGE_MAX}")
        rows = [dict(p) for p in self.plans()]
        if states:
            rows = [p for p in rows if p.get("state") in states]
        arns, ids = set(params.get("savingsPlanArns") or []), set(params.get("savingsPlanIds") or [])
        rows = [p for p in rows if (not arns or p["savingsPlanArn"] in arns) and (not ids or p["savingsPlanId"] in ids)]
        for f in params.get("filters") or []:
            key = FILTERS.get(f.get("name", ""))
            if key is None:
                raise _validation(f"Value '{f.get('name')}' at 'filters.name' failed to satisfy constraint")
            rows = [p for p in rows if str(p.get(key, "")) in f.get("values", [])]
        token = str(params.get("nextToken") or "0")
        if not token.isdigit():
            raise _validation(f"Invalid nextToken: {token}")
        start = int(token)
        answer: dict[str, Any] = {"savingsPlans": rows[start : start + size]}
        if start + size < len(rows):
            answer["nextToken"] = str(start + size)
        return answer
