"""Every handler, fed thousands of mutated real-shaped events: 0 unhandled exceptions.

A mutated event may be answered (a result, a Skipped, a 4xx for the public endpoint) or refused with
the one error type, EventValidationError, whose message says what is wrong. Anything else (a
KeyError, a TypeError, an AttributeError from deep inside, a 5xx) is counted as unhandled. And no
mutation may stop a machine or write an owner tag that is not a plain name.
"""

from __future__ import annotations

import base64
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import boto3
import pytest

from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger
from costguard.runtime import Runtime
from costguard.slack.interactions import parse_interaction
from costguard.slack.signature import sign
from testing.fuzz import mutants
from testing.handlers import EVENTS, LambdaContext, load_event, load_handler
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, make_runtime, tags_of

SIGNING_SECRET = "fuzz-signing-secret"
PER_HANDLER = 1000
# The counts of one run: under pytest's temporary directory (a test writes no tracked file); `make bench`
# (bench/fuzz.py) runs this file with its own --basetemp and saves them to bench/results/fuzz.json.
RESULTS_NAME = "fuzz.json"
HANDLERS = ["owner_tagger", "idle_stopper", "budget_alerts", "commitment_tracker", "weekly_digest"]
PLAIN_OWNER = re.compile(r"^[^\[\]{}()'\"]*$")


@pytest.fixture(scope="session")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.getbasetemp() / RESULTS_NAME


@pytest.fixture
def world(results: Path, aws: None, slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    runtime = make_runtime(slack)
    runtime.slack_pace = 0.0  # thousands of posts to one channel: the stand-in enforces no rate limit
    secret = json.dumps({"bot_token": slack.token, "signing_secret": SIGNING_SECRET})
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(SecretId="costguard/slack", SecretString=secret)
    queue = boto3.client("sqs", region_name=REGION).create_queue(QueueName="costguard-clicks")["QueueUrl"]
    monkeypatch.setenv("CLICK_QUEUE_URL", queue)
    monkeypatch.setenv("SLACK_ADMINS", "U0ADMIN")
    instance = boto3.client("ec2", region_name=REGION).run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="g5.12xlarge"
    )["Instances"][0]["InstanceId"]
    level = logger.log_level
    logger.setLevel("CRITICAL")  # thousands of refusals: the counts are what is read
    yield {"runtime": runtime, "instance": instance, "queue": queue, "results": results}
    logger.setLevel(level)


def seeds(folder: str, instance: str) -> list[Any]:
    """The function's own events, naming the fuzz world's instance."""

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(v) for v in value]
        return instance if isinstance(value, str) and shapes.INSTANCE_ID.match(value) else value

    return [rename(load_event(f"{folder}/{p.name}")) for p in sorted((EVENTS / folder).glob("*.json"))]


def click_body(instance: str, slack: SlackStandIn) -> str:
    payload: dict[str, Any] = load_event("slack_receiver/block-actions-keep-2h.json")
    payload["actions"][0]["value"] = json.dumps({"i": instance, "r": REGION}, separators=(",", ":"))
    payload["response_url"] = slack.response_url("1.1")
    return json.dumps(payload)


def signed_request(body: bytes, now: datetime) -> dict[str, Any]:
    event: dict[str, Any] = load_event("slack_receiver/function-url-request.json")
    timestamp = str(int(now.timestamp()))
    event["headers"]["x-slack-request-timestamp"] = timestamp
    event["headers"]["x-slack-signature"] = sign(SIGNING_SECRET, timestamp, body)
    event["body"] = base64.b64encode(body).decode()
    return event


def fuzz(call: Callable[[Any], Any], events: list[Any], count: int, seed: int) -> tuple[Counter[str], list[str]]:
    """Outcomes by kind, and what each unhandled exception was."""
    outcomes: Counter[str] = Counter()
    unhandled: list[str] = []
    for mutant in mutants(events, count, seed):
        try:
            answer = call(mutant.event)
        except EventValidationError:
            outcomes["refused"] += 1
            continue
        except Exception as exc:  # the thing counted
            outcomes["unhandled"] += 1
            unhandled.append(f"seed {mutant.seed} ({mutant.what}): {type(exc).__name__}: {str(exc)[:120]}")
            continue
        status = answer.get("statusCode") if isinstance(answer, dict) else None
        if isinstance(status, int) and status >= 500:
            outcomes["unhandled"] += 1
            unhandled.append(f"seed {mutant.seed} ({mutant.what}): HTTP {status}")
        else:
            outcomes[f"answered {status}" if status else "answered"] += 1
    return outcomes, unhandled


