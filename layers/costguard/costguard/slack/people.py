"""Who an owner is to Slack: their user id, found by email once and kept.

Ids are kept three ways: in this container's memory; in the state table, through `KnownUsers`, so
every function (and every container) finds what one of them learned, for 30 days; and, when many
owners are unknown at once, resolved in bulk with `users.list` (Slack's Tier 2, 200 members a page)
instead of one `users.lookupByEmail` each (Tier 3, about 50 a minute: 500 owners would take ten). One
email is never looked up twice at once: threads asking for it wait for the first answer. An id Slack
no longer knows (the person left) is forgotten, and asked again next time.

A person's time zone (what "tomorrow 09:00" means to them) comes with their id at no cost where Slack
answers with the whole user (users.lookupByEmail, users.list); otherwise one users.info (Tier 4) asks
for it when a keep needs it. Zones are kept in the container's memory: only a click needs one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from costguard.core.errors import SlackDeliveryError
from costguard.core.observability import logger

# Slack's own error codes that mean "this person is not in the workspace under that email".
NO_SUCH_USER = {"users_not_found", "user_not_found"}
# What chat.postMessage answers for a user id that no longer reaches anyone.
GONE_USER = {"channel_not_found", "user_not_found", "user_disabled", "account_inactive", "cannot_dm_bot"}
BULK_AFTER = 20  # this many unknown owners at once: one users.list walk instead of a lookup each
PAGE = 200  # members a users.list page (Slack recommends no more than 200)


class KnownUsers(Protocol):
    """Slack ids kept between invocations (the state table)."""

    def get(self, email: str) -> tuple[bool, str | None]: ...  # (known, id or None for "not in Slack")
    def get_many(self, emails: Iterable[str]) -> dict[str, str | None]: ...  # the known ones only
    def put(self, email: str, user_id: str | None) -> None: ...
    def put_many(self, ids: Mapping[str, str | None]) -> None: ...
    def forget(self, email: str) -> None: ...


class SlackPeople:
    def __init__(self, web: WebClient | None, known: KnownUsers | None = None) -> None:
        self.web = web
        self.known = known
        self._ids: dict[str, str | None] = {}
        self._zones: dict[str, str] = {}  # user id -> IANA zone ("" when Slack did not say)
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def user_id(self, email: str, *, strict: bool = False) -> str | None:
        """The Slack id of an email, or None if Slack does not know it. With `strict`, a lookup that failed
        (rate limit after retries, outage) raises SlackDeliveryError instead of reading as "no such user"."""
        if email in self._ids:
            return self._ids[email]
        with self._lock(email):  # one lookup of an email at a time; the others wait for its answer
            if email in self._ids:
                return self._ids[email]
            if self.known is not None:
                found, user_id = self.known.get(email)
                if found:
                    self._ids[email] = user_id
                    return user_id
            return self._ask(email, strict=strict)

    def resolve(self, emails: Iterable[str]) -> None:
        """Learn many ids before they are needed: from the table (in batches), then, when many are still
        unknown, from one walk of users.list. Anything that fails here is left to the one-by-one lookup."""
        wanted = list(dict.fromkeys(e for e in emails if e and e not in self._ids))
        kept = self.known.get_many(wanted) if self.known is not None and wanted else {}
        self._ids.update(kept)
        unknown = [e for e in wanted if e not in kept]
        if len(unknown) < BULK_AFTER or self.web is None:
            return
        try:
            members = self._members()
        except (SlackApiError, SlackClientError, URLError, OSError) as exc:
            logger.warning("slack users.list failed; owners are looked up one by one", error=str(exc)[:200])
            return
        learned = {email: members.get(email.lower()) for email in unknown}
        self._ids.update(learned)
        if self.known is not None:
            self.known.put_many(learned)

    def zone(self, user_id: str) -> str:
        """The time zone a person set in Slack (users.info `tz`), or "" when Slack does not say or cannot be
        asked: the caller then reads the team's clock (logged)."""
        if user_id in self._zones:
            return self._zones[user_id]
        if self.web is None:
            return ""
        try:
            found = self.web.users_info(user=user_id)
        except (SlackApiError, SlackClientError, URLError, OSError) as exc:
            logger.warning("slack user's time zone unreadable: the team's is used", user=user_id, error=str(exc)[:200])
            return ""
        self._learn_zone(found.get("user") or {})
        return self._zones.get(user_id, "")

    def _learn_zone(self, user: Any) -> None:
        if user.get("id"):
            self._zones[str(user["id"])] = str(user.get("tz") or "")

    def forget(self, email: str) -> None:
        self._ids.pop(email, None)
        if self.known is not None:
            self.known.forget(email)

    def _members(self) -> dict[str, str]:
        assert self.web is not None
        members: dict[str, str] = {}
        cursor = ""
        while True:
            page: Any = self.web.users_list(limit=PAGE, cursor=cursor) if cursor else self.web.users_list(limit=PAGE)
            for member in page.get("members") or []:
                email = str((member.get("profile") or {}).get("email") or "").lower()
                if email and not member.get("deleted") and member.get("id"):
                    members[email] = str(member["id"])
                    if member.get("tz"):
                        self._learn_zone(member)
            cursor = str((page.get("response_metadata") or {}).get("next_cursor") or "")
            if not cursor:
                return members

    def _ask(self, email: str, *, strict: bool) -> str | None:
        if self.web is None:
            return None
        try:
            response = self.web.users_lookupByEmail(email=email)
        except SlackApiError as exc:
            if exc.response.get("error") in NO_SUCH_USER:
                self._learn(email, None)
                return None
            # Anything else (missing users:read.email scope, rate limit after retries): fall back to the
            # channel for this message, but keep nothing, so the next message tries again.
            self._failed(email, f"{exc.response.status_code} {exc.response.get('error')}", strict, exc)
            return None
        except (SlackClientError, URLError, OSError) as exc:
            self._failed(email, f"{type(exc).__name__}: {exc}", strict, exc)
            return None
        user = response.get("user") or {}
        user_id = str(user.get("id") or "") or None
        if user.get("tz"):
            self._learn_zone(user)
        self._learn(email, user_id)
        return user_id

    def _failed(self, email: str, why: str, strict: bool, exc: BaseException) -> None:
        logger.warning("slack user lookup failed", email=email, error=why)
        if strict:
            raise SlackDeliveryError(f"Slack could not look up {email}: {why}") from exc

    def _learn(self, email: str, user_id: str | None) -> None:
        self._ids[email] = user_id
        if self.known is not None:
            self.known.put(email, user_id)

    def _lock(self, email: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(email, threading.Lock())
