"""A Function URL request as Slack sent it: the raw body bytes and the two signing headers. Pure.

Reading never fails: whatever arrives (headers that are not an object, a body that is not text, base64
that does not decode, lone surrogates), the result is a request whose signature simply cannot verify,
so the answer is a 401 and nothing else happens. Nothing is decoded beyond the transport's base64
before the signature is checked over the exact bytes Slack signed.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_BODY = 64 * 1024  # a block_actions payload with the whole message is a few kB


@dataclass(frozen=True)
class SlackRequest:
    body: bytes
    timestamp: str | None
    signature: str | None
    problem: str = ""  # why it cannot be Slack's, before any signature is computed


def read_request(event: Any) -> SlackRequest:
    if not isinstance(event, Mapping):
        return SlackRequest(b"", None, None, f"request is a {type(event).__name__}")
    raw_headers = event.get("headers")
    headers = (
        {str(k).lower(): v for k, v in raw_headers.items() if isinstance(v, str)}
        if isinstance(raw_headers, Mapping)
        else {}
    )
    timestamp, signature = headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
    raw = event.get("body")
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        return SlackRequest(b"", timestamp, signature, f"body is a {type(raw).__name__}")
    if len(raw) > MAX_BODY * 2:
        return SlackRequest(b"", timestamp, signature, f"body of {len(raw)} characters")
    if event.get("isBase64Encoded") is True:
        try:
            return SlackRequest(base64.b64decode(raw, validate=True), timestamp, signature)
        except (binascii.Error, ValueError):
            return SlackRequest(b"", timestamp, signature, "body is not base64")
    return SlackRequest(raw.encode("utf-8", "surrogatepass"), timestamp, signature)
