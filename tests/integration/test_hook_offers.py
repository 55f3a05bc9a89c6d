"""A keep-alive hook that holds an idle machine, through the handlers against moto: a nightly box whose owner's hook
always says keep ("kept for its 01:00 run") is not warned while it idles; on a weekday its owner is asked, once
that day, in a message of their own, whether costguard should keep it for its runs instead. "Keep it for its runs"
tags it `costguard:keep-for-runs=ignore-hook` (recorded in the ledger as a keep): it is then warned as it idles,
stopped after the grace and started before its job, its hook no longer asked. "No, its hook decides" tags it
`off`: it stays kept by its hook, and is not asked again."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, TABLE, ec2, report, tags_of
from tests.integration.test_activity_check import POLICY
from tests.integration.test_buttons import env
from tests.integration.test_idle_stopper import app, idle, launch, publish, state_of
from tests.integration.test_live_messages import buttons, header, press

pytestmark = pytest.mark.usefixtures("times_in_readers_zones", "clicks_verified")

__all__ = ["env"]
OFFER = "Keep it for its runs instead of its hook?"
HOOK = {"exit": 0, "line": "nightly feature pipeline box: kept for its 01:00 run"}


def sweep(runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    result: dict[str, Any] = app.lambda_handler({"costguard": "sweep"}, context, runtime=runtime, policy=POLICY)
    return result["regions"][REGION]  # type: ignore[no-any-return]


def weekday_morning(now: datetime) -> datetime:
    """10:00 UTC (the team's clock) of the next weekday after `now`."""
    day = (now + timedelta(days=1)).replace(hour=10, minute=0)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return day


def offers(slack: SlackStandIn) -> list[Any]:
    return [m for m in slack.messages if m.blocks and header(m).startswith(OFFER)]


def hooked_box(answers: dict[str, str | None], at: datetime, owner: str = "alice@example.com") -> tuple[str, datetime]:
    """A box idle for hours whose crontab runs `pipeline.py` at 01:00 UTC and whose owner's hook says keep: it,
    and its job's next run."""
    iid = launch(at, hours=24 * 3, owner=owner)
    publish(iid, at, gpus=[idle(48)], cpu=idle(48))
    job = (at + timedelta(days=1)).replace(hour=1, minute=0)
    crontab = {"tz": "UTC", "found": 1, "list": [{"k": "cron", "s": f"{job:%M %H} * * *", "c": "pipeline.py"}]}
    answers[iid] = report(jobs=crontab, hook=HOOK)
    return iid, job


def offered_box(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[str, datetime, Any]:
    """A hooked box, swept on a weekday morning: it, that morning, and the one offer made about it."""
    at = weekday_morning(now)
    iid, _ = hooked_box(answers, at)
    sweep(runtime, at, context, monkeypatch)
    [offer] = offers(slack)
    return iid, at, offer


def test_an_idle_box_kept_by_its_hook_alone_is_offered_a_keep_for_its_runs_and_one_click_has_it_stopped_between_them(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid, job = hooked_box(answers, at)

    result = sweep(runtime, at, lambda_context, monkeypatch)

    assert result["warned"] == []  # its hook keeps it
    [offer] = offers(slack)
    assert offer.direct  # to its owner, in a message of their own
    said = as_read(offer.blocks)
    assert "your keep-alive hook keeps" in said
    assert "kept for its 01:00 run" in said  # what its hook said
    assert "it runs `pipeline.py` at" in said  # its runs, from its own crontab
    assert f"{tags.KEEP_FOR_RUNS}={tags.IGNORE_HOOK}" in said
    assert buttons(offer) == [Button.FOR_RUNS_NOT_HOOK.value, Button.KEEP_HOOK.value]
    publish(iid, at + timedelta(minutes=15), gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, at + timedelta(minutes=15), lambda_context, monkeypatch)
    assert len(offers(slack)) == 1  # once a day

    clicked = at + timedelta(minutes=20)
    result = press(slack, offer, Button.FOR_RUNS_NOT_HOOK.value, runtime, env, clicked, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.FOR_RUNS_NOT_HOOK.value, "status": "done"}]
    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == tags.IGNORE_HOOK
    assert "in place of its keep-alive hook" in as_read(offer.blocks)
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    [keep] = [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]
    assert keep["reason"]["S"].startswith(f"{Button.FOR_RUNS_NOT_HOOK.value} by ")

    # Its hook still says keep; the keep for its runs outranks it: warned, stopped after the grace, started before
    # its job.
    later = at + timedelta(minutes=30)
    publish(iid, later, gpus=[idle(48)], cpu=idle(48))
    assert sweep(runtime, later, lambda_context, monkeypatch)["warned"] == [iid]
    stop_at = formatting.parse_time(tags_of(iid)[tags.STOP_AFTER])
    assert stop_at is not None
    publish(iid, stop_at + timedelta(minutes=5), gpus=[idle(48)], cpu=idle(48))
    assert sweep(runtime, stop_at + timedelta(minutes=5), lambda_context, monkeypatch)["stopped"] == [iid]
    assert state_of(iid) == "stopped"
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == [iid]
    assert len(offers(slack)) == 1


def test_no_its_hook_decides_leaves_it_to_its_hook_and_ends_the_asking(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, at, offer = offered_box(runtime, slack, answers, now, lambda_context, monkeypatch)

    press(slack, offer, Button.KEEP_HOOK.value, runtime, env, at + timedelta(minutes=5), lambda_context, monkeypatch)

    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == tags.OFF
    assert f"left `{iid}` to its keep-alive hook" in as_read(offer.blocks)
    assert "will not ask again" in as_read(offer.blocks)
    tomorrow = weekday_morning(at)
    publish(iid, tomorrow, gpus=[idle(48)], cpu=idle(48))
    assert sweep(runtime, tomorrow, lambda_context, monkeypatch)["warned"] == []  # its hook keeps it, as before
    assert len(offers(slack)) == 1  # not asked again
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]


def test_a_box_kept_by_its_hook_is_not_asked_at_the_weekend(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monday = weekday_morning(now)
    saturday = monday + timedelta(days=5 - monday.weekday())
    hooked_box(answers, saturday)
    assert sweep(runtime, saturday, lambda_context, monkeypatch)["warned"] == []
    assert offers(slack) == []


def test_a_box_kept_by_its_hook_whose_runs_costguard_does_not_know_is_not_asked(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid = launch(at, hours=24 * 3)  # no crontab: nothing would hold it for its runs
    publish(iid, at, gpus=[idle(48)], cpu=idle(48))
    answers[iid] = report(hook=HOOK)
    assert sweep(runtime, at, lambda_context, monkeypatch)["warned"] == []
    assert offers(slack) == []


def test_an_older_offers_answer_never_undoes_a_keep_for_its_runs_given_since(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, at, offer = offered_box(runtime, slack, answers, now, lambda_context, monkeypatch)
    ec2().create_tags(
        Resources=[iid], Tags=[{"Key": tags.KEEP_FOR_RUNS, "Value": tags.ON}]
    )  # kept from a warning since

    result = press(
        slack, offer, Button.KEEP_HOOK.value, runtime, env, at + timedelta(hours=2), lambda_context, monkeypatch
    )

    assert result["clicks"] == [{"instance_id": iid, "button": Button.KEEP_HOOK.value, "status": "refused"}]
    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == tags.ON  # its newer word stands
    assert f"is tagged `{tags.KEEP_FOR_RUNS}={tags.ON}` since this offer was made: that stands" in json.dumps(
        slack.ephemeral[-1]
    )  # to the person who clicked


def test_an_unanswered_hook_offer_is_asked_again_on_the_weekdays_of_a_week_then_left(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid, _ = hooked_box(answers, at)
    sweep(runtime, at, lambda_context, monkeypatch)
    tomorrow = weekday_morning(at)
    publish(iid, tomorrow, gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, tomorrow, lambda_context, monkeypatch)
    assert len(offers(slack)) == 2  # asked again the next weekday

    later = weekday_morning(at + timedelta(days=7))  # a week after the first: not asked again
    publish(iid, later, gpus=[idle(48)], cpu=idle(48))
    sweep(runtime, later, lambda_context, monkeypatch)
    assert len(offers(slack)) == 2


def test_the_hooks_offer_is_an_owners_own_question_never_the_alerts_channels(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    hooked_box(answers, at, owner="stranger@example.com")  # an owner Slack does not know
    assert sweep(runtime, at, lambda_context, monkeypatch)["warned"] == []
    assert offers(slack) == []
