"""DynamoDB for costguard's state table, where moto is too slow (a week of sweeps, a fleet of 10,000): the
calls costguard makes, in the low-level shape both boto3's client and the wire use, at least as strict as
DynamoDB about what it is sent.

Kept as DynamoDB keeps them: condition expressions (testing/conditions.py) on PutItem, UpdateItem,
DeleteItem and each TransactWriteItems action; the update expressions costguard writes (SET with values,
list_append and if_not_exists; REMOVE; ADD to a set, DELETE from a set); ReturnValues; Query by partition with
an optional sort-key BETWEEN / begins_with / comparison, in sort-key order; BatchWriteItem at most 25 requests,
BatchGetItem at most 100 keys, TransactWriteItems at most 100 actions and never two on one item, all or nothing
(a failed condition cancels the lot and says which, as CancellationReasons). Refused as DynamoDB refuses them: an
ExpressionAttributeValues or ExpressionAttributeNames entry no expression uses, or an expression naming
one that is not given (ValidationException). An expression this module cannot read is refused too.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from testing.aws import inprocess
from testing.aws.errors import ApiError, unsupported
from testing.conditions import ConditionError, holds

MAX_BATCH_WRITE = 25
MAX_BATCH_GET = 100
MAX_TRANSACTION = 100
Key = tuple[str, str]
_PLACEHOLDER = re.compile(r"[#:][A-Za-z0-9_]+")


def _validation(message: str) -> ApiError:
    return ApiError("ValidationException", message)


class DynamoDB:
    def __init__(self, partition: str = "pk", sort: str = "sk") -> None:
        self.partition, self.sort = partition, sort
        self.tables: dict[str, dict[Key, dict[str, Any]]] = {}
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ the store
    def table(self, name: str) -> dict[Key, dict[str, Any]]:
        return self.tables.setdefault(name, {})

    def load(self, table: str, items: list[dict[str, Any]]) -> None:
        """Items a world starts with (written as by PutItem, without a condition)."""
        for item in items:
            self.table(table)[self._key(item)] = item

    def items(self, table: str | None = None) -> Iterator[dict[str, Any]]:
        """Every item, of one table or of all, in key order."""
        for name, rows in sorted(self.tables.items()):
            if table is None or name == table:
                yield from (rows[k] for k in sorted(rows))

    def _key(self, item: Mapping[str, Any]) -> Key:
        try:
            return json.dumps(item[self.partition], sort_keys=True), json.dumps(item[self.sort], sort_keys=True)
        except KeyError as exc:
            raise _validation(f"One of the required keys was not given a value: {exc.args[0]}") from None

    # ------------------------------------------------------------------ expressions
    @staticmethod
    def _check_placeholders(params: Mapping[str, Any], *fields: str) -> None:
        """DynamoDB refuses a value or name given and not used, and one used and not given."""
        used = set()
        for name in fields:
            used |= set(_PLACEHOLDER.findall(str(params.get(name) or "")))
        values, names = params.get("ExpressionAttributeValues") or {}, params.get("ExpressionAttributeNames") or {}
        given = set(values) | set(names)
        if given - used:
            raise _validation(
                f"Value provided in ExpressionAttributeValues unused in expressions: {sorted(given - used)}"
            )
        if used - given:
            raise _validation(
                f"An expression attribute value or name used in an expression is not defined: {sorted(used - given)}"
            )

    def _holds(self, table: str, key: Key, params: Mapping[str, Any]) -> bool:
        if "ConditionExpression" not in params:
            return True
        try:
            return holds(
                params["ConditionExpression"],
                self.table(table).get(key),
                params.get("ExpressionAttributeValues"),
                params.get("ExpressionAttributeNames"),
            )
        except (ConditionError, KeyError) as exc:
            raise unsupported(f"the condition {params['ConditionExpression']!r} ({exc})") from None

    # ------------------------------------------------------------------ single items
    def put_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._check_placeholders(params, "ConditionExpression")
        table, item = params["TableName"], params["Item"]
        key = self._key(item)
        with self._lock:
            if not self._holds(table, key, params):
                raise ApiError("ConditionalCheckFailedException", "The conditional request failed")
            before = self.table(table).get(key)
            self.table(table)[key] = copy.deepcopy(item)
        return _returned(params.get("ReturnValues", "NONE"), before, None, ("NONE", "ALL_OLD"))

    def get_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if "ProjectionExpression" in params:
            raise unsupported("GetItem's ProjectionExpression")
        with self._lock:
            found = self.table(params["TableName"]).get(self._key(params["Key"]))
        return {"Item": copy.deepcopy(found)} if found is not None else {}

    def delete_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._check_placeholders(params, "ConditionExpression")
        table, key = params["TableName"], self._key(params["Key"])
        with self._lock:
            if not self._holds(table, key, params):
                raise ApiError("ConditionalCheckFailedException", "The conditional request failed")
            before = self.table(table).pop(key, None)
        return _returned(params.get("ReturnValues", "NONE"), before, None, ("NONE", "ALL_OLD"))

    def update_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self._check_placeholders(params, "ConditionExpression", "UpdateExpression")
        table, key = params["TableName"], self._key(params["Key"])
        with self._lock:
            if not self._holds(table, key, params):
                raise ApiError("ConditionalCheckFailedException", "The conditional request failed")
            before = self.table(table).get(key)
            after = copy.deepcopy(before) if before is not None else copy.deepcopy(dict(params["Key"]))
            changed = _Update(params).apply(after)
            if self.partition in changed or self.sort in changed:
                raise _validation("Cannot update attribute of the key")
            self.table(table)[key] = after
        if params.get("ReturnValues", "NONE") in ("UPDATED_NEW", "UPDATED_OLD"):
            source = after if params["ReturnValues"] == "UPDATED_NEW" else (before or {})
            return {"Attributes": {k: copy.deepcopy(source[k]) for k in changed if k in source}}
        valid = ("NONE", "ALL_OLD", "ALL_NEW")
        return _returned(params.get("ReturnValues", "NONE"), before, after, valid)

    # ------------------------------------------------------------------ many items
    def query(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The items of one partition, in sort-key order (one page: costguard's partitions are small)."""
        self._check_placeholders(params, "KeyConditionExpression", "FilterExpression")
        if params.get("FilterExpression") or params.get("IndexName"):
            raise unsupported("Query's FilterExpression and IndexName")
        values, names = params.get("ExpressionAttributeValues") or {}, params.get("ExpressionAttributeNames") or {}
        wanted = _KeyCondition(params["KeyConditionExpression"], values, names, self.partition, self.sort)
        with self._lock:
            rows = [i for i in self.table(params["TableName"]).values() if wanted.matches(i)]
        rows.sort(key=lambda i: _sort_value(i.get(self.sort)), reverse=params.get("ScanIndexForward") is False)
        if "Limit" in params:
            rows = rows[: int(params["Limit"])]
        return {"Items": copy.deepcopy(rows), "Count": len(rows), "ScannedCount": len(rows)}

    def batch_write_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        requests = [(table, r) for table, rs in params["RequestItems"].items() for r in rs]
        if not 1 <= len(requests) <= MAX_BATCH_WRITE:
            raise _validation(f"Too many items requested for the BatchWriteItem call ({len(requests)})")
        keys = [
            (t, self._key(r["PutRequest"]["Item"] if "PutRequest" in r else r["DeleteRequest"]["Key"]))
            for t, r in requests
        ]
        if len(set(keys)) != len(keys):
            raise _validation("Provided list of item keys contains duplicates")
        with self._lock:
            for (table, key), (_, request) in zip(keys, requests, strict=True):
                if "PutRequest" in request:
                    self.table(table)[key] = copy.deepcopy(request["PutRequest"]["Item"])
                else:
                    self.table(table).pop(key, None)
        return {"UnprocessedItems": {}}

    def batch_get_item(self, params: Mapping[str, Any]) -> dict[str, Any]:
        asked = [(table, key) for table, request in params["RequestItems"].items() for key in request["Keys"]]
        if not 1 <= len(asked) <= MAX_BATCH_GET:
            raise _validation(f"Too many items requested for the BatchGetItem call ({len(asked)})")
        keys = [(table, self._key(key)) for table, key in asked]
        if len(set(keys)) != len(keys):
            raise _validation("Provided list of item keys contains duplicates")
        responses: dict[str, list[Any]] = {}
        with self._lock:
            for table, key in keys:
                found = self.table(table).get(key)
                if found is not None:
                    responses.setdefault(table, []).append(copy.deepcopy(found))
        return {"Responses": responses, "UnprocessedKeys": {}}

    def transact_write_items(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """All or nothing; one failed condition cancels the lot and says which."""
        actions = [next(iter(a.items())) for a in params["TransactItems"]]
        if not 1 <= len(actions) <= MAX_TRANSACTION:
            raise _validation(f"Member must have length less than or equal to {MAX_TRANSACTION} ({len(actions)})")
        for kind, op in actions:
            if kind not in ("Put", "Delete", "Update", "ConditionCheck"):
                raise _validation(f"unknown transaction action {kind}")
            self._check_placeholders(op, "ConditionExpression", "UpdateExpression")
        keys = [(op["TableName"], self._key(op["Item"] if kind == "Put" else op["Key"])) for kind, op in actions]
        if len(set(keys)) != len(keys):
            raise _validation("Transaction request cannot include multiple operations on one item")
        with self._lock:
            failed = [not self._holds(t, k, op) for (t, k), (_, op) in zip(keys, actions, strict=True)]
            if any(failed):
                reasons = [{"Code": "ConditionalCheckFailed" if f else "None"} for f in failed]
                raise ApiError(
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons "
                    f"[{', '.join(r['Code'] for r in reasons)}]",
                    extra={"CancellationReasons": reasons},
                )
            for (table, key), (kind, op) in zip(keys, actions, strict=True):
                if kind == "Put":
                    self.table(table)[key] = copy.deepcopy(op["Item"])
                elif kind == "Delete":
                    self.table(table).pop(key, None)
                elif kind == "Update":
                    after = copy.deepcopy(self.table(table).get(key) or dict(op["Key"]))
                    _Update(op).apply(after)
                    self.table(table)[key] = after
        return {}


def _returned(
    wanted: str, before: dict[str, Any] | None, after: dict[str, Any] | None, valid: tuple[str, ...]
) -> dict[str, Any]:
    if wanted not in valid:
        raise _validation(f"ReturnValues {wanted} is not valid here (one of {', '.join(valid)})")
    chosen = before if wanted == "ALL_OLD" else after if wanted == "ALL_NEW" else None
    return {"Attributes": copy.deepcopy(chosen)} if chosen else {}


def _sort_value(value: Mapping[str, Any] | None) -> Any:
    if not value:
        return ""
    kind, raw = next(iter(value.items()))
    return float(raw) if kind == "N" else raw


# ---------------------------------------------------------------------- update expressions
_UPDATE_TOKEN = re.compile(r"\s*(\(|\)|,|=|[A-Za-z_][A-Za-z0-9_]*|[#:][A-Za-z0-9_]+)")


class _Update:
    """SET path = operand[, ...] and REMOVE path[, ...]: an operand is a :value, a path, list_append(a, b) or
    if_not_exists(path, operand). ADD and DELETE (costguard uses neither) are refused."""

    def __init__(self, params: Mapping[str, Any]) -> None:
        expression = str(params["UpdateExpression"])
        self.values = params.get("ExpressionAttributeValues") or {}
        self.names = params.get("ExpressionAttributeNames") or {}
        self.tokens: list[str] = []
        position = 0
        while position < len(expression.rstrip()):
            found = _UPDATE_TOKEN.match(expression, position)
            if found is None:
                raise unsupported(f"the update expression {expression!r} at {position}")
            self.tokens.append(found.group(1))
            position = found.end()
        self.position = 0
        self.expression = expression

    def _peek(self) -> str:
        return self.tokens[self.position] if self.position < len(self.tokens) else ""

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if not token or (expected is not None and token != expected):
            raise _validation(f"Invalid UpdateExpression {self.expression!r}: expected {expected or 'more'}")
        self.position += 1
        return token

    def _path(self, token: str) -> str:
        if token.startswith(":"):
            raise _validation(f"Invalid UpdateExpression: {token} is not a path")
        return self.names[token] if token.startswith("#") else token

    def apply(self, item: dict[str, Any]) -> set[str]:
        """Apply to `item` in place; the attributes it changed."""
        changed: set[str] = set()
        seen_clauses: set[str] = set()
        while self._peek():
            clause = self._take().upper()
            if clause not in ("SET", "REMOVE", "ADD", "DELETE") or clause in seen_clauses:
                raise unsupported(f"the update clause {clause} in {self.expression!r}")
            seen_clauses.add(clause)
            while True:
                path = self._path(self._take())
                if path in changed:
                    raise _validation(f"Two document paths overlap with each other: {path}")
                changed.add(path)
                if clause == "SET":
                    self._take("=")
                    item[path] = self._operand(item)
                elif clause == "REMOVE":
                    item.pop(path, None)
                else:
                    _add_or_delete(item, path, clause, self._operand(item))
                if self._peek() != ",":
                    break
                self._take(",")
        return changed

    def _operand(self, item: Mapping[str, Any]) -> Any:
        token = self._take()
        if token.startswith(":"):
            return copy.deepcopy(self.values[token])
        if token == "list_append":
            self._take("(")
            first = self._operand(item)
            self._take(",")
            second = self._operand(item)
            self._take(")")
            if "L" not in first or "L" not in second:
                raise _validation("Invalid UpdateExpression: list_append of a value that is not a list")
            return {"L": first["L"] + second["L"]}
        if token == "if_not_exists":
            self._take("(")
            path = self._path(self._take())
            self._take(",")
            fallback = self._operand(item)
            self._take(")")
            return copy.deepcopy(item[path]) if path in item else fallback
        path = self._path(token)
        if path not in item:
            raise _validation(f"The provided expression refers to an attribute that does not exist in the item: {path}")
        return copy.deepcopy(item[path])


def _add_or_delete(item: dict[str, Any], path: str, clause: str, value: Mapping[str, Any]) -> None:
    """ADD members to a set (made if absent); DELETE members from a set (a set left empty is no attribute, as
    DynamoDB keeps no empty set)."""
    [(kind, given)] = value.items()
    old = item.get(path)
    if kind == "N" and clause == "ADD":
        raise unsupported(f"ADD of a number to {path}")
    if kind not in ("SS", "NS", "BS"):
        raise _validation(f"Invalid UpdateExpression: {clause} takes a set{' or a number' if clause == 'ADD' else ''}")
    if not given:  # as DynamoDB: "One or more parameter values were invalid: An string set may not be empty"
        raise _validation(f"One or more parameter values were invalid: a {kind} set may not be empty")
    if len(set(map(str, given))) != len(given):  # as DynamoDB: "Input collection ... contains duplicates"
        raise _validation(f"One or more parameter values were invalid: the {kind} set given contains duplicates")
    if old is not None and kind not in old:
        raise _validation(f"An operand in the update expression has an incorrect data type: {path}")
    members = list(old[kind]) if old else []
    if clause == "ADD":
        members += [m for m in given if m not in members]
    else:
        members = [m for m in members if m not in given]
    if members:
        item[path] = {kind: members}
    else:
        item.pop(path, None)


# ---------------------------------------------------------------------- key conditions
class _KeyCondition:
    """`pk = :v` [AND sk = | < | <= | > | >= :v, BETWEEN :a AND :b, begins_with(sk, :p)]."""

    def __init__(self, expression: str, values: Mapping[str, Any], names: Mapping[str, str], pk: str, sk: str) -> None:
        self.values, self.names = values, names
        parts = re.split(r"\s+AND\s+", expression.strip(), maxsplit=1, flags=re.IGNORECASE)
        found = re.fullmatch(r"([#\w]+)\s*=\s*(:\w+)", parts[0])
        if found is None or self._name(found.group(1)) != pk:
            raise _validation(f"Query condition missed key schema element: {pk} ({expression!r})")
        self.pk, self.pk_value = pk, values[found.group(2)]
        self.sk = sk
        self.check: Any = None
        if len(parts) == 2:
            rest = parts[1].strip()
            between = re.fullmatch(r"([#\w]+)\s+BETWEEN\s+(:\w+)\s+AND\s+(:\w+)", rest, re.IGNORECASE)
            begins = re.fullmatch(r"begins_with\(\s*([#\w]+)\s*,\s*(:\w+)\s*\)", rest)
            compare = re.fullmatch(r"([#\w]+)\s*(=|<=|>=|<|>)\s*(:\w+)", rest)
            if between and self._name(between.group(1)) == sk:
                low, high = _sort_value(values[between.group(2)]), _sort_value(values[between.group(3)])
                if low > high:
                    raise _validation("Invalid KeyConditionExpression: the BETWEEN bounds are in the wrong order")
                self.check = lambda v: low <= v <= high
            elif begins and self._name(begins.group(1)) == sk:
                prefix = _sort_value(values[begins.group(2)])
                self.check = lambda v: str(v).startswith(prefix)
            elif compare and self._name(compare.group(1)) == sk:
                bound, op = _sort_value(values[compare.group(3)]), compare.group(2)
                ops = {"=": bound.__eq__, "<": bound.__gt__, "<=": bound.__ge__, ">": bound.__lt__, ">=": bound.__le__}
                self.check = ops[op]
            else:
                raise unsupported(f"the key condition {expression!r}")

    def _name(self, token: str) -> str:
        return self.names[token] if token.startswith("#") else token

    def matches(self, item: Mapping[str, Any]) -> bool:
        if item.get(self.pk) != self.pk_value:
            return False
        return self.check is None or bool(self.check(_sort_value(item.get(self.sk))))


class DynamoDBClient:
    """The stand-in as boto3's DynamoDB client, in process: each call counted by operation (CamelCase, as
    AWS names it) and answered after `latency` seconds; refusals as the ClientError `exceptions` names."""

    def __init__(self, dynamodb: DynamoDB | None = None, latency: float = 0.0) -> None:
        self.dynamodb = dynamodb or DynamoDB()
        self.latency = latency
        self.calls: Counter[str] = Counter()
        self.exceptions = inprocess.Exceptions()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(self.dynamodb, name):
            raise AttributeError(name)
        operation = "".join(part.title() for part in name.split("_"))
        call = inprocess.calling(operation, getattr(self.dynamodb, name))

        def counted(**params: Any) -> Any:
            self.calls[operation] += 1
            if self.latency:
                time.sleep(self.latency)
            return call(**params)

        return counted

    def get_paginator(self, name: str) -> Any:
        if name != "query":
            raise unsupported(f"DynamoDB's {name} paginator")
        client = self

        class Paginator:
            def paginate(self, **params: Any) -> Iterator[dict[str, Any]]:
                return inprocess.paginate(client.query, params, "LastEvaluatedKey")

        return Paginator()
