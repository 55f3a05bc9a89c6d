"""A keep that ends, through the handlers against moto: an owner who starts a nightly box costguard stopped and
tags it `costguard:exempt` is offered, the next weekday morning, in a message of their own, to keep it for its
runs instead; one click replaces the exemption with the keep (recorded in the ledger), the machine is stopped
between its runs again with its start before the next; an offer left unanswered is made again the next morning,
and an answer ("No" too) ends the asking."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import boto3
import pytest

from costguard.core import formatting, tags
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.offers import next_morning
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from testing import moto_fixes
from testing.slack_standin import SlackStandIn
from testing.slack_text import as_read
from tests.integration.conftest import REGION, SECRET, TABLE, ec2, tags_of
from tests.integration.test_buttons import SIGNING_SECRET, env
from tests.integration.test_idle_stopper import app, launch, publish, state_of, warn_tags
from tests.integration.test_learned_starts import nightly_history, quarter
from tests.integration.test_live_messages import buttons, header, press

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

__all__ = ["env"]
POLICY = IdlePolicy()  # the team's clock: UTC
OFFER = "Keep it for its runs instead?"


def sweep(runtime: Runtime, at: datetime, context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: at)
    result: dict[str, Any] = app.lambda_handler({"costguard": "sweep"}, context, runtime=runtime, policy=POLICY)
    return result["regions"][REGION]  # type: ignore[no-any-return]


def apart(a: datetime, b: datetime) -> timedelta:
    """How far apart two times of day are, on the day's circle."""
    gap = abs((a - b).total_seconds()) % 86400
    return timedelta(seconds=min(gap, 86400 - gap))


def offers(slack: SlackStandIn) -> list[Any]:
    return [m for m in slack.messages if m.blocks and header(m).startswith(OFFER)]


def exempted_after_stop(
    runtime: Runtime, slack: SlackStandIn, now: datetime, context: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, datetime, datetime]:
    """A box whose job runs an hour a day (far from now and from the next morning, so that neither holds it),
    stopped by costguard now; its owner starts it again 7 hours later and exempts it for good. It, the next
    weekday morning and its last run."""
    secret = {"bot_token": slack.token, "webhook_url": slack.webhook_url, "signing_secret": SIGNING_SECRET}
    secrets = boto3.client("secretsmanager", region_name=REGION)
    secrets.put_secret_value(SecretId=SECRET, SecretString=json.dumps(secret))  # the receiver verifies the click
    restarted = now + timedelta(hours=7)  # when its job found it stopped (not at once: no hold after an undo)
    morning = next_morning(restarted, POLICY.team_timezone)
    run = next(r for k in (2, 3, 4, 5) if apart(r := morning + timedelta(hours=4 * k), now) >= timedelta(hours=4))
    last_run = quarter(run - timedelta(days=(run - now).days + 1))
    iid = launch(now, instance_type="g5.xlarge", hours=24 * 20, tags=warn_tags(now, warned_minutes_ago=40))
    nightly_history(iid, last_run)
    publish(iid, now, gpus=[[1.0] * 30])
    assert sweep(runtime, now, context, monkeypatch)["stopped"] == [iid]  # costguard's stop

    ec2().start_instances(InstanceIds=[iid])
    moto_fixes.set_launch_time(iid, REGION, restarted)
    ec2().create_tags(Resources=[iid], Tags=[{"Key": tags.EXEMPT, "Value": "the nightly job must run"}])
    publish(iid, morning, gpus=[[1.0] * 36])  # idle through the morning
    return iid, morning, last_run


