"""The Slack stand-in refuses what Slack refuses, in Slack's words, and edits a message as Slack does.

Every call goes over HTTP with the real slack-sdk clients, as costguard's own calls do.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from costguard.core.errors import SlackDeliveryError
from costguard.core.records import Instance
from costguard.core.settings import Settings
from costguard.idle.reads.facts import OwnerZones
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials, SlackNotifier, post_response
from testing.slack_standin import SlackStandIn

GOOD = [{"type": "section", "text": {"type": "mrkdwn", "text": "`i-0abc` idle for 2 h"}}]
TOO_LONG_SECTION = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]
EMPTY_HEADER = [{"type": "header", "text": {"type": "plain_text", "text": ""}}]
MARKDOWN_HEADER = [{"type": "header", "text": {"type": "mrkdwn", "text": "*Idle*"}}]


@pytest.fixture
def standin() -> Iterator[SlackStandIn]:
    """A stand-in of these tests' own: they mean to be refused (the shared fixture fails a test refused)."""
    slack = SlackStandIn().start()
    yield slack
    slack.stop()


def web(slack: SlackStandIn) -> WebClient:
    return WebClient(token=slack.token, base_url=slack.api_url, timeout=5)


def refused_post(slack: SlackStandIn, **args: Any) -> dict[str, Any]:
    """What Slack answers a chat.postMessage it refuses (slack-sdk raises it as SlackApiError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # slack-sdk's own warning of a missing `text`
        with pytest.raises(SlackApiError) as refused:
            web(slack).chat_postMessage(channel="C0ALERTS", **args)
    return dict(refused.value.response.data)


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        (TOO_LONG_SECTION, "must be less than 3001 characters (3001) [json-pointer:/blocks/0/text/text]"),
        (EMPTY_HEADER, "must be more than 0 characters [json-pointer:/blocks/0/text/text]"),
        (MARKDOWN_HEADER, "must be plain_text, not 'mrkdwn' [json-pointer:/blocks/0/text/type]"),
        ([GOOD[0]] * 51, "no more than 50 items allowed (51) [json-pointer:/blocks]"),
    ],
    ids=["section text over 3,000", "empty header", "header in mrkdwn", "51 blocks"],
)
def test_invalid_blocks_are_refused_as_slack_refuses_them(
    standin: SlackStandIn, blocks: list[dict[str, Any]], pointer: str
) -> None:
    answer = refused_post(standin, text="idle GPU", blocks=blocks)
    assert answer["ok"] is False
    assert answer["error"] == "invalid_blocks"
    assert pointer in answer["errors"]
    assert f"[ERROR] {pointer}" in answer["response_metadata"]["messages"]
    assert standin.messages == [], "nothing posted"
    [refusal] = standin.refused
    assert (refusal.method, refusal.problems[0].error) == ("chat.postMessage", "invalid_blocks")


def test_a_text_over_4000_characters_is_msg_too_long(standin: SlackStandIn) -> None:
    assert refused_post(standin, text="x" * 4001, blocks=GOOD)["error"] == "msg_too_long"
    web(standin).chat_postMessage(channel="C0ALERTS", text="x" * 4000, blocks=GOOD)
    assert len(standin.messages) == 1, "4,000 is allowed"


@pytest.mark.parametrize("text", [None, "", "   "], ids=["missing", "empty", "blank"])
def test_blocks_without_a_text_fallback_are_refused(standin: SlackStandIn, text: str | None) -> None:
    args: dict[str, Any] = {"blocks": GOOD} | ({} if text is None else {"text": text})
    answer = refused_post(standin, **args)
    assert answer["error"] == "no_text"
    assert "refused by the stand-in" in answer["response_metadata"]["messages"][0], "says the rule is not Slack's"
    assert standin.messages == []


def test_neither_text_nor_blocks_is_no_text(standin: SlackStandIn) -> None:
    answer = refused_post(standin)
    assert answer["error"] == "no_text"


def test_an_update_replaces_the_text_and_the_blocks(standin: SlackStandIn) -> None:
    posted = web(standin).chat_postMessage(channel="C0ALERTS", text="idle GPU", blocks=GOOD)
    edited = [{"type": "section", "text": {"type": "mrkdwn", "text": "kept by alice"}}]
    web(standin).chat_update(channel="C0ALERTS", ts=posted["ts"], text="kept", blocks=edited)
    [message] = standin.messages
    assert (message.text, message.blocks, message.updated) == ("kept", edited, True)


def test_an_update_with_text_and_no_blocks_removes_the_blocks(standin: SlackStandIn) -> None:
    posted = web(standin).chat_postMessage(channel="C0ALERTS", text="idle GPU", blocks=GOOD)
    web(standin).chat_update(channel="C0ALERTS", ts=posted["ts"], text="stopped")
    [message] = standin.messages
    assert (message.text, message.blocks) == ("stopped", [])


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"blocks": GOOD}, "no_text"),  # the old text is not kept: the fallback must say the new state
        ({"text": "kept", "blocks": TOO_LONG_SECTION}, "invalid_blocks"),
        ({"text": "x" * 4001}, "msg_too_long"),
    ],
    ids=["no text", "invalid blocks", "text too long"],
)
def test_a_refused_update_leaves_the_message_as_it_was(standin: SlackStandIn, args: dict[str, Any], error: str) -> None:
    posted = web(standin).chat_postMessage(channel="C0ALERTS", text="idle GPU", blocks=GOOD)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(SlackApiError) as refused:
            web(standin).chat_update(channel="C0ALERTS", ts=posted["ts"], **args)
    assert refused.value.response["error"] == error
    [message] = standin.messages
    assert (message.text, message.blocks, message.updated) == ("idle GPU", GOOD, False)
    assert [r.method for r in standin.refused] == ["chat.update"]


def test_the_webhook_refuses_with_http_400_and_the_error(standin: SlackStandIn) -> None:
    answer = WebhookClient(standin.webhook_url).send(text="idle GPU", blocks=EMPTY_HEADER)
    assert (answer.status_code, answer.body) == (400, "invalid_blocks")
    answer = WebhookClient(standin.webhook_url).send(blocks=GOOD)
    assert (answer.status_code, answer.body) == (400, "no_text")
    assert standin.messages == []
    assert [r.method for r in standin.refused] == ["webhook", "webhook"]


def test_a_response_url_replaces_the_whole_message_and_refuses_invalid_blocks(standin: SlackStandIn) -> None:
    posted = web(standin).chat_postMessage(channel="C0ALERTS", text="idle GPU", blocks=GOOD)
    url = standin.response_url(posted["ts"])
    with pytest.raises(SlackDeliveryError, match="HTTP 400: invalid_blocks"):
        post_response(url, {"replace_original": True, "text": "kept", "blocks": MARKDOWN_HEADER})
    assert standin.messages[0].blocks == GOOD, "a refused replacement changes nothing"
    post_response(url, {"replace_original": True, "text": "kept by alice"})
    [message] = standin.messages
    assert (message.text, message.blocks) == ("kept by alice", []), "replaced whole: the old blocks are gone"


def test_costguard_is_told_when_slack_refuses_a_message_and_the_webhook_does_not_try_it_again(
    standin: SlackStandIn,
) -> None:
    notifier = SlackNotifier(
        SlackCredentials(bot_token=standin.token, webhook_url=standin.webhook_url), base_url=standin.api_url
    )
    with pytest.raises(SlackDeliveryError, match=r"bot: 200 invalid_blocks$"):
        notifier.post("C0ALERTS", Message("idle GPU", ({"type": "section", "text": {"type": "mrkdwn", "text": ""}},)))
    assert [r.method for r in standin.refused] == ["chat.postMessage"]  # the webhook only for a bot that cannot post


def test_a_refusal_fails_the_test_that_made_it_naming_it(standin: SlackStandIn) -> None:
    standin.assert_all_accepted()  # nothing refused yet
    refused_post(standin, text="idle GPU", blocks=EMPTY_HEADER)
    with pytest.raises(AssertionError, match=r"chat.postMessage refused \(invalid_blocks\): must be more than 0"):
        standin.assert_all_accepted()


def test_a_valid_costguard_message_is_accepted(standin: SlackStandIn) -> None:
    message = Message("idle GPU", (section("`i-0abc` has been idle for 2 h"),))
    web(standin).chat_postMessage(channel="C0ALERTS", text=message.text, blocks=message.slack_blocks())
    standin.assert_all_accepted()
    assert len(standin.messages) == 1


def test_the_zone_a_person_set_is_read_for_their_machines_and_none_set_reads_as_unknown() -> None:
    users = {"asha@example.com": "U0ASHA", "bob@example.com": "U0BOB"}
    slack = SlackStandIn(users=users, zones={"U0ASHA": "Asia/Kolkata"}).start()
    try:
        notifier = SlackNotifier(SlackCredentials(bot_token=slack.token), base_url=slack.api_url)
        env = {"STATE_TABLE": "t", "SLACK_SECRET_NAME": "s", "ALERTS_CHANNEL": "C0A", "AWS_REGION": "us-east-1"}
        settings = Settings.from_env(env | {"EMAIL_DOMAIN": "example.com"})
        zone = OwnerZones(lambda: notifier, settings)
        launched = datetime(2026, 11, 1, tzinfo=UTC)
        machine = Instance("i-1", "us-east-1", "g5.xlarge", "running", launched, {"Owner": "asha"})
        assert zone(machine) == "Asia/Kolkata"
        assert zone(Instance("i-2", "us-east-1", "g5.xlarge", "running", launched, {"Owner": "bob"})) == ""
        assert web(slack).users_info(user="U0ASHA")["user"]["tz"] == "Asia/Kolkata"
        with pytest.raises(SlackApiError, match="user_not_found"):
            web(slack).users_info(user="U0NOBODY")
    finally:
        slack.stop()
