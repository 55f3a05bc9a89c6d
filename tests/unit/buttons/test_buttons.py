"""Request signing and the button logic that needs no AWS: verification, parsing, keep-until times."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest

from costguard.buttons.rules import keep_until
from costguard.core.errors import EventValidationError
from costguard.slack.buttons import Button
from costguard.slack.interactions import parse_interaction
from costguard.slack.signature import SignatureError, sign, verify
from testing.handlers import load_event

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BODY = b"payload=%7B%22type%22%3A%22block_actions%22%7D"
NOW = 1_795_270_100.0


def test_a_request_signed_with_the_secret_now_is_accepted() -> None:
    verify(SECRET, str(int(NOW)), sign(SECRET, str(int(NOW)), BODY), BODY, now=NOW + 3)


def test_slacks_documented_example_signature() -> None:
    # The example in Slack's "Verifying requests from Slack" guide.
    body = (
        b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
        b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
        b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
        b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
    )
    assert sign(SECRET, "1531420618", body) == "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


@pytest.mark.parametrize(
    ("secret", "timestamp", "body", "reason"),
    [
        (SECRET, str(int(NOW)), BODY + b"x", "does not match"),  # tampered body
        ("another-secret", str(int(NOW)), BODY, "does not match"),  # wrong secret
        (SECRET, str(int(NOW) - 301), BODY, "301 s away"),  # stale: a replay
        (SECRET, str(int(NOW) + 301), BODY, "301 s away"),
    ],
)
def test_tampered_stale_or_wrongly_signed_requests_are_refused(
    secret: str, timestamp: str, body: bytes, reason: str
) -> None:
    signature = sign(secret, timestamp, BODY)
    with pytest.raises(SignatureError, match=reason):
        verify(SECRET, timestamp, signature, body, now=NOW)


@pytest.mark.parametrize(("timestamp", "signature"), [(None, "v0=x"), ("1", None), ("soon", "v0=x")])
def test_missing_or_malformed_headers_are_refused(timestamp: str | None, signature: str | None) -> None:
    with pytest.raises(SignatureError):
        verify(SECRET, timestamp, signature, BODY, now=NOW)


def test_click_is_read_from_the_payload() -> None:
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    click = parse_interaction(urlencode({"payload": json.dumps(payload)}))
    assert click is not None
    assert (click.button, click.instance_id, click.region, click.user_id) == (
        Button.KEEP_2H,
        "i-0a1b2c3d4e5f60718",
        "us-east-1",
        "U0ALICE",
    )
    assert click.message_ts == "1795270000.000100"
    assert [b["type"] for b in click.blocks] == ["header", "section", "actions"]


def test_other_interactions_are_ignored_and_garbage_refused() -> None:
    assert parse_interaction(urlencode({"payload": json.dumps({"type": "view_submission"})})) is None
    with pytest.raises(EventValidationError):
        parse_interaction("payload=%7Bnot-json")
    bad = load_event("slack_receiver/block-actions-keep-2h.json")
    bad["actions"][0]["value"] = "i-only"
    with pytest.raises(EventValidationError, match="bad value"):
        parse_interaction(urlencode({"payload": json.dumps(bad)}))


PARIS = ZoneInfo("Europe/Paris")
FRIDAY_EVENING = datetime(2026, 11, 20, 19, 30, tzinfo=UTC)  # 20:30 in Paris


@pytest.mark.parametrize(
    ("button", "expected"),
    [
        (Button.KEEP_2H, datetime(2026, 11, 20, 21, 30, tzinfo=UTC)),
        (Button.KEEP_TOMORROW, datetime(2026, 11, 21, 8, 0, tzinfo=UTC)),  # Saturday 09:00 Paris
        (Button.KEEP_MONDAY, datetime(2026, 11, 23, 8, 0, tzinfo=UTC)),  # Monday 09:00 Paris
    ],
)
def test_keep_until_is_in_the_teams_time(button: Button, expected: datetime) -> None:
    assert keep_until(button, FRIDAY_EVENING, PARIS) == expected


def test_keep_until_monday_pressed_on_a_monday_means_next_monday() -> None:
    monday = datetime(2026, 11, 23, 7, 0, tzinfo=UTC)
    assert keep_until(Button.KEEP_MONDAY, monday, PARIS) == datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
