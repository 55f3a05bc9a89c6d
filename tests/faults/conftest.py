"""Faults injected where they happen in AWS and Slack: a Lambda killed between two steps, a call throttled
or refused, a write applied whose answer was lost, Slack failing, every event delivered twice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from tests.integration.conftest import aws, now, runtime, slack  # noqa: F401 (the integration fixtures)


class Killed(BaseException):
    """The invocation ends here: no except clause of costguard's sees it, no finally of its runs after."""


def kill_at(client: Any, operation: str, *, after: bool = False, times: int = 1, skip: int = 0) -> list[int]:
    """After `skip` calls of `operation`, the next `times` kill the invocation: before the call reaches AWS,
    or (`after`) once AWS applied it. Returns a counter of the kills."""
    return _inject(client, operation, lambda: Killed(operation), after=after, times=times, skip=skip)


def refuse(client: Any, operation: str, code: str, *, after: bool = False, times: int = 10_000) -> list[int]:
    """The next calls of `operation` fail with an AWS error (`after`: applied, then answered with it)."""
    return _inject(client, operation, lambda: _error(code, operation), after=after, times=times)


def _error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)


def _inject(
    client: Any, operation: str, make: Callable[[], BaseException], *, after: bool, times: int, skip: int = 0
) -> list[int]:
    fired: list[int] = []
    seen: list[int] = []

    def hook(**_: Any) -> None:
        seen.append(1)
        if len(seen) > skip and len(fired) < times:
            fired.append(1)
            raise make()

    event = "after-call" if after else "before-call"
    client.meta.events.register(f"{event}.{client.meta.service_model.endpoint_prefix}.{operation}", hook)
    return fired
