"""The notifier's routing and failure rules, with a hand-written fake of slack-sdk's WebClient."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from costguard.core.errors import ConfigError, SlackDeliveryError
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from costguard.slack.pace import ChannelPace

MESSAGE = Message("idle GPU", (section("i-1 is idle"),))


def slack_error(error: str, status: int = 200) -> SlackApiError:
    response = SlackResponse(
        client=None,
        http_verb="POST",
        api_url="https://slack.com/api/x",
        req_args={},
        data={"ok": False, "error": error},
        headers={},
        status_code=status,
    )
    return SlackApiError(error, response)


class FakeWebClient:
    def __init__(self, users: dict[str, str] | None = None, fail_posts: dict[str, str] | None = None) -> None:
        self.users = users or {}
        self.fail_posts = fail_posts or {}  # channel -> error
        self.posts: list[dict[str, Any]] = []
        self.lookups: list[str] = []

    def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        if kwargs["channel"] in self.fail_posts:
            raise slack_error(self.fail_posts[kwargs["channel"]])
        self.posts.append(kwargs)
        return {"ok": True, "channel": kwargs["channel"], "ts": f"1.{len(self.posts)}"}

    def users_lookupByEmail(self, email: str) -> dict[str, Any]:
        self.lookups.append(email)
        if email not in self.users:
            raise slack_error("users_not_found")
        return {"ok": True, "user": {"id": self.users[email]}}


class FakeWebhook:
    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.sent: list[dict[str, Any]] = []

    def send(self, **kwargs: Any) -> Any:
        self.sent.append(kwargs)
        return type("R", (), {"status_code": self.status, "body": "ok" if self.status == 200 else "no_service"})()


def notifier(web: FakeWebClient | None = None, webhook: FakeWebhook | None = None) -> SlackNotifier:
    creds = SlackCredentials(bot_token="xoxb-1" if web else "", webhook_url="https://h" if webhook else "")
    return SlackNotifier(creds, web_client=web, webhook_client=webhook)  # type: ignore[arg-type]


def test_owner_found_by_email_gets_a_direct_message() -> None:
    web = FakeWebClient(users={"alice@example.com": "U0ALICE"})
    delivery = notifier(web).send_to_owner("alice@example.com", MESSAGE, fallback_channel="C0ALERTS", owner="alice")
    assert (delivery.channel, delivery.direct) == ("U0ALICE", True)
    assert web.posts[0]["channel"] == "U0ALICE"
    assert web.posts[0]["blocks"] == [section("i-1 is idle")]


def test_owner_slack_does_not_know_is_named_in_the_alerts_channel() -> None:
    web = FakeWebClient()
    owner = "zed@example.com"
    delivery = notifier(web).send_to_owner(owner, MESSAGE, fallback_channel="C0ALERTS", owner=owner)
    assert (delivery.channel, delivery.direct) == ("C0ALERTS", False)
    last = web.posts[0]["blocks"][-1]["elements"][0]["text"]
    assert last == "zed has no Slack account costguard can find, so this is here."
    assert "@" not in last  # a person is named, never by address


def test_a_question_for_the_owner_alone_is_never_posted_in_a_channel_when_they_cannot_be_reached() -> None:
    web = FakeWebClient(users={"alice@example.com": "U0ALICE"}, fail_posts={"U0ALICE": "ratelimited"})
    with pytest.raises(SlackDeliveryError, match="could not be reached directly"):
        notifier(web).send_to_owner("alice@example.com", MESSAGE, fallback_channel="", owner="alice")
    with pytest.raises(SlackDeliveryError):
        notifier(FakeWebClient()).send_to_owner("zed@example.com", MESSAGE, fallback_channel="", owner="zed")
    assert [p["channel"] for p in web.posts if p["channel"] != "U0ALICE"] == []


def test_a_reply_goes_under_its_message_and_into_the_conversation_too() -> None:
    web = FakeWebClient()
    notifier(web).post("D0ALICE", MESSAGE, thread_ts="1795270000.000100", broadcast=True)
    notifier(web).post("D0ALICE", MESSAGE)
    notifier(web).post("C0DIGEST", MESSAGE, thread_ts="1795270000.000200")  # a digest's reply: its thread only
    assert (web.posts[0]["thread_ts"], web.posts[0]["reply_broadcast"]) == ("1795270000.000100", True)
    assert "thread_ts" not in web.posts[1]
    assert web.posts[2]["thread_ts"] == "1795270000.000200"
    assert "reply_broadcast" not in web.posts[2]


def test_a_persons_time_zone_comes_with_their_lookup_or_from_users_info_once() -> None:
    web = ZonedWorkspace(users={"a@x.io": "U1", "b@x.io": "U2"}, zones={"U1": "Europe/Paris", "U2": "America/New_York"})
    slack = notifier(web)
    assert slack.user_id_for("a@x.io") == "U1"
    assert slack.zone_of("U1") == "Europe/Paris"  # said by users.lookupByEmail: no call more
    assert (slack.zone_of("U2"), slack.zone_of("U2")) == ("America/New_York", "America/New_York")
    assert web.infos == ["U2"]  # asked once, then kept


def test_a_time_zone_slack_will_not_give_is_none_and_said_so() -> None:
    web = ZonedWorkspace(users={}, zones={}, info_error="missing_scope")
    assert notifier(web).zone_of("U9") == ""  # the caller reads the team's clock


class ZonedWorkspace(FakeWebClient):
    """Users with the time zones their Slack profiles set (users.lookupByEmail and users.info answer them)."""

    def __init__(self, *, zones: dict[str, str], info_error: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.zones = zones
        self.info_error = info_error
        self.infos: list[str] = []

    def users_lookupByEmail(self, email: str) -> dict[str, Any]:
        found = super().users_lookupByEmail(email)
        found["user"]["tz"] = self.zones.get(found["user"]["id"], "")
        return found

    def users_info(self, user: str) -> dict[str, Any]:
        self.infos.append(user)
        if self.info_error:
            raise slack_error(self.info_error)
        return {"ok": True, "user": {"id": user, "tz": self.zones.get(user, "")}}


def test_user_lookups_are_cached_per_container() -> None:
    web = FakeWebClient(users={"a@x.io": "U1"})
    n = notifier(web)
    for _ in range(3):
        n.send_to_owner("a@x.io", MESSAGE, fallback_channel="C", owner="a")
    assert web.lookups == ["a@x.io"]


def test_bot_failure_falls_back_to_the_webhook() -> None:
    web = FakeWebClient(fail_posts={"C0ALERTS": "not_in_channel"})
    hook = FakeWebhook()
    delivery = notifier(web, hook).post("C0ALERTS", MESSAGE)
    assert delivery.route == "webhook"
    assert hook.sent == [{"text": "idle GPU", "blocks": [section("i-1 is idle")]}]


def test_every_route_failing_raises_instead_of_dropping_the_message() -> None:
    web = FakeWebClient(fail_posts={"C0ALERTS": "channel_not_found"})
    with pytest.raises(SlackDeliveryError, match=r"channel_not_found.*webhook answered HTTP 404"):
        notifier(web, FakeWebhook(status=404)).post("C0ALERTS", MESSAGE)


def test_bot_failure_without_webhook_raises() -> None:
    web = FakeWebClient(fail_posts={"C0ALERTS": "invalid_auth"})
    with pytest.raises(SlackDeliveryError, match="invalid_auth"):
        notifier(web).post("C0ALERTS", MESSAGE)


def test_webhook_only_setup_sends_owner_messages_to_its_channel() -> None:
    hook = FakeWebhook()
    delivery = notifier(webhook=hook).send_to_owner("a@x.io", MESSAGE, fallback_channel="C0ALERTS", owner="a")
    assert delivery.route == "webhook"
    assert len(hook.sent) == 1


@pytest.mark.parametrize(
    ("secret", "message"),
    [
        ("{", "not JSON"),
        ("[]", "JSON object"),
        ({"signing_secret": "s"}, "neither bot_token nor webhook_url"),
        ({"bot_token": "xoxp-user-token"}, "not a bot token"),
    ],
)
def test_bad_slack_secrets_are_refused_with_a_reason(secret: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SlackCredentials.from_secret(secret)


def test_secret_json_is_read() -> None:
    creds = SlackCredentials.from_secret('{"bot_token": "xoxb-9", "signing_secret": "abc"}')
    assert (creds.bot_token, creds.webhook_url, creds.signing_secret) == ("xoxb-9", "", "abc")


class Directory:
    """The state table's Slack ids, in memory: what one function learned, every other finds."""

    def __init__(self) -> None:
        self.ids: dict[str, str | None] = {}
        self.reads = 0

    def get(self, email: str) -> tuple[bool, str | None]:
        self.reads += 1
        return (email in self.ids, self.ids.get(email))

    def get_many(self, emails: Iterable[str]) -> dict[str, str | None]:
        self.reads += 1
        return {e: self.ids[e] for e in emails if e in self.ids}

    def put(self, email: str, user_id: str | None) -> None:
        self.ids[email] = user_id

    def put_many(self, ids: Mapping[str, str | None]) -> None:
        self.ids.update(ids)

    def forget(self, email: str) -> None:
        self.ids.pop(email, None)


