"""A small local stand-in for the Slack Web API and incoming webhooks, on 127.0.0.1.

It answers the methods costguard calls, the way Slack answers them (same JSON shapes, same error
codes), records every message, and can be told to fail (rate limits with Retry-After, outages) so
the real slack-sdk client's retries and costguard's fallbacks are exercised over HTTP.

Every message that reaches it (chat.postMessage, chat.update, the incoming webhook, a response_url) is
checked against Block Kit and Slack's limits (testing/blockkit.py) and refused as Slack refuses it:
`{"ok": false, "error": "invalid_blocks", "errors": [...], "response_metadata": {"messages": [...]}}`
from the Web API, HTTP 400 with the error's name from a webhook or a response_url. A message with blocks
and no `text` fallback is refused too (`no_text`): Slack would post it, costguard's rule is stricter.
Each refusal is kept in `refused`, so that a test fails even where the product carries on after one.

An edit replaces as Slack's does. chat.update: the text is the new `text`; the blocks are the new
`blocks`, and an update with `text` but no `blocks` removes the old blocks ("If the `text` argument is
provided and `blocks` are not provided, the `blocks` will be removed", docs.slack.dev chat.update).
What becomes of the old text when an update gives blocks and no `text`, Slack's docs do not say; the
stand-in refuses that update (the missing fallback above), so no test can lean on the old text staying.
A response_url's `replace_original` replaces the whole message with the one it carries.

A reply (`thread_ts`) is kept in its thread: conversations.replies reads the thread (its parent first),
conversations.history the conversation (a reply only if it was broadcast, as Slack shows it). A fault may
come after Slack took the call (`accepted`): the message is posted, and the answer is the error, or, for a
timeout (`status` 0), no answer before `hang_s` seconds, after which the connection is closed.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlparse

from testing import blockkit, local_http

BOT_TOKEN = "xoxb-costguard-demo-token"


@dataclass
class Posted:
    route: str  # "bot" or "webhook"
    channel: str
    text: str
    blocks: list[Any]
    ts: str
    direct: bool = False
    updated: bool = False
    thread_ts: str = ""  # a reply: its thread's parent
    broadcast: bool = False  # a reply shown in the conversation too


@dataclass(frozen=True)
class Refused:
    """A message the stand-in refused, as Slack would: where it was sent, and what Slack would say."""

    method: str  # "chat.postMessage", "chat.update", "webhook", "response_url"
    problems: tuple[blockkit.Problem, ...]
    payload: Mapping[str, Any]

    def __str__(self) -> str:
        said = "; ".join(str(p) for p in self.problems)
        return f"{self.method} refused ({self.problems[0].error}): {said}"


@dataclass
class Fault:
    status: int
    count: int
    retry_after: int | None = None
    error: str = ""
    accepted: bool = False  # Slack took the call first (a post is made), then answered with the fault
    hang_s: float = 0.0  # status 0: no answer for this long (the client's timeout), then the connection closed


# Slack's Web API tiers (https://docs.slack.dev/apis/web-api/rate-limits): calls a minute per method.
TIERS = {
    "users.list": 20,
    "users.lookupByEmail": 50,
    "usergroups.users.list": 20,
    "auth.test": 100,
    "conversations.open": 50,
    "conversations.history": 50,
    "conversations.replies": 50,
}
POSTS_PER_CHANNEL_SECONDS = 1.0  # chat.postMessage: "one message per second per channel"


class RateLimits:
    """Slack's limits, enforced: a call over its tier's minute, or a second post to a channel within a
    second, is answered 429 with the Retry-After that would let it through."""

    def __init__(self, tiers: dict[str, int] | None = None) -> None:
        self.tiers = TIERS if tiers is None else tiers
        self.calls: dict[str, list[float]] = {}
        self.posted: dict[str, float] = {}
        self.refused: dict[str, int] = {}

    def retry_after(self, method: str, channel: str, now: float) -> int | None:
        limit = self.tiers.get(method)
        if limit is not None:
            recent = [t for t in self.calls.get(method, []) if now - t < 60]
            self.calls[method] = recent
            if len(recent) >= limit:
                return self._refuse(method, 60 - (now - recent[0]))
            recent.append(now)
        if method == "chat.postMessage" and channel:
            last = self.posted.get(channel)
            if last is not None and now - last < POSTS_PER_CHANNEL_SECONDS:
                return self._refuse(method, POSTS_PER_CHANNEL_SECONDS - (now - last))
            self.posted[channel] = now
        return None

    def _refuse(self, method: str, wait: float) -> int:
        self.refused[method] = self.refused.get(method, 0) + 1
        return max(1, int(wait + 0.999))


@dataclass
class SlackStandIn(local_http.Served):
    users: dict[str, str] = field(default_factory=dict)  # email -> user id
    zones: dict[str, str] = field(default_factory=dict)  # user id -> the time zone the person set (`tz`)
    channels: set[str] = field(default_factory=set)  # empty: every channel exists
    token: str = BOT_TOKEN
    messages: list[Posted] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    filenames: dict[str, str] = field(default_factory=dict)  # file id -> the name it was uploaded as
    ephemeral: list[dict[str, Any]] = field(default_factory=list)  # replies only the clicker sees
    groups: dict[str, list[str]] = field(default_factory=dict)  # user group id -> member ids
    calls: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)  # messages Slack would refuse, in order
    said: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)  # every message and edit, as sent
    faults: dict[str, list[Fault]] = field(default_factory=dict)
    latency_s: float = 0.0  # slept before each answer (the benchmark's injected round trip)
    limits: RateLimits | None = None  # Slack's rate limits, enforced (None: none)
    clock: Callable[[], float] = time.time  # what a message's ts says (a simulation's own clock)
    _ts: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ------------------------------------------------------------------ control
    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, message_ts: str) -> str:
        """The response_url Slack gives a click on the message with this ts."""
        return f"{self.url}/actions/T000/{message_ts}"

    @property
    def webhook_url(self) -> str:
        return f"{self.url}/services/T000/B000/demo"

    def fail(
        self,
        method: str,
        status: int,
        *,
        count: int = 1,
        retry_after: int | None = None,
        error: str = "",
        accepted: bool = False,
        hang_s: float = 0.0,
    ) -> None:
        """The next `count` calls of `method` ("chat.postMessage", "webhook", ...) fail this way; `accepted`:
        once Slack made them (a 5xx, or with `status` 0 a timeout of `hang_s` seconds, after the post)."""
        self.faults.setdefault(method, []).append(Fault(status, count, retry_after, error, accepted, hang_s))

    def messages_to(self, channel: str) -> list[Posted]:
        return [m for m in self.messages if m.channel == channel]

    def assert_all_accepted(self) -> None:
        """Fail (AssertionError) naming every message Slack would have refused, if any was."""
        assert not self.refused, "Slack would refuse:\n" + "\n".join(str(r) for r in self.refused)

    def _refuse(self, method: str, payload: Mapping[str, Any]) -> list[blockkit.Problem]:
        """What Slack would refuse in this message (nothing: an empty list), kept in `refused` if anything. Every
        message, edit and reply passes here: each is kept in `said`, as sent (`messages` keeps only the last edit)."""
        with self._lock:
            self.said.append((method, payload))
        found = blockkit.problems(payload)
        if found:
            with self._lock:
                self.refused.append(Refused(method, tuple(found), payload))
        return found

    # ------------------------------------------------------------------ HTTP
    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        parsed = urlparse(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length) if length else b""
        if parsed.path.startswith("/services/"):
            method = "webhook"
        elif parsed.path.startswith("/upload/"):
            method = "upload"
        elif parsed.path.startswith("/actions/"):
            method = "response_url"
        else:
            method = parsed.path.removeprefix("/api/")
        with self._lock:
            self.calls.append(method)
            fault = self._take_fault(method)
        if self.latency_s:
            time.sleep(self.latency_s)
        if fault is not None and not fault.accepted:
            headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else {}
            body: Any = {"ok": False, "error": fault.error or ("ratelimited" if fault.status == 429 else "fatal_error")}
            self._reply(request, fault.status, body if method != "webhook" else "error", headers)
            return
        if method == "webhook":
            payload = json.loads(raw or b"{}")
            refused = self._refuse("webhook", payload)
            if refused:  # a webhook answers a refusal as HTTP 400, the error's name its body
                self._reply(request, 400, refused[0].error)
                return
            self._record("webhook", "webhook", payload)
            self._reply(request, 200, "ok")
            return
        if method == "response_url":
            body = json.loads(raw or b"{}")
            refused = [] if body.get("delete_original") else self._refuse("response_url", body)
            if refused:
                self._reply(request, 400, refused[0].error)
                return
            self._respond(parsed.path.rsplit("/", 1)[-1], body)
            self._reply(request, 200, "ok")
            return
        if method == "upload":
            with self._lock:
                file_id = parsed.path.rsplit("/", 1)[-1]
                self.files.append({"id": file_id, "bytes": raw, "filename": self.filenames.get(file_id, "")})
            self._reply(request, 200, "OK - uploaded")
            return
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            self._reply(request, 200, {"ok": False, "error": "invalid_auth"})
            return
        args = self._args(request, parsed.query, raw)
        if self.limits is not None:
            with self._lock:
                wait = self.limits.retry_after(method, str(args.get("channel", "")), time.monotonic())
            if wait is not None:
                self._reply(request, 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)})
                return
        answer = self._api(method, args)
        if fault is not None:  # taken, and then the answer is lost
            self._lost(request, method, fault)
            return
        self._reply(request, 200, answer)

    def _lost(self, request: BaseHTTPRequestHandler, method: str, fault: Fault) -> None:
        """The answer to a call Slack made: an error, or (status 0) none before the client gave up."""
        if fault.status:
            self._reply(request, fault.status, {"ok": False, "error": fault.error or "fatal_error"})
            return
        time.sleep(fault.hang_s)
        request.close_connection = True

    def _respond(self, message_ts: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            if body.get("replace_original"):
                for message in self.messages:
                    if message.ts == message_ts:  # the whole message, replaced by the one the body carries
                        message.text = str(body.get("text", ""))
                        message.blocks = list(body.get("blocks") or [])
                        message.updated = True
                        return
            self.ephemeral.append({"message_ts": message_ts, **body})

    def _take_fault(self, method: str) -> Fault | None:
        queue = self.faults.get(method) or []
        if not queue:
            return None
        fault = queue[0]
        fault.count -= 1
        if fault.count <= 0:
            queue.pop(0)
        return fault

    @staticmethod
    def _args(request: BaseHTTPRequestHandler, query: str, raw: bytes) -> dict[str, Any]:
        args: dict[str, Any] = {k: v[0] for k, v in parse_qs(query).items()}
        content_type = request.headers.get("Content-Type", "")
        if raw and "json" in content_type:
            args.update(json.loads(raw))
        elif raw:
            args.update({k: v[0] for k, v in parse_qs(raw.decode()).items()})
        for key in ("blocks", "files"):
            if isinstance(args.get(key), str):
                args[key] = json.loads(args[key])
        return args

    def _api(self, method: str, args: Mapping[str, Any]) -> dict[str, Any]:
        if method == "users.lookupByEmail":
            user = self.users.get(str(args.get("email", "")).lower())
            if user is None:
                return {"ok": False, "error": "users_not_found"}
            return {"ok": True, "user": self._user(user, str(args["email"]))}
        if method == "users.info":
            email = next((e for e, uid in self.users.items() if uid == args.get("user")), None)
            if email is None:
                return {"ok": False, "error": "user_not_found"}
            return {"ok": True, "user": self._user(str(args["user"]), email)}
        if method == "users.list":  # 200 a page by default, a cursor in response_metadata, as Slack pages it
            members = [self._user(uid, email) for email, uid in sorted(self.users.items())]
            start, limit = int(str(args.get("cursor") or 0)), int(str(args.get("limit") or 200))
            following = str(start + limit) if start + limit < len(members) else ""
            return {
                "ok": True,
                "members": members[start : start + limit],
                "response_metadata": {"next_cursor": following},
            }
        if method == "chat.postMessage":
            channel = str(args.get("channel", ""))
            direct = channel in self.users.values()
            if not direct and self.channels and channel not in self.channels:
                return {"ok": False, "error": "channel_not_found"}
            refused = self._refuse(method, args)
            if refused:
                return blockkit.refusal(refused)
            posted = self._record("bot", channel, args, direct=direct)
            return {"ok": True, "channel": channel, "ts": posted.ts, "message": {"text": posted.text}}
        if method == "chat.update":
            refused = self._refuse(method, args)
            if refused:
                return blockkit.refusal(refused)
            channel = str(args.get("channel", ""))  # a direct message's: its user's, or its DM channel (D + user)
            where = channel[1:] if channel.startswith("D") and channel[1:] in self.users.values() else channel
            for message in self.messages:
                if message.ts == args.get("ts") and message.channel == where:
                    # The text is replaced; the blocks too, and without `blocks` (the text given) removed.
                    message.text = str(args.get("text", ""))
                    message.blocks = list(args.get("blocks") or [])
                    message.updated = True
                    return {"ok": True, "channel": message.channel, "ts": message.ts, "text": message.text}
            return {"ok": False, "error": "message_not_found"}
        if method == "files.getUploadURLExternal":
            file_id = f"F{len(self.files) + 1:06d}"
            self.filenames[file_id] = str(args.get("filename", ""))
            return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            channel = str(args.get("channel_id", ""))
            for entry in args.get("files") or []:
                for f in self.files:
                    if f["id"] == entry.get("id"):
                        f.update(
                            title=entry.get("title", ""),
                            channel=channel,
                            ts=f"{int(self.clock())}.{next(self._ts):06d}",
                        )
            return {"ok": True, "files": [{"id": e.get("id")} for e in args.get("files") or []]}
        if method == "conversations.open":  # a direct message's channel: D + the user's id, here
            user = str(args.get("users", ""))
            if user not in self.users.values():
                return {"ok": False, "error": "user_not_found"}
            return {"ok": True, "channel": {"id": f"D{user}"}}
        if method == "conversations.history":
            return self._history(args)
        if method == "conversations.replies":
            return self._replies(args)
        if method == "usergroups.users.list":
            group = self.groups.get(str(args.get("usergroup", "")))
            if group is None:
                return {"ok": False, "error": "no_such_subteam"}
            return {"ok": True, "users": group}
        if method == "auth.test":
            return {"ok": True, "user_id": "UCOSTGUARD", "team": "demo"}
        return {"ok": False, "error": "unknown_method"}

    def _user(self, user_id: str, email: str) -> dict[str, Any]:
        """A user object as Slack returns it: `tz` where the person set a zone (Slack omits none: absent here)."""
        user: dict[str, Any] = {"id": user_id, "profile": {"email": email}}
        if self.zones.get(user_id):
            user["tz"] = self.zones[user_id]
        return user

    def _history(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A conversation's messages since `oldest`, newest first, a page at a time (as Slack pages it)."""
        channel = str(args.get("channel", ""))
        where = channel[1:] if channel.startswith("D") and channel[1:] in self.users.values() else channel
        if self.channels and where not in self.channels and where not in self.users.values():
            return {"ok": False, "error": "channel_not_found"}
        oldest = float(str(args.get("oldest") or 0))
        with self._lock:
            found = [
                m
                for m in self.messages
                if m.channel == where and float(m.ts) >= oldest and (not m.thread_ts or m.broadcast)
            ]
        found.sort(key=lambda m: float(m.ts), reverse=True)
        start, limit = int(str(args.get("cursor") or 0)), int(str(args.get("limit") or 100))
        following = str(start + limit) if start + limit < len(found) else ""
        page = [
            {"type": "message", "ts": m.ts, "text": m.text, "blocks": m.blocks} for m in found[start : start + limit]
        ]
        return {
            "ok": True,
            "messages": page,
            "has_more": bool(following),
            "response_metadata": {"next_cursor": following},
        }

    def _replies(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """A thread's messages, its parent first and then its replies since `oldest`, oldest first, a page at a
        time."""
        channel, parent = str(args.get("channel", "")), str(args.get("ts", ""))
        where = channel[1:] if channel.startswith("D") and channel[1:] in self.users.values() else channel
        oldest = float(str(args.get("oldest") or 0))
        with self._lock:
            head = [m for m in self.messages if m.channel == where and m.ts == parent]
            if not head:
                return {"ok": False, "error": "thread_not_found"}
            replies = [m for m in self.messages if m.channel == where and m.thread_ts == parent]
        found = head + sorted((m for m in replies if float(m.ts) >= oldest), key=lambda m: float(m.ts))
        start, limit = int(str(args.get("cursor") or 0)), int(str(args.get("limit") or 100))
        following = str(start + limit) if start + limit < len(found) else ""
        page = [
            {"type": "message", "ts": m.ts, "thread_ts": parent, "text": m.text, "blocks": m.blocks}
            for m in found[start : start + limit]
        ]
        return {
            "ok": True,
            "messages": page,
            "has_more": bool(following),
            "response_metadata": {"next_cursor": following},
        }

    def _record(self, route: str, channel: str, payload: Mapping[str, Any], *, direct: bool = False) -> Posted:
        with self._lock:
            ts = f"{int(self.clock())}.{next(self._ts):06d}"
            posted = Posted(route, channel, str(payload.get("text", "")), list(payload.get("blocks") or []), ts, direct)
            posted.thread_ts = str(payload.get("thread_ts") or "")
            posted.broadcast = str(payload.get("reply_broadcast", "")).lower() in ("true", "1")
            self.messages.append(posted)
            return posted

    @staticmethod
    def _reply(
        request: BaseHTTPRequestHandler, status: int, body: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        request.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            request.send_header(key, value)
        request.end_headers()
        request.wfile.write(data)
