"""The weeks the weekly digest kept: where the posted digest ended is kept for the next one, and never moved by a
run that found the week posted already."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costguard.state.weeks import WeekRecords

ACCOUNT, TABLE = "123456789012", "costguard-state"
START = datetime(2026, 11, 16, tzinfo=UTC)  # last week's start
POSTED = datetime(2026, 11, 23, 9, tzinfo=UTC)  # its digest's run


@pytest.fixture
def client() -> Iterator[Any]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        dynamodb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield dynamodb


def test_the_next_digest_reads_where_the_posted_one_ended_not_where_a_later_run_kept_the_week(client: Any) -> None:
    weeks = WeekRecords(client, TABLE)
    weeks.keep(ACCOUNT, START, '{"week": 1}')
    weeks.posted(ACCOUNT, START, POSTED)
    weeks.keep(ACCOUNT, START, '{"week": 2}')  # a retry three hours later, the post found made: figures again
    assert weeks.ended_before(ACCOUNT, START + timedelta(days=7)) == POSTED
    assert weeks.between(ACCOUNT, START.date(), START.date() + timedelta(days=1)) == ['{"week": 2}']


def test_a_week_kept_without_its_post_or_not_kept_at_all_says_nothing_of_where_it_ended(client: Any) -> None:
    weeks = WeekRecords(client, TABLE)
    assert weeks.ended_before(ACCOUNT, START + timedelta(days=7)) is None
    weeks.keep(ACCOUNT, START, "{}")
    assert weeks.ended_before(ACCOUNT, START + timedelta(days=7)) is None
    assert weeks.ended_before(ACCOUNT, START) is None  # the week itself is not the one before it


def test_an_end_that_is_not_a_time_is_unknown_not_an_error(client: Any) -> None:
    weeks = WeekRecords(client, TABLE)
    client.put_item(
        TableName=TABLE,
        Item={"pk": {"S": f"week#{ACCOUNT}"}, "sk": {"S": START.date().isoformat()}, "end": {"S": "last monday"}},
    )
    assert weeks.ended_before(ACCOUNT, START + timedelta(days=7)) is None


def test_a_week_posted_whose_figures_were_never_kept_is_left_out_of_the_quarter_not_an_error(client: Any) -> None:
    weeks = WeekRecords(client, TABLE)
    weeks.posted(ACCOUNT, START, POSTED)  # every write of its record refused, its post made
    weeks.keep(ACCOUNT, START + timedelta(days=7), '{"week": 2}')
    assert weeks.between(ACCOUNT, START.date(), START.date() + timedelta(days=14)) == ['{"week": 2}']
    assert weeks.ended_before(ACCOUNT, START + timedelta(days=7)) == POSTED


def test_a_week_posted_whose_figures_were_never_kept_is_said_and_expires_as_a_kept_week_would(client: Any) -> None:
    weeks = WeekRecords(client, TABLE)
    weeks.posted(ACCOUNT, START, POSTED)  # every write of its record refused, its post made
    weeks.keep(ACCOUNT, START + timedelta(days=7), '{"week": 2}')
    unkept: list[str] = []
    assert weeks.between(ACCOUNT, START.date(), START.date() + timedelta(days=14), unkept) == ['{"week": 2}']
    assert unkept == [START.date().isoformat()]
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": f"week#{ACCOUNT}"}, "sk": {"S": "2026-11-16"}})["Item"]
    assert int(item["expires_at"]["N"]) == int((START + timedelta(days=400)).timestamp())  # not kept for ever
    weeks.keep(ACCOUNT, START, '{"week": 1}')  # kept later: the expiry stands as the record's
    weeks.posted(ACCOUNT, START, POSTED)
    item = client.get_item(TableName=TABLE, Key={"pk": {"S": f"week#{ACCOUNT}"}, "sk": {"S": "2026-11-16"}})["Item"]
    assert int(item["expires_at"]["N"]) == int((START + timedelta(days=400)).timestamp())