class Workspace(FakeWebClient):
    """users.list, 200 a page, as Slack pages it (a cursor in response_metadata)."""

    def __init__(self, users: dict[str, str], **kwargs: Any) -> None:
        super().__init__(users=users, **kwargs)
        self.pages = 0
        self.dm_errors: dict[str, str] = {}

    def users_list(self, limit: int = 200, cursor: str = "") -> dict[str, Any]:
        self.pages += 1
        members = [{"id": uid, "profile": {"email": email}} for email, uid in sorted(self.users.items())]
        start = int(cursor or 0)
        page = members[start : start + limit]
        following = str(start + limit) if start + limit < len(members) else ""
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": following}}

    def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        if kwargs["channel"] in self.dm_errors:
            raise slack_error(self.dm_errors[kwargs["channel"]])
        return super().chat_postMessage(**kwargs)


def with_directory(web: FakeWebClient, directory: Directory) -> SlackNotifier:
    creds = SlackCredentials(bot_token="xoxb-1")
    return SlackNotifier(creds, web_client=web, known_users=directory)  # type: ignore[arg-type]


def test_a_slack_id_one_function_found_is_found_by_every_other_without_asking_slack() -> None:
    directory, web = Directory(), FakeWebClient(users={"a@x.io": "U1"})
    with_directory(web, directory).send_to_owner("a@x.io", MESSAGE, fallback_channel="C", owner="a")
    other = FakeWebClient(users={"a@x.io": "U1"})  # another container, another function
    with_directory(other, directory).send_to_owner("a@x.io", MESSAGE, fallback_channel="C", owner="a")
    assert (web.lookups, other.lookups) == (["a@x.io"], [])
    assert other.posts[0]["channel"] == "U1"


