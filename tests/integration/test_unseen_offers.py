"""A machine costguard cannot look inside, through the handlers against moto: no SSM agent answers its activity check
and it sends no GPU metrics, so costguard warns its owner once and never stops it. On a weekday its owner is asked,
once that day, in a message of their own, whether anything runs on it unless they start it. "Nothing runs unseen"
tags it `costguard:unseen-work=none`: it is then judged by its CPU and network, not stopped in its owner's working
day (a job of theirs that waits on a queue would show nothing), warned and stopped in their evening. "No, keep
holding it" tags it `maybe`: held as before, and not asked again."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, TABLE, report, tags_of
from tests.integration.test_buttons import env
from tests.integration.test_hook_offers import sweep, weekday_morning
from tests.integration.test_idle_stopper import idle, launch, publish, state_of
from tests.integration.test_live_messages import buttons, header, press

pytestmark = pytest.mark.usefixtures("times_in_readers_zones", "clicks_verified")

__all__ = ["env"]
OFFER = "Does anything run on it unless you start it?"


def offers(slack: SlackStandIn) -> list[Any]:
    return [m for m in slack.messages if m.blocks and header(m).startswith(OFFER)]


def unseen_box(at: datetime) -> str:
    """A machine up for days, idle by its CPU for hours: no GPU metrics, and (not among the check's answers) no SSM
    agent."""
    iid = launch(at, hours=24 * 3)
    publish(iid, at, cpu=idle(48))
    return iid


def idle_sweep(runtime: Runtime, iid: str, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    publish(iid, at, cpu=idle(48))
    return sweep(runtime, at, context, monkeypatch)


def test_the_owner_of_a_machine_nothing_sees_into_is_asked_and_their_word_has_it_stopped_in_their_evening(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)  # 10:00 on the team's clock (UTC), its owner's too
    iid = unseen_box(at)

    result = sweep(runtime, at, lambda_context, monkeypatch)

    assert result["warned"] == [iid]  # warned, as before: it will not be stopped
    [offer] = offers(slack)
    assert offer.direct  # to its owner, in a message of their own
    said = as_read(offer.blocks)
    assert f"cannot look inside `{iid}`" in said
    assert "sends no GPU metrics either" in said
    assert f"{tags.UNSEEN_WORK}={tags.NOTHING_UNSEEN}" in said
    assert "DefaultHostManagement=true" in said  # how to let costguard see inside it
    assert buttons(offer) == [Button.NOTHING_UNSEEN.value, Button.KEEP_HOLDING.value]
    idle_sweep(runtime, iid, at + timedelta(minutes=15), lambda_context, monkeypatch)
    assert len(offers(slack)) == 1  # once a day
    assert state_of(iid) == "running"

    clicked = at + timedelta(minutes=20)
    result = press(slack, offer, Button.NOTHING_UNSEEN.value, runtime, env, clicked, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.NOTHING_UNSEEN.value, "status": "done"}]
    assert tags_of(iid)[tags.UNSEEN_WORK] == tags.NOTHING_UNSEEN
    assert "says nothing runs on" in as_read(offer.blocks)
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]  # a word

    # Judged by its CPU now, but not stopped in its owner's working day: a job of theirs may be waiting, unseen.
    afternoon = at.replace(hour=15)
    assert idle_sweep(runtime, iid, afternoon, lambda_context, monkeypatch)["stopped"] == []
    assert state_of(iid) == "running"
    assert tags.STOP_AFTER not in tags_of(iid)
    evening = at.replace(hour=18, minute=15)
    assert idle_sweep(runtime, iid, evening, lambda_context, monkeypatch)["warned"] == [iid]
    stop_at = formatting.parse_time(tags_of(iid)[tags.STOP_AFTER])
    assert stop_at is not None
    assert idle_sweep(runtime, iid, stop_at + timedelta(minutes=5), lambda_context, monkeypatch)["stopped"] == [iid]
    assert state_of(iid) == "stopped"
    assert len(offers(slack)) == 1


def test_no_keep_holding_it_leaves_it_held_and_ends_the_asking(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid = unseen_box(at)
    sweep(runtime, at, lambda_context, monkeypatch)
    [offer] = offers(slack)

    press(slack, offer, Button.KEEP_HOLDING.value, runtime, env, at + timedelta(minutes=5), lambda_context, monkeypatch)

    assert tags_of(iid)[tags.UNSEEN_WORK] == tags.MAYBE_UNSEEN
    assert "will not ask again" in as_read(offer.blocks)
    night = at.replace(hour=22)
    assert idle_sweep(runtime, iid, night, lambda_context, monkeypatch)["stopped"] == []  # held, as before
    assert state_of(iid) == "running"
    tomorrow = weekday_morning(at)
    idle_sweep(runtime, iid, tomorrow, lambda_context, monkeypatch)
    assert len(offers(slack)) == 1  # not asked again


def test_a_machine_whose_own_check_sees_its_gpus_is_not_asked(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid = unseen_box(at)
    answers[iid] = report()  # its SSM agent answers: its check can see its GPUs
    sweep(runtime, at, lambda_context, monkeypatch)
    assert offers(slack) == []


def test_an_unanswered_unseen_offer_is_asked_on_the_weekdays_of_a_week_then_left(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = weekday_morning(now)
    iid = unseen_box(at)
    sweep(runtime, at, lambda_context, monkeypatch)
    idle_sweep(runtime, iid, weekday_morning(at), lambda_context, monkeypatch)
    assert len(offers(slack)) == 2  # asked again the next weekday
    idle_sweep(runtime, iid, weekday_morning(at + timedelta(days=7)), lambda_context, monkeypatch)
    assert len(offers(slack)) == 2  # a week after the first: not asked again
