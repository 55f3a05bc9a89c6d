"""One Slack app for many accounts: each click goes to the account of its machine, or nowhere."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from costguard.core.errors import EventValidationError
from costguard.core.settings import ReceiverSettings
from costguard.slack.buttons import Button, button_value
from costguard.slack.interactions import Click, parse_interaction
from costguard.slack.routing import NotAMember, route
from testing.handlers import load_event

HUB, MEMBER = "123456789012", "111122223333"
OWN_QUEUE = f"https://sqs.us-east-1.amazonaws.com/{HUB}/costguard-ClickQueue-a1"
MEMBER_ARN = f"arn:aws:sqs:eu-west-1:{MEMBER}:costguard-ClickQueue-b2"


def click_for(value: str) -> Click:
    payload = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0]["value"] = value
    click = parse_interaction(urlencode({"payload": json.dumps(payload)}))
    assert click is not None
    return click


def test_a_button_names_the_account_of_its_machine_and_the_click_keeps_it() -> None:
    value = button_value("i-0a1b2c3d4e5f60718", "eu-west-1", MEMBER)
    assert json.loads(value) == {"i": "i-0a1b2c3d4e5f60718", "r": "eu-west-1", "a": MEMBER}
    click = click_for(value)
    assert (click.account, click.region, click.button) == (MEMBER, "eu-west-1", Button.KEEP_2H)
    assert Click.from_json(click.to_json()) == click


def test_a_button_from_before_accounts_is_the_receivers_own_account() -> None:
    click = click_for(json.dumps({"i": "i-0a1b2c3d4e5f60718", "r": "us-east-1"}))
    assert click.account == ""
    assert route(click.account, own_account=HUB, own_queue=OWN_QUEUE, members={}) == ("us-east-1", OWN_QUEUE)


@pytest.mark.parametrize("account", ["1234", "12345678901x", ["111122223333"]])
def test_an_account_that_is_not_an_account_id_is_refused(account: object) -> None:
    with pytest.raises(EventValidationError, match="account"):
        click_for(json.dumps({"i": "i-0a1b2c3d4e5f60718", "r": "us-east-1", "a": account}))


def test_clicks_go_to_their_own_account_a_member_or_nowhere() -> None:
    settings = ReceiverSettings.from_env({"CLICK_QUEUE_URL": OWN_QUEUE, "MEMBER_CLICK_QUEUES": MEMBER_ARN})
    assert settings.members == {MEMBER: f"https://sqs.eu-west-1.amazonaws.com/{MEMBER}/costguard-ClickQueue-b2"}
    own = route(HUB, own_account=HUB, own_queue=OWN_QUEUE, members=settings.members)
    assert own == ("us-east-1", OWN_QUEUE)
    member = route(MEMBER, own_account=HUB, own_queue=OWN_QUEUE, members=settings.members)
    assert member == ("eu-west-1", settings.members[MEMBER])
    with pytest.raises(NotAMember, match="999999999999"):
        route("999999999999", own_account=HUB, own_queue=OWN_QUEUE, members=settings.members)


def test_a_member_queue_that_is_not_an_sqs_arn_is_a_configuration_error() -> None:
    from costguard.core.errors import ConfigError  # noqa: PLC0415

    with pytest.raises(ConfigError, match="MEMBER_CLICK_QUEUES"):
        ReceiverSettings.from_env({"CLICK_QUEUE_URL": OWN_QUEUE, "MEMBER_CLICK_QUEUES": "https://example.com/q"})


def test_the_workers_sample_event_is_a_queued_click_it_reads() -> None:
    [record] = load_event("buttons/queued-click.json")["Records"]
    click = Click.from_json(record["body"])
    assert (click.button, click.account, click.user_id) == (Button.KEEP_2H, HUB, "U0ALICE")