def test_many_unknown_owners_are_resolved_with_a_few_pages_of_users_list() -> None:
    users = {f"u{n}@x.io": f"U{n:04d}" for n in range(450)}
    web, directory = Workspace(users), Directory()
    notifier_ = with_directory(web, directory)
    wanted = [f"u{n}@x.io" for n in range(0, 450, 3)] + ["gone@x.io"]
    notifier_.resolve(wanted)
    assert web.pages == 3  # 450 members, 200 a page
    assert web.lookups == []
    assert directory.reads == 1  # the table asked once for all of them, not once each
    assert directory.ids["u3@x.io"] == "U0003"
    assert directory.ids["gone@x.io"] is None  # not in the workspace: the alerts channel, without asking again
    assert notifier_.user_id_for("u9@x.io") == "U0009"
    assert web.lookups == []


def test_two_threads_never_look_up_the_same_email_at_once() -> None:
    started = threading.Event()

    class Slow(FakeWebClient):
        def users_lookupByEmail(self, email: str) -> dict[str, Any]:
            started.set()
            time.sleep(0.05)
            return super().users_lookupByEmail(email)

    web = Slow(users={"a@x.io": "U1"})
    shared = notifier(web)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: shared.user_id_for("a@x.io"), range(8)))
    assert answers == ["U1"] * 8
    assert web.lookups == ["a@x.io"]


def test_a_kept_id_slack_no_longer_knows_is_forgotten_and_asked_again() -> None:
    directory = Directory()
    directory.put("a@x.io", "U0OLD")
    web = Workspace({"a@x.io": "U0NEW"})
    web.dm_errors["U0OLD"] = "channel_not_found"
    delivery = with_directory(web, directory).send_to_owner("a@x.io", MESSAGE, fallback_channel="C0", owner="a")
    assert delivery.channel == "C0"  # told in the channel this time, nothing lost
    assert "a@x.io" not in directory.ids
    again = with_directory(web, directory).send_to_owner("a@x.io", MESSAGE, fallback_channel="C0", owner="a")
    assert again.channel == "U0NEW"


