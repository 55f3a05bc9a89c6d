"""Slack request signing (v0): HMAC-SHA256 of "v0:<timestamp>:<body>" with the app's signing secret.

Pure, with the clock passed in. Requests older (or newer) than five minutes are refused, so a captured
request cannot be replayed later; the comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac

MAX_AGE_SECONDS = 300


class SignatureError(ValueError):
    """The request is not provably from Slack; the reason is safe to log, never to act on."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str | None, signature: str | None, body: bytes, now: float) -> None:
    """Raise SignatureError unless `signature` is Slack's signature of `body` at a fresh `timestamp`."""
    if not secret:
        raise SignatureError("no signing secret configured")
    if not timestamp or not signature:
        raise SignatureError("missing X-Slack-Request-Timestamp or X-Slack-Signature")
    try:
        sent = int(timestamp)
    except ValueError:
        raise SignatureError("timestamp is not a number") from None
    if abs(now - sent) > MAX_AGE_SECONDS:
        raise SignatureError(f"timestamp {abs(now - sent):.0f} s away from now")
    if not hmac.compare_digest(sign(secret, timestamp, body), signature):
        raise SignatureError("signature does not match")
