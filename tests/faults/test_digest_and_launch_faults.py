"""The weekly digest sent in parts (a failed chart, reply in its thread or direct message is sent by the retry,
nothing else twice), and a launch event delivered twice."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import boto3
import pytest

from costguard.core import tags
from costguard.runtime import Runtime
from testing.handlers import load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, TABLE, tags_of
from tests.integration.test_owner_tagger import event_for, launch
from tests.integration.test_weekly_digest import launch as launch_gpu
from tests.integration.test_weekly_digest import now, publish_hours

__all__ = ["now"]
digest = load_handler("weekly_digest")
owner_tagger = load_handler("owner_tagger").lambda_handler


def test_a_chart_that_failed_to_upload_is_sent_by_the_retry_and_nothing_else_twice(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: Any
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch_gpu("g5.xlarge", "alice@example.com", "nlp", now)
    publish_hours(iid, 1, now - timedelta(days=1), 12, cpu=2, gpu=1)  # $12.07 idle: alice has something to act on
    slack.fail("upload", 500, count=1)

    with pytest.raises(Exception, match="chart"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert len(slack.messages) == 4  # the channel's post, its two replies and alice's message went out
    assert slack.files == []
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert len(slack.messages) == 4
    assert len(slack.files) == 1


def test_a_reply_that_failed_is_posted_by_the_retry_in_the_same_thread_and_the_post_is_not_posted_again(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: Any
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch_gpu("g5.xlarge", "alice@example.com", "nlp", now)
    publish_hours(iid, 1, now - timedelta(days=1), 12, cpu=2, gpu=1)
    threads: dict[str, str] = {}  # a post's ts -> the thread's (the stand-in keeps no threads)
    answer, refused = slack._api, list[Any]()

    def once_refusing_a_reply(method: str, args: Any) -> Any:
        if method == "chat.postMessage" and args.get("thread_ts") and not refused:
            refused.append(args)
            return {"ok": False, "error": "fatal_error"}  # Slack refused it: it did not go out
        out = answer(method, args)
        if method == "chat.postMessage" and args.get("thread_ts"):
            threads[out["ts"]] = str(args["thread_ts"])
        return out

    monkeypatch.setattr(slack, "_api", once_refusing_a_reply)
    slack.fail("webhook", 500, count=3)  # and the webhook, the fallback, is down too (its two retries too)

    with pytest.raises(Exception, match="owners"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    post, *rest = [m for m in slack.messages if m.channel == "C0DIGEST"]
    assert [threads.get(m.ts) for m in rest] == [post.ts]  # housekeeping went; the owners' reply did not
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    channel = [m for m in slack.messages if m.channel == "C0DIGEST"]
    assert channel[0] is post  # the post once
    assert [threads.get(m.ts) for m in channel[1:]] == [post.ts, post.ts]  # both replies, in its thread
    assert channel[-1].text == "GPU week: idle cost by owner"


def test_an_owner_message_that_failed_is_sent_by_the_retry(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: Any
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch_gpu("g5.xlarge", "alice@example.com", "nlp", now)
    publish_hours(iid, 1, now - timedelta(days=1), 12, cpu=2, gpu=1)  # $12.07 idle: alice has something to act on
    slack.fail("users.lookupByEmail", 500, count=3)

    with pytest.raises(Exception, match="alice"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert sorted(m.channel for m in slack.messages) == ["C0DIGEST", "C0DIGEST", "C0DIGEST", "U0ALICE"]
    assert len(slack.files) == 1


def test_a_launch_event_delivered_twice_keeps_its_owner_source_and_is_recorded_once(
    runtime: Runtime, lambda_context: Any
) -> None:
    iid = launch()
    event = event_for("runinstances-iam-user.json", iid)
    owner_tagger(event, lambda_context, runtime=runtime)
    owner_tagger(event, lambda_context, runtime=runtime)

    assert tags_of(iid)[tags.OWNER_SOURCE] == "iam-user"
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert len([i for i in items if i.get("instance_id", {}).get("S") == iid]) == 1


def test_owner_messages_stop_before_the_timeout_and_the_retry_sends_only_the_rest(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: Any
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    for owner in ("alice@example.com", "carol@example.com"):
        publish_hours(
            launch_gpu("g5.xlarge", owner, "nlp", now), 1, now - timedelta(days=1), 12, cpu=2, gpu=1
        )  # $12.07 idle each: each owner has something to act on
    monkeypatch.setattr(runtime, "time_left", lambda: 30.0)  # the channel's post, then too little time

    with pytest.raises(Exception, match="time"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert [m.direct for m in slack.messages] == [False] * 3  # the channel's post and thread; no owner started late
    monkeypatch.setattr(runtime, "time_left", lambda: 500.0)
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert sorted(m.channel for m in slack.messages if m.direct) == ["U0ALICE", "U0CAROL"]
    assert sum(1 for m in slack.messages if not m.direct) == 3  # the channel's post and its two replies, once