def test_an_exemption_right_after_costguards_stop_is_offered_back_the_next_morning_as_a_keep_for_its_runs(
    runtime: Runtime,
    slack: SlackStandIn,
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, morning, last_run = exempted_after_stop(runtime, slack, now, lambda_context, monkeypatch)

    sweep(runtime, morning, lambda_context, monkeypatch)

    [offer] = offers(slack)
    assert offer.direct  # to its owner, in a message of their own
    assert offer.channel == "U0ALICE"
    said = as_read(offer.blocks)
    assert "you exempted" in said
    assert f"it starts work at about {last_run:%H:%M} UTC" in said
    assert "asks again on weekday mornings for a week until you answer" in said  # as `offers.ASKED_FOR` does
    assert buttons(offer) == [Button.KEEP_FOR_RUNS.value, Button.KEEP_EXEMPT.value]

    at = morning + timedelta(minutes=5)
    result = press(slack, offer, Button.KEEP_FOR_RUNS.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.KEEP_FOR_RUNS.value, "status": "done"}]
    assert tags.EXEMPT not in tags_of(iid)
    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == tags.ON
    assert "in place of its exemption" in as_read(offer.blocks)
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    [keep] = [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]
    assert keep["reason"]["S"].startswith("costguard.keep_for_runs by ")

    # Stopped between its runs again: warned as it idles, stopped after the grace, started before its next run.
    later = morning + timedelta(minutes=15)
    publish(iid, later, gpus=[[1.0] * 36])
    assert sweep(runtime, later, lambda_context, monkeypatch)["warned"] == [iid]
    assert len(offers(slack)) == 1  # offered once
    stop_at = formatting.parse_time(tags_of(iid)[tags.STOP_AFTER])
    assert stop_at is not None
    publish(iid, stop_at + timedelta(minutes=5), gpus=[[1.0] * 36])
    assert sweep(runtime, stop_at + timedelta(minutes=5), lambda_context, monkeypatch)["stopped"] == [iid]
    assert state_of(iid) == "stopped"
    next_run = last_run + timedelta(days=(stop_at - last_run).days + 1)
    start_at = next_run - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)


def test_no_keep_it_exempt_changes_nothing_and_the_offer_is_not_made_again(
    runtime: Runtime,
    slack: SlackStandIn,
    env: str,
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid, morning, _ = exempted_after_stop(runtime, slack, now, lambda_context, monkeypatch)
    sweep(runtime, morning, lambda_context, monkeypatch)
    [offer] = offers(slack)

    at = morning + timedelta(minutes=5)
    result = press(slack, offer, Button.KEEP_EXEMPT.value, runtime, env, at, lambda_context, monkeypatch)

    assert result["clicks"] == [{"instance_id": iid, "button": Button.KEEP_EXEMPT.value, "status": "done"}]
    assert tags_of(iid)[tags.EXEMPT] == "the nightly job must run"
    assert tags_of(iid)[tags.KEEP_FOR_RUNS] == tags.OFF  # the answer, kept where a person sees it
    assert "will not ask again" in as_read(offer.blocks)
    assert buttons(offer) == []
    items = boto3.client("dynamodb", region_name=REGION).scan(TableName=TABLE)["Items"]
    assert not [i for i in items if i["pk"]["S"].startswith("action#") and i["kind"]["S"] == "keep"]
    tomorrow = next_morning(morning, POLICY.team_timezone)
    publish(iid, tomorrow, gpus=[[1.0] * 36])
    sweep(runtime, tomorrow, lambda_context, monkeypatch)
    assert len(offers(slack)) == 1  # asked once


def test_an_offer_left_unanswered_is_asked_again_the_next_morning_and_once_that_morning(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid, morning, _ = exempted_after_stop(runtime, slack, now, lambda_context, monkeypatch)
    sweep(runtime, morning, lambda_context, monkeypatch)
    publish(iid, morning + timedelta(minutes=15), gpus=[[1.0] * 36])
    sweep(runtime, morning + timedelta(minutes=15), lambda_context, monkeypatch)  # the same morning's next sweep
    assert len(offers(slack)) == 1

    tomorrow = next_morning(morning, POLICY.team_timezone)
    publish(iid, tomorrow, gpus=[[1.0] * 36])
    sweep(runtime, tomorrow, lambda_context, monkeypatch)

    first, again = offers(slack)
    assert again.channel == first.channel == "U0ALICE"
    assert buttons(again) == [Button.KEEP_FOR_RUNS.value, Button.KEEP_EXEMPT.value]
    assert tags_of(iid)[tags.EXEMPT] == "the nightly job must run"  # nothing changed without its owner's click


def test_an_offer_that_fails_in_an_unexpected_way_costs_the_sweep_nothing(
    runtime: Runtime, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=40))
    publish(iid, now, gpus=[[0.0] * 48])

    def broken(*_: Any) -> list[str]:
        raise ValueError("an offer's words could not be made")

    monkeypatch.setattr("costguard.idle.acts.daily.KeepOffers.run", broken)
    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == [iid]  # the sweep's own work is done
