"""The starts refused for capacity, kept per region: written once whatever is written twice, read back whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.scarcity import FailedStart
from costguard.state.capacity import CapacityLog
from testing.aws.dynamodb import DynamoDBClient

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


def test_failures_and_the_time_cloudtrail_was_read_until_are_kept_per_region() -> None:
    client = DynamoDBClient()
    log = CapacityLog(client, "costguard-state")  # type: ignore[arg-type]
    ours = FailedStart("p4d.24xlarge", "us-east-1a", NOW, "costguard", "i-1", "us-east-1")
    theirs = FailedStart("p5.48xlarge", "", NOW - timedelta(days=3), "CloudTrail", region="us-east-1")
    log.add("us-east-1", [ours, ours, theirs], read_until=NOW)
    log.add("eu-west-1", [FailedStart("g5.xlarge", "eu-west-1b", NOW, "CloudTrail", region="eu-west-1")])

    record = log.load("us-east-1")
    assert sorted(record.failures, key=lambda f: f.at) == [theirs, ours]  # the same failure twice is one
    assert record.read_until == NOW
    assert log.load("eu-west-1").read_until is None  # never read from CloudTrail there
    assert log.load("ap-south-1").failures == ()
    assert client.calls["BatchWriteItem"] == 2
