"""What the machines costguard keeps stopped save, sweep by sweep: written once per sweep and region, read by day."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.state.worth import Worth, WorthLog
from testing.aws.dynamodb import DynamoDBClient

NOW = datetime(2026, 11, 24, 23, 45, tzinfo=UTC)


def test_a_weeks_prices_are_read_back_in_order_and_a_sweep_retried_is_one_record() -> None:
    client = DynamoDBClient()
    log = WorthLog(client, "costguard-state")  # type: ignore[arg-type]
    night = Worth(NOW, "us-east-1", {"i-p4d": 4.5, "i-g5": 0.0})
    morning = Worth(NOW + timedelta(hours=9), "us-east-1", {"i-p4d": 21.96})
    for record in (night, night, morning, Worth(NOW, "eu-west-1", {"i-eu": 1.0}), Worth(NOW, "us-east-1", {})):
        log.record(record)
    found = list(log.between(NOW - timedelta(days=1), NOW + timedelta(days=1)))
    assert sorted((w.at, w.region, dict(w.usd_per_hour)) for w in found) == [
        (NOW, "eu-west-1", {"i-eu": 1.0}),
        (NOW, "us-east-1", {"i-g5": 0.0, "i-p4d": 4.5}),
        (NOW + timedelta(hours=9), "us-east-1", {"i-p4d": 21.96}),
    ]
    assert list(log.between(NOW + timedelta(hours=10), NOW + timedelta(days=2))) == []


def test_an_item_that_does_not_read_as_a_record_is_skipped() -> None:
    client = DynamoDBClient()
    log = WorthLog(client, "costguard-state")  # type: ignore[arg-type]
    log.record(Worth(NOW, "us-east-1", {"i-p4d": 4.5}))
    client.put_item(TableName="costguard-state", Item={"pk": {"S": "worth#2026-11-24"}, "sk": {"S": "garbage"}})
    assert [w.usd_per_hour for w in log.between(NOW - timedelta(hours=1), NOW + timedelta(hours=1))] == [{"i-p4d": 4.5}]
