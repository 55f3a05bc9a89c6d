"""Faults injected where they happen in AWS and Slack: a Lambda killed between two steps, a call throttled
or refused, a write applied whose answer was lost, Slack failing, every event delivered twice."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from testing.killpoints import Killed, KillSwitch, installed
from testing.slack_text import as_read
from tests.integration.conftest import aws, now, runtime, slack  # noqa: F401 (the integration fixtures)

__all__ = ["Killed", "armed_on", "kill_at", "refuse", "said_from_now", "switch"]


@pytest.fixture
def switch() -> Iterator[KillSwitch]:
    """Kills an invocation at a point where it writes (testing/killpoints.py)."""
    with installed(KillSwitch()) as it:
        yield it


@contextlib.contextmanager
def armed_on(switch: KillSwitch, point: str, *, after: bool = False) -> Iterator[None]:
    """The invocation in the block is killed at its first call of `point` ("ec2:StopInstances",
    "slack:chat.postMessage"), before the call or once it was applied; the block must end killed."""
    original = switch.call

    def call(where: str, write: bool, send: Any) -> Any:
        if where == point and switch.kill_at == 0 and not switch.dead:
            switch.arm(len(switch.passed) + 1, after=after)
        return original(where, write, send)

    switch.call = call  # type: ignore[method-assign]
    try:
        with switch.invocation(), pytest.raises(Killed):
            yield
    finally:
        switch.call = original  # type: ignore[method-assign]


def said_from_now(
    monkeypatch: pytest.MonkeyPatch, standin: Any, methods: tuple[str, ...] = ("chat.update", "chat.postMessage")
) -> list[str]:
    """What costguard's messages say from now on (their blocks as read), each time a call of `methods` is made to
    the Slack stand-in: a fault test watches what a faulty sweep showed."""
    said: list[str] = []
    original = standin._api

    def watched(method: str, args: Any) -> Any:
        if method in methods:
            said.append(as_read(args.get("blocks")))
        return original(method, args)

    monkeypatch.setattr(standin, "_api", watched)
    return said


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
