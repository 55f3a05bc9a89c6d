"""The notifier edits a message the bot posted (chat.update), and says clearly when it cannot."""

from __future__ import annotations

from typing import Any

import pytest

from costguard.core.errors import SlackDeliveryError
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import Delivery
from tests.unit.slack.test_notifier import FakeWebClient, FakeWebhook, notifier, slack_error

EDITED = Message("anomaly grew", (section("now +$3,100"),))


class EditingWebClient(FakeWebClient):
    def __init__(self, gone: set[str] | None = None) -> None:
        super().__init__()
        self.gone = gone or set()  # ts of messages deleted in Slack
        self.updates: list[dict[str, Any]] = []

    def chat_update(self, **kwargs: Any) -> dict[str, Any]:
        if kwargs["ts"] in self.gone:
            raise slack_error("message_not_found")
        self.updates.append(kwargs)
        return {"ok": True, "channel": kwargs["channel"], "ts": kwargs["ts"], "text": kwargs["text"]}


def test_a_bot_message_is_edited_in_place_by_its_channel_and_ts() -> None:
    web = EditingWebClient()
    delivery = notifier(web).update("C0ALERTS", "1.5", EDITED)
    assert delivery == Delivery("bot", "C0ALERTS", "1.5")
    assert web.updates == [
        {"channel": "C0ALERTS", "ts": "1.5", "text": "anomaly grew", "blocks": [section("now +$3,100")]}
    ]
    assert web.posts == [], "an edit is not a new post"


@pytest.mark.parametrize(
    ("web", "ts", "reason"),
    [
        (EditingWebClient(gone={"1.5"}), "1.5", "could not edit 1.5 in C0ALERTS: 200 message_not_found"),
        (EditingWebClient(), "", "the message has no ts"),
        (None, "1.5", "no bot token"),
    ],
)
def test_an_edit_that_cannot_be_made_raises_with_the_reason(web: EditingWebClient | None, ts: str, reason: str) -> None:
    webhook = FakeWebhook()
    with pytest.raises(SlackDeliveryError, match=reason):
        notifier(web, webhook).update("C0ALERTS", ts, EDITED)
    assert webhook.sent == [], "the webhook cannot edit: the caller decides what to post instead"


class DownWebClient(EditingWebClient):
    def chat_update(self, **kwargs: Any) -> dict[str, Any]:
        raise slack_error("service_unavailable")


def test_an_edit_refused_for_good_says_so_and_one_refused_for_now_does_not() -> None:
    """A message deleted in Slack will never take the edit (it is not tried again); an outage may pass (the
    message is shown again by a later sweep, state/live.py)."""
    with pytest.raises(SlackDeliveryError) as gone:
        notifier(EditingWebClient(gone={"1.5"})).update("C0ALERTS", "1.5", EDITED)
    assert gone.value.lasting
    with pytest.raises(SlackDeliveryError) as down:
        notifier(DownWebClient()).update("C0ALERTS", "1.5", EDITED)
    assert not down.value.lasting
