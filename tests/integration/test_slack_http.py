"""The notifier with the real slack-sdk client over HTTP, against the local Slack stand-in."""

from __future__ import annotations

import time

import pytest

from costguard.core.errors import SlackDeliveryError
from costguard.runtime import Runtime
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import make_runtime

MESSAGE = Message("g5.12xlarge idle for 2 h", (section("`i-0abc` has been idle for 2 h"),))


def notifier(slack: SlackStandIn, *, bot: bool = True, webhook: bool = True) -> SlackNotifier:
    creds = SlackCredentials(bot_token=slack.token if bot else "", webhook_url=slack.webhook_url if webhook else "")
    return SlackNotifier(creds, base_url=slack.api_url, timeout=5)


def test_channel_post_reaches_slack_with_blocks(slack: SlackStandIn) -> None:
    delivery = notifier(slack).post("C0ALERTS", MESSAGE)
    [posted] = slack.messages
    assert (posted.route, posted.channel, posted.text) == ("bot", "C0ALERTS", MESSAGE.text)
    assert posted.blocks == [section("`i-0abc` has been idle for 2 h")]
    assert delivery.ts == posted.ts


def test_rate_limit_is_retried_after_the_retry_after_delay(slack: SlackStandIn) -> None:
    slack.fail("chat.postMessage", 429, count=2, retry_after=1)
    started = time.monotonic()
    delivery = notifier(slack).post("C0ALERTS", MESSAGE)
    elapsed = time.monotonic() - started
    assert delivery.route == "bot"
    assert slack.calls.count("chat.postMessage") == 3
    assert elapsed >= 2.0, "each 429 waits its Retry-After second"
    assert len(slack.messages) == 1


def test_direct_message_goes_to_the_user_found_by_email(slack: SlackStandIn) -> None:
    delivery = notifier(slack).send_to_owner("alice@example.com", MESSAGE, fallback_channel="C0ALERTS", owner="alice")
    assert delivery.direct
    assert [m.channel for m in slack.messages] == ["U0ALICE"]
    assert slack.calls[:1] == ["users.lookupByEmail"]


def test_unknown_user_falls_back_to_the_alerts_channel(slack: SlackStandIn) -> None:
    owner = "nobody@example.com"
    notifier(slack).send_to_owner(owner, MESSAGE, fallback_channel="C0ALERTS", owner=owner)
    [posted] = slack.messages
    assert posted.channel == "C0ALERTS"
    said = posted.blocks[-1]["elements"][0]["text"]
    assert said == "nobody has no Slack account costguard can find, so this is here."  # named, not by address


def test_bot_outage_is_not_sent_by_the_webhook_as_slack_may_have_posted_it(slack: SlackStandIn) -> None:
    slack.fail("chat.postMessage", 503, count=10)
    with pytest.raises(SlackDeliveryError, match="may have gone") as failed:
        notifier(slack).post("C0ALERTS", MESSAGE)  # no block id to look for it by: the caller decides
    assert failed.value.maybe_delivered
    assert slack.messages == []


def test_slack_outage_on_every_route_raises(slack: SlackStandIn) -> None:
    slack.fail("chat.postMessage", 500, count=10)
    slack.fail("webhook", 500, count=10)
    with pytest.raises(SlackDeliveryError, match="could not post to C0ALERTS"):
        notifier(slack).post("C0ALERTS", MESSAGE)
    assert slack.messages == []


def test_revoked_token_without_webhook_raises(slack: SlackStandIn) -> None:
    stale = notifier(slack, webhook=False)
    slack.token = "xoxb-rotated"
    with pytest.raises(SlackDeliveryError, match="invalid_auth"):
        stale.post("C0ALERTS", MESSAGE)


@pytest.mark.usefixtures("aws")
def test_a_runtimes_posts_keep_their_pace_on_the_runtimes_clock(
    slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The demo gives the runtime its own clock: three posts to one channel still go a second apart on it,
    # the other channel's post waits for nothing, and the wall clock pays none of it.
    runtime = make_runtime(slack)
    now = [50.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    def wall_clock_sleep(seconds: float) -> None:
        raise AssertionError(f"paced on the wall clock: slept {seconds} s")

    monkeypatch.setattr(runtime, "sleep", sleep)
    monkeypatch.setattr(runtime, "monotonic", lambda: now[0])
    # The wall clock pays none of it: a wait on it fails the test. (A bound on the test's own time could fail on a
    # loaded machine: CI once took 1.6 s for the four posts.)
    monkeypatch.setattr(time, "sleep", wall_clock_sleep)
    for channel in ("C0ALERTS", "C0ALERTS", "C0OTHER", "C0ALERTS"):
        runtime.notifier.post(channel, MESSAGE)
    assert slept == [1.0, 1.0]
    assert [m.channel for m in slack.messages] == ["C0ALERTS", "C0ALERTS", "C0OTHER", "C0ALERTS"]


def test_a_runtime_waits_on_the_wall_clock_unless_given_another(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    Runtime.sleep(0.25)
    assert slept == [0.25]
    assert abs(Runtime.monotonic() - time.monotonic()) < 1.0


def test_a_file_uploaded_after_a_post_in_the_same_second_is_after_it_in_the_channel() -> None:
    # A digest's chart goes up right after its post, within the clock's second: Slack orders them as sent.
    standin = SlackStandIn(clock=lambda: 1794816000.0).start()  # a simulation's whole seconds
    try:
        sender = notifier(standin)
        posted = sender.post("C0WEEKLY", MESSAGE)
        sender.upload_file("C0WEEKLY", b"\x89PNG\r\n\x1a\nrest", filename="week.png", title="GPU-hours a day")
        [uploaded] = [f for f in standin.files if f.get("title") == "GPU-hours a day"]
        assert float(uploaded["ts"]) > float(posted.ts)
    finally:
        standin.stop()
