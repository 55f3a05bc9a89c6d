"""Mutated events for fuzzing the handlers: real-shaped events with a few things wrong.

A mutation is what a broken producer, a truncating proxy or an attacker would send: a key dropped, a
value of the wrong type (a list where a string was, a number, null, an object), a string cut short or
blown up, a JSON string inside the event (an SNS message, a queued click, a request body) cut or
altered, or no object at all. Seeded: a failure names its seed and can be replayed.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]

ODD_VALUES: tuple[Any, ...] = (
    None,
    0,
    -1,
    1e308,
    True,
    "",
    "x" * 5000,
    "<!channel>",
    "\ud800",
    [],
    {},
    [["nested"]],
    {"a": {"b": None}},
)


@dataclass(frozen=True)
class Mutant:
    seed: int
    what: str
    event: Any


def _paths(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))


def _set(root: Any, path: Path, value: Any) -> Any:
    if not path:
        return value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return root


def _delete(root: Any, path: Path) -> Any:
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    del parent[path[-1]]
    return root


def _json_inside(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return None
    return None


def mutate(event: Any, rng: random.Random) -> tuple[Any, str]:
    """One mutation of `event` (a deep copy), and what it was."""
    event = copy.deepcopy(event)
    paths = list(_paths(event))
    path, value = rng.choice(paths)
    where = "/".join(str(p) for p in path) or "<event>"
    inner = _json_inside(value)
    roll = rng.random()
    if inner is not None and roll < 0.5:
        mutated, what = mutate(inner, rng)
        return _set(event, path, json.dumps(mutated)), f"{where} (JSON inside): {what}"
    if path and roll < 0.3:
        return _delete(event, path), f"{where} deleted"
    if isinstance(value, str) and value and roll < 0.55:
        cut = rng.randrange(len(value))
        return _set(event, path, value[:cut]), f"{where} cut to {cut} characters"
    if roll < 0.65 and not isinstance(value, dict | list):
        return _set(event, path, [value]), f"{where} wrapped in a list"
    odd = rng.choice(ODD_VALUES)
    return _set(event, path, copy.deepcopy(odd)), f"{where} = {str(odd)[:20]!r}"


def mutants(events: list[Any], count: int, seed: int = 0) -> Iterator[Mutant]:
    """`count` events, each one of `events` with one to three mutations."""
    for n in range(count):
        rng = random.Random(seed * 1_000_003 + n)
        event = rng.choice(events)
        whats = []
        for _ in range(rng.choice((1, 1, 2, 3))):
            event, what = mutate(event, rng)
            whats.append(what)
        yield Mutant(seed * 1_000_003 + n, "; ".join(whats), event)
