"""Slack through the hub, in an organization: one bot token, kept in the hub's account only.

A member stack deployed by make org-deploy holds no Slack secret. Each Slack Web API call its functions make
is one synchronous invocation of the hub's relay function (`<HubStackName>-slack-relay`, in the hub's account and
region), which makes that call with the hub's token and answers with what Slack answered: status, body and the
Retry-After header. Everything above the Web client runs in the member as before (a lost post looked for before
it is sent again, the pace per channel, the people's ids kept in the member's table); a file's bytes go from the
member straight to the upload URL Slack gave, which needs no token.

The relay makes only the Web API methods costguard uses (`RELAYED_METHODS`), never a file upload, an auth or a
token of the caller's, so a member's function (the only principals the relay's resource policy admits) can post,
edit its posts and read what the bot may read, nothing else with the token (docs/security.md).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError, SlackRequestError
from slack_sdk.web import SlackResponse

from costguard.core.errors import EventValidationError
from costguard.core.observability import traced

# The hub's relay, by the name its stack gives it; a member derives it from HubStackName.
RELAY_SUFFIX = "-slack-relay"
# What costguard calls (slack/notifier.py, slack/people.py, files_upload_v2's two steps), and nothing more.
RELAYED_METHODS = frozenset(
    {
        "chat.postMessage",
        "chat.update",
        "conversations.history",
        "conversations.replies",
        "conversations.open",
        "users.info",
        "users.list",
        "users.lookupByEmail",
        "usergroups.users.list",
        "files.getUploadURLExternal",
        "files.completeUploadExternal",
    }
)
# A Slack message is at most 50 blocks of a few KB; Lambda takes 6 MB synchronously. Far above what costguard sends.
MAX_REQUEST_BYTES = 512 * 1024
# One attempt: an invocation retried after its answer was lost could post twice (the notifier looks first). Longer
# than the relay's own timeout (template.yaml, SlackRelayFunction), so its answer, refusals included, comes back.
RELAY_CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 1},
    user_agent_extra="costguard",
    connect_timeout=5,
    read_timeout=40,
)


# The relay's reserved concurrency is shared by every member: a call Lambda throttles (TooManyRequestsException)
# never ran, so nothing reached Slack, and it is invoked again after a jittered wait, a few times, within seconds.
THROTTLED_TRIES = 5
THROTTLED_FIRST_WAIT = 0.5  # seconds, doubled each time, jittered, so members that collided spread out


def relay_arn(partition: str, region: str, account: str, hub_stack: str) -> str:
    return f"arn:{partition}:lambda:{region}:{account}:function:{hub_stack}{RELAY_SUFFIX}"


@dataclass(frozen=True)
class RelayedCall:
    """One Web API call a member asks the hub to make, read as another account's input."""

    method: str
    verb: str
    json: dict[str, Any]
    params: dict[str, Any]

    @classmethod
    def read(cls, event: Any) -> RelayedCall:
        if not isinstance(event, Mapping) or set(event) - {"method", "verb", "json", "params"}:
            raise EventValidationError("a Slack relay request is {method, verb, json, params}")
        method, verb = event.get("method"), event.get("verb", "POST")
        if method not in RELAYED_METHODS:
            raise EventValidationError(f"the Slack relay does not make {str(method)[:60]!r}")
        if verb not in ("GET", "POST"):
            raise EventValidationError(f"the Slack relay sends GET or POST, not {str(verb)[:10]!r}")
        body, params = event.get("json") or {}, event.get("params") or {}
        if not isinstance(body, Mapping) or not isinstance(params, Mapping):
            raise EventValidationError("a Slack relay request's json and params are objects")
        if "token" in body or "token" in params:
            raise EventValidationError("the Slack relay uses the hub's token only")
        if len(json.dumps(event, default=str)) > MAX_REQUEST_BYTES:
            raise EventValidationError("a Slack relay request is larger than any costguard sends")
        return cls(str(method), str(verb), dict(body), dict(params))


