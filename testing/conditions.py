"""DynamoDB condition expressions, evaluated the way DynamoDB does, for the in-process fakes of the
benchmarks (bench/week.py, testing/aws/server.py): OR, AND, NOT, parentheses, attribute_exists(),
attribute_not_exists(), and comparisons (=, <>, <, <=, >, >=) between attributes (by name or #alias)
and :values. Enough for every condition costguard writes; anything else raises, so a fake never
answers a condition it does not understand."""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

_TOKEN = re.compile(r"\s*(\(|\)|<>|<=|>=|=|<|>|,|[A-Za-z_][A-Za-z0-9_]*\(|[#:]?[A-Za-z0-9_]+)")


class ConditionError(ValueError):
    pass


def holds(
    expression: str,
    item: Mapping[str, Any] | None,
    values: Mapping[str, Any] | None = None,
    names: Mapping[str, str] | None = None,
) -> bool:
    """Whether `expression` holds for `item` (DynamoDB's wire format, None: no such item)."""
    tokens = _tokens(expression)
    parser = _Parser(tokens, item or {}, values or {}, names or {})
    result = parser.disjunction()
    if parser.position != len(tokens):
        raise ConditionError(f"cannot read {expression!r} past {tokens[parser.position]!r}")
    return result


def _tokens(expression: str) -> list[str]:
    out, position = [], 0
    while position < len(expression.rstrip()):
        found = _TOKEN.match(expression, position)
        if found is None:
            raise ConditionError(f"cannot read {expression!r} at {position}")
        out.append(found.group(1))
        position = found.end()
    return out


class _Parser:
    def __init__(self, tokens: list[str], item: Mapping[str, Any], values: Mapping[str, Any], names: Mapping[str, str]):
        self.tokens, self.item, self.values, self.names = tokens, item, values, names
        self.position = 0

    def _peek(self) -> str:
        return self.tokens[self.position] if self.position < len(self.tokens) else ""

    def _take(self, expected: str | None = None) -> str:
        token = self._peek()
        if expected is not None and token.upper() != expected:
            raise ConditionError(f"expected {expected}, found {token!r}")
        self.position += 1
        return token

    def disjunction(self) -> bool:
        result = self.conjunction()
        while self._peek().upper() == "OR":
            self._take()
            right = self.conjunction()
            result = result or right
        return result

    def conjunction(self) -> bool:
        result = self.negation()
        while self._peek().upper() == "AND":
            self._take()
            right = self.negation()
            result = result and right
        return result

    def negation(self) -> bool:
        if self._peek().upper() == "NOT":
            self._take()
            return not self.negation()
        return self.primary()

    def primary(self) -> bool:
        token = self._peek()
        if token == "(":
            self._take()
            result = self.disjunction()
            self._take(")")
            return result
        if token in ("attribute_exists(", "attribute_not_exists("):
            self._take()
            name = self._name(self._take())
            self._take(")")
            return (name in self.item) == (token == "attribute_exists(")
        left = self._operand(self._take())
        operator = self._take()
        right = self._operand(self._take())
        return _compare(left, operator, right)

    def _name(self, token: str) -> str:
        return self.names[token] if token.startswith("#") else token

    def _operand(self, token: str) -> Any:
        raw = self.values[token] if token.startswith(":") else self.item.get(self._name(token))
        if raw is None:
            return None
        kind, value = next(iter(raw.items()))
        return Decimal(value) if kind == "N" else value


def _compare(left: Any, operator: str, right: Any) -> bool:
    if left is None or right is None:  # a comparison with a missing attribute is false
        return False
    checks = {
        "=": left == right,
        "<>": left != right,
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }
    if operator not in checks:
        raise ConditionError(f"unknown comparison {operator!r}")
    return bool(checks[operator])
