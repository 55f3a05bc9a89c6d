"""The demo's gap proxy (testing/aws_gaps.py) answers EC2's bill and Savings Plans through testing/aws's
stand-ins, in the wire formats botocore sends and parses: the query protocol and its XML, REST-JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from testing.aws_gaps import AwsGaps, GapProxy


def test_the_query_protocol_is_read_and_answered_as_botocore_sends_and_parses_it() -> None:
    gaps = AwsGaps(spot_prices={("p4d.24xlarge", "us-east-1a"): 9.5, ("p4d.24xlarge", "eu-west-1a"): 8.0})
    gaps.reserved_instances["us-east-1"] = [
        {"ReservedInstancesId": "ri-1", "InstanceType": "p4d.24xlarge", "InstanceCount": 2,
         "Start": "2026-01-01T00:00:00.000Z", "End": "2027-01-01T00:00:00.000Z", "OfferingType": "No Upfront",
         "OfferingClass": "standard"}]  # fmt: skip
    gaps.savings_plans = [{"savingsPlanId": "sp-1", "savingsPlanArn": "arn:sp-1", "state": "active"}]
    proxy = GapProxy(gaps, moto_port=1).start()
    try:
        kw: dict[str, Any] = {"endpoint_url": proxy.url, "region_name": "us-east-1",
                              "aws_access_key_id": "k", "aws_secret_access_key": "s"}  # fmt: skip
        ec2 = boto3.client("ec2", **kw)
        ris = ec2.describe_reserved_instances(Filters=[{"Name": "state", "Values": ["active"]}])["ReservedInstances"]
        assert [(r["ReservedInstancesId"], r["InstanceCount"], r["End"].year) for r in ris] == [("ri-1", 2, 2027)]
        at = datetime(2026, 11, 2, tzinfo=UTC)
        spot = ec2.describe_spot_price_history(
            InstanceTypes=["p4d.24xlarge"], ProductDescriptions=["Linux/UNIX"], StartTime=at, MaxResults=1000
        )["SpotPriceHistory"]
        assert [(s["AvailabilityZone"], s["SpotPrice"], s["Timestamp"]) for s in spot] == [
            ("us-east-1a", "9.500000", at)]  # fmt: skip
        assert ec2.describe_capacity_reservations(MaxResults=1000)["CapacityReservations"] == []
        with pytest.raises(ClientError) as caught:
            ec2.describe_spot_price_history(MaxResults=1001)
        assert caught.value.response["Error"]["Code"] == "InvalidParameterValue"
        plans = boto3.client("savingsplans", **kw).describe_savings_plans(states=["active"])["savingsPlans"]
        assert [p["savingsPlanId"] for p in plans] == ["sp-1"]
    finally:
        proxy.stop()
