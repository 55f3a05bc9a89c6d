"""The member's side of Slack through the hub: the exact invocation it sends, and how it reads the hub's answer."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError
from slack_sdk.errors import SlackApiError, SlackClientError

from costguard.core.errors import EventValidationError
from costguard.slack.notifier import _maybe_delivered
from costguard.slack.relay import RelayAnswerLost, RelayedCall, RelayedWebClient, relay_arn

RELAY = relay_arn("aws", "us-east-1", "123456789012", "costguard")


class HubLambda:
    """A Lambda client that records each invocation and answers what it was told to."""

    def __init__(self, answer: Any = None, *, function_error: bool = False, raises: Exception | None = None) -> None:
        self.answer = {"status": 200, "body": {"ok": True, "ts": "1.2"}, "headers": {}} if answer is None else answer
        self.function_error, self.raises = function_error, raises
        self.requests: list[dict[str, Any]] = []

    def invoke(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        if self.raises is not None:
            raise self.raises
        result: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(self.answer).encode())}
        if self.function_error:
            result["FunctionError"] = "Unhandled"
        return result


def test_a_members_post_is_one_synchronous_invocation_of_the_hubs_relay_without_a_token() -> None:
    hub = HubLambda()
    response = RelayedWebClient(hub, RELAY).chat_postMessage(channel="C0ALERTS", text="idle", blocks=[])
    assert response["ts"] == "1.2"
    [request] = hub.requests
    assert request["FunctionName"] == "arn:aws:lambda:us-east-1:123456789012:function:costguard-slack-relay"
    assert request["InvocationType"] == "RequestResponse"
    assert json.loads(request["Payload"]) == {
        "method": "chat.postMessage",
        "verb": "POST",
        "json": {"channel": "C0ALERTS", "text": "idle", "blocks": []},
        "params": {},
    }
    assert "token" not in request["Payload"].decode()


def test_a_read_goes_as_get_with_its_parameters() -> None:
    hub = HubLambda({"status": 200, "body": {"ok": True, "user": {"id": "U0ALICE"}}, "headers": {}})
    RelayedWebClient(hub, RELAY).users_lookupByEmail(email="alice@example.com")
    assert json.loads(hub.requests[0]["Payload"]) == {
        "method": "users.lookupByEmail",
        "verb": "GET",
        "json": {},
        "params": {"email": "alice@example.com"},
    }


def test_slacks_refusal_relayed_by_the_hub_is_the_members_own_refusal() -> None:
    hub = HubLambda({"status": 200, "body": {"ok": False, "error": "not_in_channel"}, "headers": {}})
    with pytest.raises(SlackApiError) as refused:
        RelayedWebClient(hub, RELAY).chat_postMessage(channel="C0ALERTS", text="idle")
    assert refused.value.response["error"] == "not_in_channel"
    assert not _maybe_delivered(refused.value)


def test_a_rate_limit_relayed_keeps_its_retry_after() -> None:
    hub = HubLambda({"status": 429, "body": {"ok": False, "error": "ratelimited"}, "headers": {"Retry-After": "30"}})
    with pytest.raises(SlackApiError) as limited:
        RelayedWebClient(hub, RELAY).chat_postMessage(channel="C0ALERTS", text="idle")
    assert (limited.value.response.status_code, limited.value.response.headers) == (429, {"Retry-After": "30"})


def test_a_relay_that_failed_or_timed_out_after_being_invoked_may_have_posted() -> None:
    for hub in (
        HubLambda({"errorMessage": "Task timed out"}, function_error=True),
        HubLambda(raises=ReadTimeoutError(endpoint_url=RELAY)),
        HubLambda({"unexpected": True}),
    ):
        with pytest.raises(RelayAnswerLost) as lost:
            RelayedWebClient(hub, RELAY).chat_postMessage(channel="C0ALERTS", text="idle")
        assert _maybe_delivered(lost.value), "the notifier looks for the post before sending it again"


def test_a_relay_that_could_not_be_invoked_posted_nothing() -> None:
    denied = ClientError({"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "Invoke")
    with pytest.raises(SlackClientError) as refused:
        RelayedWebClient(HubLambda(raises=denied), RELAY).chat_postMessage(channel="C0ALERTS", text="idle")
    assert not _maybe_delivered(refused.value)


class BusyHubLambda(HubLambda):
    """A hub whose relay Lambda throttles the first `busy` invocations (its reserved concurrency in use)."""

    def __init__(self, busy: int) -> None:
        super().__init__()
        self.busy = busy

    def invoke(self, **request: Any) -> dict[str, Any]:
        if self.busy:
            self.busy -= 1
            self.requests.append(request)
            raise ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate Exceeded."}}, "Invoke")
        return super().invoke(**request)


def test_a_relay_throttled_by_its_concurrency_is_invoked_again_since_nothing_reached_slack() -> None:
    hub, waits = BusyHubLambda(busy=2), list[float]()
    client = RelayedWebClient(hub, RELAY, sleep=waits.append)
    assert client.chat_postMessage(channel="C0ALERTS", text="idle")["ts"] == "1.2"
    assert len(hub.requests) == 3
    assert len(waits) == 2
    assert all(0 < w <= 8 for w in waits)


def test_a_relay_throttled_past_its_tries_is_refused_as_not_delivered() -> None:
    hub = BusyHubLambda(busy=100)
    with pytest.raises(SlackClientError) as refused:
        RelayedWebClient(hub, RELAY, sleep=lambda _: None).chat_postMessage(channel="C0ALERTS", text="idle")
    assert not _maybe_delivered(refused.value)
    assert 2 < len(hub.requests) < 10


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"method": "chat.delete", "json": {"channel": "C1", "ts": "1.2"}}, "does not make"),
        ({"method": "admin.users.remove", "params": {"user_id": "U1"}}, "does not make"),
        ({"method": "chat.postMessage", "json": {"channel": "C1", "token": "xoxb-other"}}, "hub's token only"),
        ({"method": "chat.postMessage", "verb": "DELETE"}, "GET or POST"),
        ({"method": "chat.postMessage", "json": ["C1"]}, "are objects"),
        ({"method": "chat.postMessage", "files": {"file": "x"}}, "{method, verb, json, params}"),
        ({"method": "chat.postMessage", "json": {"text": "x" * 600_000}}, "larger than"),
        ("chat.postMessage", "{method, verb, json, params}"),
    ],
)
def test_the_hub_relays_only_the_calls_costguard_makes(event: Any, why: str) -> None:
    with pytest.raises(EventValidationError, match=None) as refused:
        RelayedCall.read(event)
    assert why in str(refused.value)