def test_posts_to_one_channel_go_a_second_apart_and_other_channels_do_not_wait() -> None:
    clock = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    web = FakeWebClient()
    shared = notifier(web)
    shared.pace = ChannelPace(clock=lambda: clock[0], sleep=sleep)
    for _ in range(3):
        shared.post("C0ALERTS", MESSAGE)
    shared.post("C0OTHER", MESSAGE)
    assert slept == [1.0, 1.0]  # the second and third alerts; the other channel posts at once
    clock[0] += 5
    shared.post("C0ALERTS", MESSAGE)  # a second has long passed: no wait
    assert slept == [1.0, 1.0]


def test_the_next_post_to_a_channel_waits_a_second_from_the_last_ones_answer_not_from_its_slot() -> None:
    clock = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    class Slow(FakeWebClient):
        def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
            clock[0] += 0.4  # Slack answered 0.4 s after the post left (or after a 429's wait)
            return super().chat_postMessage(**kwargs)

    shared = notifier(Slow())
    shared.pace = ChannelPace(clock=lambda: clock[0], sleep=sleep)
    shared.post("C0DIGEST", MESSAGE)  # sent at 100.0, answered at 100.4
    shared.post("C0DIGEST", MESSAGE, thread_ts="1.1")  # a reply: not before 101.4
    assert slept == [pytest.approx(1.0)]
    assert clock[0] == pytest.approx(101.8)