def relay(web: WebClient, call: RelayedCall) -> dict[str, Any]:
    """The hub's side: make the call with the hub's client and return Slack's answer, refusals included (the member
    reads them as its own). A call whose answer was lost raises: the member's invocation then fails, and the member
    treats the call as maybe made (a post is looked for before it is sent again)."""
    try:
        response = web.api_call(call.method, http_verb=call.verb, json=call.json or None, params=call.params or None)
    except SlackApiError as exc:
        response = exc.response
    retry_after = next((v for k, v in (response.headers or {}).items() if str(k).lower() == "retry-after"), None)
    body = response.data if isinstance(response.data, dict) else {"ok": False, "error": "not_json"}
    return {
        "status": int(response.status_code),
        "body": body,
        "headers": {"Retry-After": retry_after} if retry_after is not None else {},
    }


def refused(reason: str) -> dict[str, Any]:
    """The relay's answer to a request it does not make: nothing reached Slack."""
    return {"status": 400, "body": {"ok": False, "error": "not_relayed", "reason": reason[:300]}, "headers": {}}


class RelayAnswerLost(TimeoutError):
    """The hub's relay was invoked but its answer did not come back: Slack may have taken the call."""


class RelayThrottled(SlackClientError):
    """Lambda throttled the invocation (the relay's reserved concurrency in use): it never ran."""


class RelayedWebClient(WebClient):
    """A member's Slack Web client without a token: every call goes to the hub's relay (one Lambda invocation,
    never retried blind: `lambda_client` must make one attempt, see `Runtime.notifier`; only an invocation Lambda
    throttled, which never ran, is made again)."""

    def __init__(self, lambda_client: Any, function_arn: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        super().__init__(token=None)
        self.lambda_client = lambda_client
        self.function_arn = function_arn
        self.sleep = sleep

    def api_call(
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> SlackResponse:
        del headers  # the hub's client sends its own
        if files or auth:
            raise SlackRequestError(f"{api_method}: files and auth are not relayed through the hub")
        request = {
            "method": api_method,
            "verb": http_verb,
            "json": _present(json),
            "params": _present({**(params or {}), **(data or {})}),
        }
        with traced(f"Slack {api_method} (through the hub)"):
            answer = self._invoke(api_method, request)
        response = SlackResponse(
            client=self,
            http_verb=http_verb,
            api_url=f"{self.function_arn}#{api_method}",
            req_args={},
            data=answer["body"],
            headers=answer["headers"],
            status_code=answer["status"],
        )
        if response.status_code == 200 and answer["body"].get("ok") is True:
            return response
        raise SlackApiError(f"The request to the Slack API failed. (url: {api_method})", response)  # type: ignore[no-untyped-call]

    def _invoke(self, api_method: str, request: dict[str, Any]) -> dict[str, Any]:
        for attempt in range(THROTTLED_TRIES):
            try:
                return self._invoke_once(api_method, request)
            except RelayThrottled:
                if attempt == THROTTLED_TRIES - 1:
                    raise
                self.sleep(THROTTLED_FIRST_WAIT * 2**attempt * random.uniform(0.5, 1.0))  # noqa: S311 (a jitter)
        raise AssertionError("unreachable")  # pragma: no cover

    def _invoke_once(self, api_method: str, request: dict[str, Any]) -> dict[str, Any]:
        try:
            result = self.lambda_client.invoke(
                FunctionName=self.function_arn,
                InvocationType="RequestResponse",
                Payload=_dumps(request).encode(),
            )
            payload = result["Payload"].read()
        except ReadTimeoutError as exc:  # the relay may have made the call
            raise RelayAnswerLost(f"{api_method}: the hub's Slack relay timed out: {exc}") from exc
        except (ClientError, BotoCoreError) as exc:  # not invoked: nothing reached Slack
            throttled = isinstance(exc, ClientError) and exc.response["Error"]["Code"] == "TooManyRequestsException"
            refusal = RelayThrottled if throttled else SlackClientError
            raise refusal(f"{api_method}: the hub's Slack relay could not be invoked: {exc}") from exc
        if result.get("FunctionError"):
            raise RelayAnswerLost(f"{api_method}: the hub's Slack relay failed during the call: {payload[:200]!r}")
        answer = _loads(payload)
        if not (
            isinstance(answer.get("status"), int)
            and isinstance(answer.get("body"), dict)
            and isinstance(answer.get("headers"), dict)
        ):
            raise RelayAnswerLost(f"{api_method}: the hub's Slack relay answered {str(answer)[:200]!r}")
        return answer


def _present(values: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (values or {}).items() if v is not None}


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, separators=(",", ":"))


def _loads(payload: bytes) -> dict[str, Any]:
    try:
        answer = json.loads(payload)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}