def invoke(function: str, runtime: Runtime) -> Callable[[Any], Any]:
    handler = load_handler(function).lambda_handler
    return lambda event: handler(event, LambdaContext(), runtime=runtime)


def report(results: Path, function: str, outcomes: Counter[str], unhandled: list[str]) -> None:
    """The counts go to the run's fuzz.json (docs/security.md reports them); any unhandled one fails."""
    counts = json.loads(results.read_text()) if results.exists() else {}
    counts[function] = {"events": sum(outcomes.values()), **dict(sorted(outcomes.items()))}
    results.write_text(json.dumps(dict(sorted(counts.items())), indent=1) + "\n")
    total = sum(outcomes.values())
    assert not unhandled, f"{function}: {len(unhandled)} unhandled of {total}:\n" + "\n".join(unhandled[:15])


@pytest.mark.parametrize(
    "function", ["owner_tagger", "idle_stopper", "budget_alerts", "commitment_tracker", "weekly_digest"]
)
def test_scheduled_and_event_handlers_refuse_garbage_clearly(function: str, world: dict[str, Any]) -> None:
    events = seeds(function, world["instance"])
    outcomes, unhandled = fuzz(invoke(function, world["runtime"]), events, PER_HANDLER, seed=len(function))
    assert tags_of(world["instance"]).get("Owner", "") == "" or PLAIN_OWNER.match(tags_of(world["instance"])["Owner"])
    state = boto3.client("ec2", region_name=REGION).describe_instances(InstanceIds=[world["instance"]])
    assert state["Reservations"][0]["Instances"][0]["State"]["Name"] == "running"  # no mutation stops a machine
    report(world["results"], function, outcomes, unhandled)


def test_the_click_worker_refuses_garbage_clearly(world: dict[str, Any], slack: SlackStandIn) -> None:
    click = parse_interaction(urlencode({"payload": click_body(world["instance"], slack)}))
    assert click is not None
    record = {"messageId": "1", "body": click.to_json(), "eventSource": "aws:sqs"}
    outcomes, unhandled = fuzz(invoke("buttons", world["runtime"]), [{"Records": [record]}], PER_HANDLER, seed=7)
    report(world["results"], "buttons", outcomes, unhandled)


def test_the_public_endpoint_answers_401_400_or_200_and_never_fails(
    world: dict[str, Any], slack: SlackStandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime: Runtime = world["runtime"]
    now = datetime.now(UTC)
    monkeypatch.setattr(runtime, "now", lambda: now)
    call = invoke("slack_receiver", runtime)
    good = urlencode({"payload": click_body(world["instance"], slack)}).encode()
    # Anything on the wire: the request itself mutated (headers, encoding, body).
    outcomes, unhandled = fuzz(call, [signed_request(good, now)], PER_HANDLER, seed=11)
    # Signed by Slack but malformed inside: the payload mutated, then signed.
    inside = Counter[str]()
    for mutant in mutants([json.loads(click_body(world["instance"], slack))], PER_HANDLER, seed=13):
        body = urlencode({"payload": json.dumps(mutant.event)}).encode()
        try:
            answer = call(signed_request(body, now))
            inside[f"answered {answer['statusCode']}"] += 1
            if answer["statusCode"] >= 500:
                unhandled.append(f"signed seed {mutant.seed} ({mutant.what}): HTTP {answer['statusCode']}")
        except Exception as exc:  # the thing counted
            inside["unhandled"] += 1
            unhandled.append(f"signed seed {mutant.seed} ({mutant.what}): {type(exc).__name__}: {str(exc)[:120]}")
    report(world["results"], "slack_receiver", outcomes + inside, unhandled)
