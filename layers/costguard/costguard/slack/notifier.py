"""The one way costguard talks to Slack.

Routes, in order: the bot token (chat.postMessage to a channel, or to a user found with
users.lookupByEmail for a direct message); the incoming webhook as a channel-only fallback for a bot that
cannot post at all (no token, or Slack refuses it the channel or the token), never for a reply in a
thread. Rate limits (HTTP 429) are retried after Retry-After, connection errors and 5xx a few times; but a
post whose outcome is unknown (a timeout, a 5xx or a connection dropped after it was sent: Slack may have
posted it) is never sent again blind: it is looked for in the conversation's history (or the thread's
replies), by its block ids, and posted again only if it is not there. When every route has failed,
SlackDeliveryError is raised so that the invocation fails and is retried: a notification is never dropped
silently.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.client import RemoteDisconnected
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.web import SlackResponse
from slack_sdk.webhook import WebhookClient, WebhookResponse

from costguard.core.errors import ConfigError, SlackDeliveryError
from costguard.core.observability import logger, traced
from costguard.slack.blocks import Message, Mrkdwn, context, person
from costguard.slack.pace import PER_CHANNEL_SECONDS, ChannelPace
from costguard.slack.people import GONE_USER, KnownUsers, SlackPeople


@dataclass(frozen=True)
class SlackCredentials:
    """The content of the Slack secret (a JSON object in Secrets Manager)."""

    bot_token: str = field(default="", repr=False)
    webhook_url: str = field(default="", repr=False)
    signing_secret: str = field(default="", repr=False)

    @classmethod
    def from_secret(cls, value: Any) -> SlackCredentials:
        if isinstance(value, (str, bytes)):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"the Slack secret is not JSON: {exc.msg}") from None
        if not isinstance(value, Mapping):
            raise ConfigError("the Slack secret must be a JSON object with bot_token and/or webhook_url")
        creds = cls(
            bot_token=str(value.get("bot_token") or "").strip(),
            webhook_url=str(value.get("webhook_url") or "").strip(),
            signing_secret=str(value.get("signing_secret") or "").strip(),
        )
        if not creds.bot_token and not creds.webhook_url:
            raise ConfigError("the Slack secret has neither bot_token nor webhook_url")
        if creds.bot_token and not creds.bot_token.startswith("xoxb-"):
            raise ConfigError("the Slack secret's bot_token is not a bot token (xoxb-...)")
        return creds


@dataclass(frozen=True)
class Delivery:
    """Where a message went. `ts` identifies a bot message for later updates; webhooks have none."""

    route: str
    channel: str
    ts: str = ""
    direct: bool = False


class TracedWebClient(WebClient):
    """slack-sdk's client, each Web API call (its retries included) a subsegment of the invocation's trace,
    named by its method ("Slack chat.postMessage"): X-Ray's botocore patch sees only the AWS calls."""

    def api_call(self, api_method: str, **kwargs: Any) -> SlackResponse:
        with traced(f"Slack {api_method}"):
            return super().api_call(api_method, **kwargs)


