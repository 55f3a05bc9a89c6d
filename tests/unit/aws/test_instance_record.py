"""An instance record keeps what DescribeInstances says of its metadata service: the SSM agent's credentials."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from costguard.aws.ec2 import instance_from_api


def described(**extra: Any) -> dict[str, Any]:
    return {
        "InstanceId": "i-0abc1234def567890",
        "InstanceType": "g5.xlarge",
        "State": {"Name": "running"},
        "LaunchTime": datetime(2026, 11, 20, tzinfo=UTC),
        **extra,
    }


def test_a_machine_whose_metadata_service_is_off_is_recorded_so() -> None:
    raw = described(MetadataOptions={"State": "applied", "HttpTokens": "required", "HttpEndpoint": "disabled"})

    assert instance_from_api(raw, "us-east-1").metadata_endpoint == "disabled"


def test_a_machine_described_without_metadata_options_has_the_default_endpoint_on() -> None:
    assert instance_from_api(described(), "us-east-1").metadata_endpoint == "enabled"
    on = described(MetadataOptions={"HttpEndpoint": "enabled"})
    assert instance_from_api(on, "us-east-1").metadata_endpoint == "enabled"
