"""Reading many items of the state table at once: BatchGetItem, 100 keys a call, what DynamoDB leaves
unprocessed (it throttles so) asked again with the ledger's backoff."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from costguard.state.ledger import StateTableBusy, backoff

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEYS_PER_CALL = 100  # BatchGetItem's limit
MAX_ATTEMPTS = 5


def read_batch(
    client: DynamoDBClient,
    table: str,
    keys: Sequence[Mapping[str, Any]],
    projection: str = "",
    *,
    consistent: bool = False,
) -> Iterator[Mapping[str, Any]]:
    """The items that exist among `keys` (in no particular order; `consistent`: strongly consistent reads). Raises
    ClientError as DynamoDB does, and StateTableBusy when part of a batch stays unprocessed after MAX_ATTEMPTS."""
    for start in range(0, len(keys), KEYS_PER_CALL):
        batch: list[Any] = [dict(k) for k in keys[start : start + KEYS_PER_CALL]]
        for attempt in range(MAX_ATTEMPTS):
            request: Any = {"Keys": batch, **({"ProjectionExpression": projection} if projection else {})}
            if consistent:
                request["ConsistentRead"] = True
            answer = client.batch_get_item(RequestItems={table: request})
            responses: Mapping[str, Any] = answer.get("Responses") or {}
            yield from responses.get(table) or []
            unprocessed: Mapping[str, Any] = answer.get("UnprocessedKeys") or {}
            batch = list((unprocessed.get(table) or {}).get("Keys") or [])
            if not batch:
                break
            backoff(attempt)
        else:
            raise StateTableBusy(f"{len(batch)} keys still unprocessed after {MAX_ATTEMPTS} tries")