class TracedWebhookClient(WebhookClient):
    """An incoming webhook or an interaction's response_url, each post a subsegment of the trace."""

    def __init__(self, url: str, *, name: str = "Slack webhook", **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.name = name

    def send_dict(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> WebhookResponse:
        with traced(self.name):
            return super().send_dict(body, headers)


class TimeBoundRateLimitHandler(RateLimitErrorRetryHandler):
    """Waits out a 429's Retry-After only while the invocation has the time: otherwise the call fails at
    once, and the caller retries later (the next sweep, the queue, the scheduler) instead of timing out."""

    def __init__(self, max_retry_count: int, time_left: Callable[[], float]) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.time_left = time_left

    def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
        if not super()._can_retry(state=state, request=request, response=response, error=error):
            return False
        header = next((v for k, v in (response.headers or {}).items() if k.lower() == "retry-after"), ["1"])
        try:
            wait = float(header[0] if isinstance(header, list) else header)
        except ValueError:
            wait = 1.0
        return wait + 1 + RESERVE_SECONDS < self.time_left()


class NotAPostRetryHandler(ConnectionErrorRetryHandler):
    """Connection errors retried, but for a post that may have reached Slack (the connection reset or dropped
    once it was sent): the notifier looks for it first (`SlackNotifier.post`)."""

    def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
        if _is_post(request) and error is not None and _maybe_delivered(error):
            return False
        return super()._can_retry(state=state, request=request, response=response, error=error)


class NotAPostServerErrorRetryHandler(ServerErrorRetryHandler):
    """5xx retried, but for a post: Slack may have made it before it failed (see `NotAPostRetryHandler`)."""

    def _can_retry(self, *, state: Any, request: Any, response: Any = None, error: Any = None) -> bool:
        return not _is_post(request) and super()._can_retry(
            state=state, request=request, response=response, error=error
        )


def _is_post(request: Any) -> bool:
    return str(getattr(request, "url", "")).rstrip("/").endswith("chat.postMessage")


# What an invocation keeps for itself after a Slack wait: recording what it delivered.
RESERVE_SECONDS = 10.0
# A lost post is looked for among the messages since it was leased: a few pages of the newest.
HISTORY_PAGE = 200
HISTORY_PAGES = 5
# A post whose outcome is unknown: looked for, then sent again if it is not there, this many times in all.
POST_TRIES = 3
# Slack's answers that say the bot cannot post to this channel at all (docs.slack.dev, chat.postMessage
# "Errors"): the incoming webhook, bound to its own channel, may still.
CANNOT_POST = frozenset(
    {
        "not_in_channel",
        "channel_not_found",
        "is_archived",
        "restricted_action",
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "missing_scope",
        "no_permission",
        "ekm_access_denied",
        "team_access_not_granted",
    }
)
_USER = re.compile(r"^[UW][A-Z0-9]{2,20}$")


def _retry_handlers(rate_limit_retries: int, time_left: Callable[[], float] | None = None) -> list[Any]:
    rate_limit = (
        TimeBoundRateLimitHandler(rate_limit_retries, time_left)
        if time_left is not None
        else RateLimitErrorRetryHandler(max_retry_count=rate_limit_retries)
    )
    return [NotAPostRetryHandler(max_retry_count=2), rate_limit, NotAPostServerErrorRetryHandler(max_retry_count=2)]


class SlackNotifier:
    def __init__(
        self,
        credentials: SlackCredentials,
        *,
        base_url: str = "",
        web_client: WebClient | None = None,
        webhook_client: WebhookClient | None = None,
        rate_limit_retries: int = 3,
        timeout: int = 10,
        time_left: Callable[[], float] | None = None,
        known_users: KnownUsers | None = None,
        channel_pace: float = PER_CHANNEL_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.web = web_client
        if self.web is None and credentials.bot_token:
            kwargs: dict[str, Any] = {"base_url": base_url} if base_url else {}
            self.web = TracedWebClient(
                token=credentials.bot_token,
                timeout=timeout,
                retry_handlers=_retry_handlers(rate_limit_retries, time_left),
                **kwargs,
            )
        self.webhook = webhook_client
        if self.webhook is None and credentials.webhook_url:
            self.webhook = TracedWebhookClient(
                credentials.webhook_url, timeout=timeout, retry_handlers=_retry_handlers(rate_limit_retries, time_left)
            )
        self.people = SlackPeople(self.web, known_users)
        self.pace = ChannelPace(channel_pace, clock=clock, sleep=sleep)
        self._groups: dict[str, set[str]] = {}

    def post(self, channel: str, message: Message, *, thread_ts: str = "", broadcast: bool = False) -> Delivery:
        """Post to a channel by the bot, else (a bot that cannot post at all) by the webhook; raise if neither
        delivered. With `thread_ts` (the ts of a message the bot posted there), as a reply in that message's
        thread, never by the webhook; `broadcast`: shown in the conversation too (a stop notice under its
        warning), not only in the thread (a digest's replies). A post whose outcome is unknown is looked for
        before it is sent again (`_sent`)."""
        failures: list[str] = []
        cannot_post = self.web is None
        if self.web is not None:
            try:
                return self._sent(channel, message, thread_ts=thread_ts, broadcast=broadcast)
            except (SlackApiError, SlackClientError, URLError, OSError) as exc:
                failures.append(f"bot: {_describe(exc)}")
                logger.warning("slack bot post failed", channel=channel, error=_describe(exc))
                cannot_post = isinstance(exc, SlackApiError) and exc.response.get("error") in CANNOT_POST
        if self.webhook is not None and cannot_post and not thread_ts:
            try:
                return self._post_webhook(message)
            except (SlackClientError, URLError, OSError, SlackDeliveryError) as exc:
                failures.append(f"webhook: {_describe(exc)}")
        why = "; ".join(failures or ["no Slack route"])
        raise SlackDeliveryError(f"could not post to {channel}: {why}")

    def _sent(self, to: str, message: Message, *, thread_ts: str = "", broadcast: bool = False) -> Delivery:
        """The bot's post, made once: a post whose answer is lost (a timeout, a 5xx, a connection dropped after
        it was sent) is looked for among the conversation's newest messages (or the thread's replies) by its
        block ids, and sent again only if it is not there. SlackDeliveryError(maybe_delivered) when Slack's
        history cannot say (or the message has no block id to find it by): the caller must not post it again
        blind. Raises what Slack answered to a post it refused."""
        assert self.web is not None
        markers = {
            str(b["block_id"]) for b in message.slack_blocks() if b.get("block_id") and b.get("type") != "actions"
        }
        thread = _thread(thread_ts, broadcast=broadcast)
        for attempt in range(1, POST_TRIES + 1):
            self.pace.wait(to)
            try:
                response = self.web.chat_postMessage(
                    channel=to, text=message.text, blocks=message.slack_blocks(), **thread
                )
                channel = str(response.get("channel") or to)
                return Delivery("bot", channel, str(response.get("ts") or ""))
            except (SlackApiError, SlackClientError, URLError, OSError) as exc:
                if not _maybe_delivered(exc):
                    raise
                lost = exc
            finally:
                self.pace.answered(to)
            logger.warning("slack post's outcome unknown: looked for", to=to, error=_describe(lost), attempt=attempt)
            if not markers:
                raise SlackDeliveryError(
                    f"could not post to {to}, it may have gone: {_describe(lost)}", maybe_delivered=True
                ) from lost
            # The newest messages hold it if it went out (or, a reply, its thread): read from its start, not from
            # this machine's clock, which need not agree with Slack's.
            since = float(thread_ts) if thread_ts else 0.0
            try:
                found = posted(
                    self.web, to, since, markers, thread_ts=thread_ts, pages=1 if not thread_ts else HISTORY_PAGES
                )
            except SlackDeliveryError as unread:
                raise SlackDeliveryError(
                    f"could not post to {to}, it may have gone: {_describe(lost)}; {unread}", maybe_delivered=True
                ) from lost
            if found:
                return next(iter(found.values()))
        raise SlackDeliveryError(f"could not post to {to} in {POST_TRIES} tries: {_describe(lost)}")

    def update(self, channel: str, ts: str, message: Message) -> Delivery:
        """Edit a message the bot posted (chat.update: the channel id and ts its post returned).
        SlackDeliveryError when it cannot: no bot token, a webhook's message (no ts), or Slack refused
        (the message deleted, the channel gone); the caller decides what to post instead."""
        if self.web is None or not ts:
            why = "no bot token" if self.web is None else "the message has no ts (posted by the webhook)"
            raise SlackDeliveryError(f"cannot edit a message in {channel}: {why}")
        try:
            response = self.web.chat_update(channel=channel, ts=ts, text=message.text, blocks=message.slack_blocks())
        except (SlackApiError, SlackClientError, URLError, OSError) as exc:
            raise _edit_refused(exc, channel, ts) from exc
        return Delivery("bot", str(response.get("channel") or channel), str(response.get("ts") or ts))

    def send_to_owner(self, email: str | None, message: Message, *, fallback_channel: str, owner: str) -> Delivery:
        """Direct-message the owner; if Slack does not know them, post to the fallback channel naming them (none:
        a question for the owner alone, which raises SlackDeliveryError where they cannot be reached directly)."""
        user_id = self.people.user_id(email) if email else None
        if user_id is not None and self.web is not None:
            try:
                # A direct message whose outcome is unknown is looked for in the DM's history first (`_sent`);
                # one Slack's history cannot confirm raises (maybe delivered): the channel would make a second
                # copy, and the caller retries the direct message later instead.
                return replace(self._sent(user_id, message), channel=user_id, direct=True)
            except (SlackApiError, SlackClientError, URLError, OSError) as exc:
                logger.warning("slack direct message failed", owner=owner, error=_describe(exc))
                if email and isinstance(exc, SlackApiError) and exc.response.get("error") in GONE_USER:
                    self.people.forget(email)  # the id reaches nobody now: asked again next time
        if not fallback_channel:
            raise SlackDeliveryError(f"the owner ({owner or 'unknown'}) could not be reached directly")
        fallback = Message(message.text, (*message.blocks, context(not_reached(owner, known=user_id is not None))))
        return self.post(fallback_channel, fallback)

    def find(self, to: str, since: float, markers: Iterable[str], *, thread_ts: str = "") -> dict[str, Delivery]:
        """Which of these block ids a message posted to `to` since `since` carries (see `posted`); with
        `thread_ts`, among the replies in that message's thread."""
        if self.web is None:
            raise SlackDeliveryError("no bot token: Slack's history cannot be read")
        return posted(self.web, to, since, set(markers), thread_ts=thread_ts)

    def upload_file(self, channel: str, content: bytes, *, filename: str, title: str, comment: str = "") -> str:
        """Upload a file to a channel with files_upload_v2 (needs files:write and a channel ID); its file id."""
        if self.web is None:
            raise SlackDeliveryError("uploading a file needs a bot token")
        try:
            response = self.web.files_upload_v2(
                channel=channel, content=content, filename=filename, title=title, initial_comment=comment or None
            )
        except (SlackApiError, SlackClientError, URLError, OSError) as exc:
            raise SlackDeliveryError(f"could not upload {filename} to {channel}: {_describe(exc)}") from exc
        files = response.get("files") or [response.get("file") or {}]
        return str(files[0].get("id", ""))

    def user_id_for(self, email: str, *, strict: bool = False) -> str | None:
        """The Slack user id of an email, or None if Slack does not know it (kept, see SlackPeople). With
        `strict`, a lookup that failed (rate limit after retries, outage) raises SlackDeliveryError
        instead of reading as "no such user"."""
        return self.people.user_id(email, strict=strict)

    def zone_of(self, user_id: str) -> str:
        """A person's own time zone in Slack (IANA), or "" when Slack does not say (see SlackPeople.zone)."""
        return self.people.zone(user_id)

    def resolve(self, emails: Iterable[str]) -> None:
        """Learn the Slack ids of many owners before messaging them (in bulk when many are unknown)."""
        self.people.resolve(emails)

    def group_members(self, group_id: str) -> set[str]:
        """Members of a Slack user group (usergroups:read scope); empty if it cannot be read."""
        if group_id not in self._groups:
            members: set[str] = set()
            if self.web is not None:
                try:
                    members = set(self.web.usergroups_users_list(usergroup=group_id).get("users") or [])
                except (SlackApiError, SlackClientError, URLError, OSError) as exc:
                    logger.warning("slack user group unreadable", group=group_id, error=_describe(exc))
            self._groups[group_id] = members
        return self._groups[group_id]

    def _post_webhook(self, message: Message) -> Delivery:
        assert self.webhook is not None
        response = self.webhook.send(text=message.text, blocks=message.slack_blocks())
        if response.status_code != 200:
            raise SlackDeliveryError(f"webhook answered HTTP {response.status_code}: {response.body[:200]}")
        return Delivery("webhook", "webhook")


def not_reached(owner: str, *, known: bool) -> Mrkdwn:
    """Why an owner's message is in the channel: named as a person (never by address), and whether Slack knows them."""
    who = person(owner) or Mrkdwn("its owner")
    why = "could not be reached by direct message" if known else "has no Slack account costguard can find"
    return who + Mrkdwn(f" {why}, so this is here.")


def _maybe_delivered(exc: BaseException) -> bool:
    """A timeout, a server error, or a connection dropped once the request was sent can come after Slack took
    the message; a refusal cannot, nor a connection never made."""
    if isinstance(exc, SlackApiError):
        return bool(exc.response.status_code >= 500)
    if isinstance(exc, URLError) and isinstance(exc.reason, BaseException):
        return _maybe_delivered(exc.reason)
    lost = (TimeoutError, ConnectionResetError, RemoteDisconnected, BrokenPipeError)
    return isinstance(exc, lost) or "timed out" in str(exc).lower()


# chat.update's answers that the same edit later would get again (docs.slack.dev, chat.update "Errors"): the
# message or its channel is gone or closed to edits, or the message itself is refused.
UNEDITABLE = frozenset(
    {
        "message_not_found",
        "channel_not_found",
        "cant_update_message",
        "edit_window_closed",
        "is_archived",
        "is_inactive",
        "msg_too_long",
        "invalid_blocks",
        "no_text",
    }
)


def _edit_refused(exc: BaseException, channel: str, ts: str) -> SlackDeliveryError:
    logger.warning("slack update failed", channel=channel, error=_describe(exc))
    lasting = isinstance(exc, SlackApiError) and exc.response.get("error") in UNEDITABLE
    return SlackDeliveryError(f"could not edit {ts} in {channel}: {_describe(exc)}", lasting=lasting)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"{exc.response.status_code} {exc.response.get('error')}"
    return f"{type(exc).__name__}: {exc}"


def post_response(url: str, body: Mapping[str, Any]) -> None:
    """Answer an interaction through its response_url (update the message, or an ephemeral reply)."""
    client = TracedWebhookClient(url, name="Slack response_url", timeout=10, retry_handlers=_retry_handlers(3))
    response = client.send_dict(dict(body))
    if response.status_code != 200:
        raise SlackDeliveryError(f"response_url answered HTTP {response.status_code}: {response.body[:200]}")


def posted(
    web: WebClient, to: str, since: float, wanted: set[str], *, thread_ts: str = "", pages: int = HISTORY_PAGES
) -> dict[str, Delivery]:
    """Which of these block ids a message posted to `to` (a user id: their direct messages with the bot;
    or a channel id) since `since` (epoch seconds) carries, with the message's ts: proof that a post whose
    answer was lost did go out. Reads conversations.history (channels:history, groups:history or
    im:history, as the conversation is; conversations.open, im:write, finds a user's DM channel), or, with
    `thread_ts`, conversations.replies (the same scopes): the history holds no thread's replies (and the
    thread's parent, which the replies begin with, is not one of them).
    SlackDeliveryError when it cannot be read: the caller cannot know, and posts again."""
    found: dict[str, Delivery] = {}
    try:
        direct = bool(_USER.match(to))
        channel = str(web.conversations_open(users=to)["channel"]["id"]) if direct else to
        cursor = ""
        for _ in range(pages):
            if thread_ts:
                page: Any = web.conversations_replies(
                    channel=channel, ts=thread_ts, oldest=f"{since:.6f}", limit=HISTORY_PAGE, cursor=cursor or None
                )
            else:
                page = web.conversations_history(
                    channel=channel, oldest=f"{since:.6f}", limit=HISTORY_PAGE, cursor=cursor or None
                )
            for message in page.get("messages") or []:
                if thread_ts and message.get("ts") == thread_ts:
                    continue
                for block in message.get("blocks") or []:
                    if block.get("block_id") in wanted:
                        found[block["block_id"]] = Delivery("bot", channel, str(message.get("ts") or ""), direct)
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor or len(found) == len(wanted):
                break
    except (SlackApiError, SlackClientError, URLError, OSError, KeyError, TypeError) as exc:
        logger.warning("slack history unreadable", to=to, error=_describe(exc))
        raise SlackDeliveryError(f"could not read what was posted to {to}: {_describe(exc)}") from exc
    return found


def _thread(thread_ts: str, *, broadcast: bool) -> dict[str, Any]:
    """chat.postMessage's arguments for a reply: none for a message of its own."""
    if not thread_ts:
        return {}
    return {"thread_ts": thread_ts, "reply_broadcast": True} if broadcast else {"thread_ts": thread_ts}
