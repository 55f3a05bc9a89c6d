"""The bench week's state table (testing/week.py's FakeAws over testing/aws/dynamodb.py): a Query answers one page
as DynamoDB does, and the Query paginator every page; the weekly digest's read of the week before it works."""

from __future__ import annotations

from datetime import UTC, datetime

from costguard.state.weeks import WeekRecords
from testing.week import FakeAws, Fleet
from testing.worlds.week import World

TABLE = "costguard-state"


def _aws() -> FakeAws:
    return FakeAws(Fleet(World(7), 7, 0.0), "{}")


def test_a_query_is_answered_with_one_page_of_items_and_the_paginator_with_every_page() -> None:
    client = _aws().client("dynamodb")
    for day in ("2026-11-02", "2026-11-09"):
        client.put_item(TableName=TABLE, Item={"pk": {"S": "week#1"}, "sk": {"S": day}, "body": {"S": day}})
    asked = {
        "TableName": TABLE,
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "week#1"}},
    }
    page = client.query(**asked, ScanIndexForward=False, Limit=1)
    assert [item["sk"]["S"] for item in page["Items"]] == ["2026-11-09"]
    pages = list(client.get_paginator("query").paginate(**asked))
    assert [item["sk"]["S"] for p in pages for item in p["Items"]] == ["2026-11-02", "2026-11-09"]


def test_the_weekly_digest_reads_where_the_week_before_it_ended() -> None:
    weeks = WeekRecords(_aws().client("dynamodb"), TABLE)
    ended = datetime(2026, 11, 9, 8, 0, tzinfo=UTC)
    weeks.keep("123456789012", datetime(2026, 11, 2, tzinfo=UTC), "{}")
    weeks.posted("123456789012", datetime(2026, 11, 2, tzinfo=UTC), ended)
    assert weeks.ended_before("123456789012", datetime(2026, 11, 9, 8, 0, tzinfo=UTC)) == ended
