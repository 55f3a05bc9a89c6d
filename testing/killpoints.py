"""Kills at every point where an invocation changes something, found by running it, not listed by hand.

A `KillSwitch` wraps every botocore call that writes (any operation that is not a read) and every Slack
call that posts or edits (chat.postMessage, chat.update, a file's upload completed, a webhook or a
response_url). Counting, it records the points one run passes, in order. Armed at point k, it ends the
invocation there, before the call reaches AWS or Slack or right after they applied it, the way Lambda
ends an invocation at its timeout: `Killed` is a BaseException, so no `except Exception` of costguard's
sees it, and from then on every call of the dead invocation (its other threads', its `finally` blocks')
raises `Killed` too, so nothing more reaches AWS or Slack.

Used by tests/faults/test_kill_points.py; the AWS behind it is moto, Slack the stand-in.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import botocore.client
from slack_sdk.web.base_client import BaseClient as SlackBaseClient
from slack_sdk.webhook.client import WebhookClient

# Operations that change nothing: a lost answer is only a failed read.
READS = ("Describe", "List", "Get", "Query", "Scan", "BatchGet", "Lookup")
# Slack calls whose effect someone sees.
SLACK_WRITES = ("chat.postMessage", "chat.update", "files.completeUploadExternal")


class Killed(BaseException):
    """The invocation ends here: no except clause of costguard's sees it, and nothing after it reaches AWS
    or Slack."""


@dataclass(frozen=True)
class Point:
    """One place a run writes: the n-th call of its kind, in the order the run made it."""

    where: str  # "dynamodb:BatchWriteItem", "slack:chat.postMessage", "slack:response_url"
    after: bool = False  # killed once it was applied, not before it was sent

    def __str__(self) -> str:
        return f"{'after' if self.after else 'before'} {self.where}"


@dataclass
class KillSwitch:
    passed: list[str] = field(default_factory=list)  # the writes of the current run, in order
    kill_at: int = 0  # 1-based; 0: never
    after: bool = False
    dead: bool = False
    killed_at: str = ""
    applied: list[tuple[str, Any]] = field(default_factory=list)  # every AWS write that reached AWS, with its request
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, point: int, *, after: bool) -> None:
        self.kill_at, self.after = point, after

    @contextlib.contextmanager
    def invocation(self) -> Iterator[None]:
        """One invocation: its writes counted from 1; once it is killed, everything it calls dies."""
        self.passed, self.dead = [], False
        try:
            yield
        finally:
            self.dead = False
            self.kill_at = 0

    def call(self, where: str, write: bool, send: Callable[[], Any]) -> Any:
        with self._lock:
            if self.dead:
                raise Killed(f"dead since {self.killed_at}")
            if not write:
                fire_before = fire_after = False
            else:
                self.passed.append(where)
                hit = len(self.passed) == self.kill_at
                fire_before, fire_after = hit and not self.after, hit and self.after
                if fire_before:
                    self._die(f"before {where}")
        if fire_before:
            raise Killed(self.killed_at)
        answer = send()
        if fire_after:
            with self._lock:
                self._die(f"after {where}")
            raise Killed(self.killed_at)
        return answer

    def _die(self, at: str) -> None:
        self.dead, self.killed_at = True, at


@contextlib.contextmanager
def installed(switch: KillSwitch) -> Iterator[KillSwitch]:
    """The switch between costguard and AWS (botocore) and Slack (slack-sdk), for the block's duration."""
    aws_call = botocore.client.BaseClient._make_api_call  # type: ignore[attr-defined]
    slack_call = SlackBaseClient.api_call
    hook_call = WebhookClient.send_dict

    def make_api_call(client: Any, operation: str, params: Any) -> Any:
        where = f"{client.meta.service_model.endpoint_prefix}:{operation}"
        write = not operation.startswith(READS)

        def send() -> Any:
            answer = aws_call(client, operation, params)
            if write:  # what a scenario's check counts: a start made twice, say
                switch.applied.append((where, params))
            return answer

        return switch.call(where, write, send)

    def api_call(client: Any, api_method: str, **kwargs: Any) -> Any:
        write = api_method in SLACK_WRITES
        return switch.call(f"slack:{api_method}", write, lambda: slack_call(client, api_method, **kwargs))

    def send_dict(client: Any, body: Any, headers: Any = None) -> Any:
        where = "slack:response_url" if "/actions/" in client.url else "slack:webhook"
        return switch.call(where, True, lambda: hook_call(client, body, headers))

    botocore.client.BaseClient._make_api_call = make_api_call  # type: ignore[attr-defined]
    SlackBaseClient.api_call = api_call  # type: ignore[method-assign,assignment]
    WebhookClient.send_dict = send_dict  # type: ignore[method-assign,assignment]
    try:
        yield switch
    finally:
        botocore.client.BaseClient._make_api_call = aws_call  # type: ignore[attr-defined]
        SlackBaseClient.api_call = slack_call  # type: ignore[method-assign]
        WebhookClient.send_dict = hook_call  # type: ignore[method-assign]
