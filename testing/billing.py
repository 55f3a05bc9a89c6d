"""The bill's answers where moto has none: Reserved Instances, capacity reservations and Capacity Blocks,
Savings Plans and their use, and the instance fields that say a machine runs in reserved capacity
(moto's DescribeInstances carries neither CapacityReservationId nor the capacity-block lifecycle).

Registered on a runtime's own clients (botocore's `before-call` answers a call, as its Stubber does;
`after-call` adds the fields moto leaves out), so the handler and boto3 run unchanged."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders


def _answer(response: Mapping[str, Any]) -> Any:
    def handler(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        http = AWSResponse("https://stand-in", 200, HTTPHeaders(), None)
        return http, {**response, "ResponseMetadata": {"HTTPStatusCode": 200}}

    return handler


def answer_the_bill(
    runtime: Any,
    region: str,
    *,
    reserved: Sequence[Mapping[str, Any]] = (),
    holds: Sequence[Mapping[str, Any]] = (),
    plans: Sequence[Mapping[str, Any]] = (),
    plan_use: Mapping[str, float] | None = None,
    in_holds: Mapping[str, Mapping[str, str]] | None = None,
) -> None:
    """`in_holds`: instance id -> the fields that put it in reserved capacity (CapacityReservationId,
    InstanceLifecycle)."""
    ec2 = runtime.client("ec2", region)
    events = ec2.meta.events
    events.register("before-call.ec2.DescribeReservedInstances", _answer({"ReservedInstances": list(reserved)}))
    events.register("before-call.ec2.DescribeCapacityReservations", _answer({"CapacityReservations": list(holds)}))
    sp = runtime.client("savingsplans", "us-east-1")
    sp.meta.events.register("before-call.savingsplans.DescribeSavingsPlans", _answer({"savingsPlans": list(plans)}))
    ce = runtime.client("ce", "us-east-1")
    details = [
        {"SavingsPlanArn": arn, "Utilization": {"UtilizationPercentage": str(used)}}
        for arn, used in (plan_use or {}).items()
    ]
    ce.meta.events.register(
        "before-call.ce.GetSavingsPlansUtilizationDetails",
        _answer({"SavingsPlansUtilizationDetails": details, "TimePeriod": {"Start": "", "End": ""}}),
    )
    ce.meta.events.register("before-call.ce.GetSavingsPlansCoverage", _answer({"SavingsPlansCoverages": []}))
    if in_holds:
        fields = dict(in_holds)

        def add_fields(parsed: dict[str, Any], **_: Any) -> None:
            for reservation in parsed.get("Reservations", []):
                for instance in reservation.get("Instances", []):
                    instance.update(fields.get(instance.get("InstanceId", ""), {}))

        events.register("after-call.ec2.DescribeInstances", add_fields)
