"""The check log: each machine's last activity check answers, kept between sweeps in the state table
(`checks#<instance>`, one item of a few kilobytes, gone a day after its last answer). Read 100 machines a
call (BatchGetItem), written 25 a call (BatchWriteItem). Evidence only: a log that cannot be read or
written is no evidence, and costguard then waits the full window as it would without it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger
from costguard.state.batches import read_batch
from costguard.state.ledger import LedgerWriteError, StateTableBusy, write_batch

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEEP = timedelta(days=1)


class CheckLog:
    def __init__(self, client: DynamoDBClient, table_name: str) -> None:
        self.client = client
        self.table = table_name

    def read(self, instance_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """Each machine's kept answers (as written), oldest first; none for a machine without any, or when
        the table would not answer."""
        keys = [_key(i) for i in dict.fromkeys(instance_ids)]
        out: dict[str, list[dict[str, Any]]] = {}
        try:
            for item in read_batch(self.client, self.table, keys, "pk, answers"):
                out[item["pk"]["S"].removeprefix("checks#")] = _answers(item)
        except (ClientError, BotoCoreError, StateTableBusy) as exc:
            logger.warning("check log unreadable", error=str(exc)[:200])
        return out

    def write(self, answers: Mapping[str, Sequence[Mapping[str, Any]]], now: datetime) -> None:
        """Each machine's answers to keep, replacing what was kept. A failed write loses evidence only."""
        until = str(int((now + KEEP).timestamp()))
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        **_key(iid),
                        "answers": {"S": json.dumps(list(kept), separators=(",", ":"))},
                        "expires_at": {"N": until},
                    }
                }
            }
            for iid, kept in answers.items()
        ]
        try:
            write_batch(self.client, self.table, requests)
        except (ClientError, BotoCoreError, LedgerWriteError) as exc:
            logger.warning("check log not written", machines=len(requests), error=str(exc)[:200])


def _key(instance_id: str) -> dict[str, dict[str, str]]:
    return {"pk": {"S": f"checks#{instance_id}"}, "sk": {"S": "checks"}}


def _answers(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    try:
        raw = json.loads(item.get("answers", {}).get("S", "[]"))
    except (TypeError, ValueError):
        return []
    return [a for a in raw if isinstance(a, dict)] if isinstance(raw, list) else []
