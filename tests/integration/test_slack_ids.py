"""Owners' Slack ids kept in the state table: many are read and kept in batches, not one call each."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from costguard.runtime import Runtime
from costguard.state.slack_ids import KnownSlackUsers
from tests.integration.conftest import TABLE


def counted(runtime: Runtime) -> tuple[KnownSlackUsers, Counter[str]]:
    client = runtime.client("dynamodb")
    calls: Counter[str] = Counter()
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.update([model.name]))
    return KnownSlackUsers(client, TABLE), calls


def test_the_ids_of_many_owners_are_kept_25_a_write_and_read_100_a_call(runtime: Runtime) -> None:
    known, calls = counted(runtime)
    ids: dict[str, str | None] = {f"user{n}@example.com": f"U{n:05d}" for n in range(150)}
    ids["gone@example.com"] = None  # not in Slack: kept too, so Slack is not asked again tomorrow
    known.put_many(ids)
    assert calls == {"BatchWriteItem": 7}  # 151 items

    found = known.get_many([*ids, "new@example.com"])
    assert calls["BatchGetItem"] == 2  # 152 keys
    assert found == ids  # the one never seen is left out: a miss, Slack is asked
    assert known.get("User7@Example.com") == (True, "U00007")  # Slack's emails are not case-sensitive
    assert calls["GetItem"] == 1


def test_an_expired_id_is_a_miss_and_two_spellings_of_one_email_are_one_item(
    runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    known, calls = counted(runtime)
    known.put_many({"a@example.com": None, "A@Example.com": "U1", "b@example.com": "U2", "c@example.com": None})
    assert calls == {"BatchWriteItem": 1}  # DynamoDB refuses one key twice in one batch: one item
    later = time.time() + 2 * 86_400  # "not in Slack" is kept a day; an id thirty
    monkeypatch.setattr(time, "time", lambda: later)
    wanted = ["a@example.com", "b@example.com", "c@example.com"]
    assert known.get_many(wanted) == {"a@example.com": "U1", "b@example.com": "U2"}  # c: asked again


def test_a_table_that_cannot_be_read_is_a_miss_not_a_failure(runtime: Runtime) -> None:
    known, _ = counted(runtime)
    known.table = "no-such-table"
    assert known.get_many(["a@example.com"]) == {}
    known.put_many({"a@example.com": "U1"})  # only logged: the ids are a cache


@pytest.fixture(autouse=True)
def _no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr("costguard.state.ledger.backoff", lambda attempt: None)