class Threads(FakeWebClient):
    """A channel's history and one thread's replies, as Slack keeps them apart: the history holds no reply."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    def conversations_history(self, **kwargs: Any) -> dict[str, Any]:
        self.read.append("history")
        return {"messages": [{"ts": "1.1", "blocks": [{"block_id": "cg-post"}]}]}

    def conversations_replies(self, **kwargs: Any) -> dict[str, Any]:
        self.read.append(f"replies of {kwargs['ts']}")
        return {"messages": [{"ts": "1.2", "blocks": [{"block_id": "cg-reply"}]}]}


def test_a_reply_goes_to_its_thread_and_is_looked_for_among_the_threads_replies() -> None:
    web = Threads()
    notifier = SlackNotifier(SlackCredentials(bot_token="xoxb-t"), web_client=web)  # type: ignore[arg-type]
    notifier.post("C1", MESSAGE, thread_ts="1.1")
    notifier.post("C1", MESSAGE)
    assert [p.get("thread_ts") for p in web.posts] == ["1.1", None]  # no thread: not a reply
    assert set(notifier.find("C1", 0.0, ["cg-post", "cg-reply"])) == {"cg-post"}
    assert set(notifier.find("C1", 0.0, ["cg-post", "cg-reply"], thread_ts="1.1")) == {"cg-reply"}
    assert web.read == ["history", "replies of 1.1"]


MARKED = Message("i-1 is stopped", (section("i-1 is stopped"),)).marked("cg-stop-i-1-20261121T1400Z")


class AnswerLost:
    """Slack takes each post and then the answer is lost (`lose` of them: a timeout, a 5xx); its history and
    threads show what it took."""

    def __init__(self, lose: int, error: BaseException) -> None:
        self.lose, self.error = lose, error
        self.posts: list[dict[str, Any]] = []
        self.read: list[str] = []

    def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        self.posts.append({**kwargs, "ts": f"2.{len(self.posts) + 1}"})
        if self.lose > 0:
            self.lose -= 1
            raise self.error
        return {"ok": True, "channel": kwargs["channel"], "ts": self.posts[-1]["ts"]}

    def conversations_history(self, **kwargs: Any) -> dict[str, Any]:
        self.read.append("history")
        shown = [p for p in self.posts if p["channel"] == kwargs["channel"] and not p.get("thread_ts")]
        return {"messages": [{"ts": p["ts"], "blocks": p["blocks"]} for p in reversed(shown)]}

    def conversations_replies(self, **kwargs: Any) -> dict[str, Any]:
        self.read.append(f"replies of {kwargs['ts']}")
        parent = {"ts": kwargs["ts"], "blocks": MARKED.slack_blocks()}  # a thread's replies begin with its parent
        replies = [p for p in self.posts if p.get("thread_ts") == kwargs["ts"]]
        return {"messages": [parent, *({"ts": p["ts"], "blocks": p["blocks"]} for p in replies)]}


@pytest.mark.parametrize("error", [TimeoutError("The read operation timed out"), slack_error("fatal_error", 503)])
def test_a_post_slack_took_before_its_answer_was_lost_is_found_and_not_posted_again(error: BaseException) -> None:
    web, hook = AnswerLost(1, error), FakeWebhook()
    delivery = notifier(web, hook).post("C0ALERTS", MARKED)  # type: ignore[arg-type]
    assert (delivery.route, delivery.channel, delivery.ts) == ("bot", "C0ALERTS", "2.1")
    assert len(web.posts) == 1
    assert web.read == ["history"]
    assert hook.sent == []


def test_a_reply_whose_answer_was_lost_is_looked_for_in_its_thread_never_posted_by_the_webhook() -> None:
    web, hook = AnswerLost(1, slack_error("fatal_error", 500)), FakeWebhook()
    delivery = notifier(web, hook).post("C0ALERTS", MARKED, thread_ts="1.1", broadcast=True)  # type: ignore[arg-type]
    assert delivery.ts == "2.1"  # the reply, not its parent (which carries a block id of its own)
    assert [(p["thread_ts"], p["reply_broadcast"]) for p in web.posts] == [("1.1", True)]
    assert web.read == ["replies of 1.1"]
    assert hook.sent == []


def test_a_post_slack_did_not_take_is_posted_again_once_its_history_shows_it_is_not_there() -> None:
    web = AnswerLost(1, slack_error("fatal_error", 503))
    web.chat_postMessage = _refused_first(web)  # type: ignore[method-assign]
    delivery = notifier(web).post("C0ALERTS", MARKED)  # type: ignore[arg-type]
    assert [p["ts"] for p in web.posts] == ["2.1"]  # the first never made: one message
    assert delivery.ts == "2.1"


def _refused_first(web: AnswerLost) -> Any:
    """A 503 before Slack took the post: nothing in its history."""
    taken = web.chat_postMessage
    failed: list[int] = []

    def post(**kwargs: Any) -> dict[str, Any]:
        if not failed:
            failed.append(1)
            raise slack_error("fatal_error", 503)
        web.lose = 0
        return taken(**kwargs)

    return post


def test_a_reply_that_cannot_be_posted_is_not_sent_to_the_channel_by_the_webhook() -> None:
    web, hook = FakeWebClient(fail_posts={"C0DIGEST": "not_in_channel"}), FakeWebhook()
    with pytest.raises(SlackDeliveryError, match="not_in_channel"):
        notifier(web, hook).post("C0DIGEST", MESSAGE, thread_ts="1.1")
    assert hook.sent == []


def test_the_webhook_is_only_for_a_bot_that_cannot_post_not_for_one_slack_holds_back() -> None:
    web, hook = FakeWebClient(fail_posts={"C0ALERTS": "ratelimited"}), FakeWebhook()
    with pytest.raises(SlackDeliveryError, match="ratelimited"):
        notifier(web, hook).post("C0ALERTS", MESSAGE)
    assert hook.sent == []


def test_a_direct_message_whose_answer_was_lost_is_found_in_the_dm_and_not_posted_to_the_channel() -> None:
    web = AnswerLost(1, TimeoutError("The read operation timed out"))
    web.users_lookupByEmail = lambda email: {"ok": True, "user": {"id": "U0ALICE"}}  # type: ignore[attr-defined]
    web.conversations_open = lambda users: {"ok": True, "channel": {"id": "U0ALICE"}}  # type: ignore[attr-defined]
    delivery = notifier(web).send_to_owner(  # type: ignore[arg-type]
        "alice@x.io", MARKED, fallback_channel="C0ALERTS", owner="alice"
    )
    assert (delivery.channel, delivery.ts, delivery.direct) == ("U0ALICE", "2.1", True)
    assert [p["channel"] for p in web.posts] == ["U0ALICE"]
