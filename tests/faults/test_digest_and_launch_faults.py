"""The weekly digest sent in parts (a failed chart or direct message is sent by the retry, nothing else
twice), and a launch event delivered twice."""

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
    publish_hours(iid, 1, now - timedelta(days=1), 3, cpu=2, gpu=1)  # idle hours: each owner has something to read
    slack.fail("upload", 500, count=1)

    with pytest.raises(Exception, match="chart"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert len(slack.messages) == 2  # the channel's digest and alice's message went out
    assert slack.files == []
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert len(slack.messages) == 2
    assert len(slack.files) == 1


def test_an_owner_message_that_failed_is_sent_by_the_retry(
    runtime: Runtime, slack: SlackStandIn, lambda_context: Any, monkeypatch: pytest.MonkeyPatch, now: Any
) -> None:
    monkeypatch.setattr(runtime, "now", lambda: now)
    iid = launch_gpu("g5.xlarge", "alice@example.com", "nlp", now)
    publish_hours(iid, 1, now - timedelta(days=1), 3, cpu=2, gpu=1)  # idle hours: each owner has something to read
    slack.fail("users.lookupByEmail", 500, count=3)

    with pytest.raises(Exception, match="alice"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)

    assert sorted(m.channel for m in slack.messages) == ["C0DIGEST", "U0ALICE"]
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
            launch_gpu("g5.xlarge", owner, "nlp", now), 1, now - timedelta(days=1), 3, cpu=2, gpu=1
        )  # idle hours: each owner has something to read
    monkeypatch.setattr(runtime, "time_left", lambda: 30.0)  # the channel's post, then too little time

    with pytest.raises(Exception, match="time"):
        digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert [m.direct for m in slack.messages] == [False]  # the channel's digest; no owner started late
    monkeypatch.setattr(runtime, "time_left", lambda: 500.0)
    digest.lambda_handler(load_event("weekly_digest/weekly.json"), lambda_context, runtime=runtime)
    assert sorted(m.channel for m in slack.messages if m.direct) == ["U0ALICE", "U0CAROL"]
    assert sum(1 for m in slack.messages if not m.direct) == 1  # the channel's digest once
