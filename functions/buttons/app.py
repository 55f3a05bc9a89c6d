"""buttons: the buttons on costguard's messages. Two ways in:

- Slack's interactivity request, through the Function URL: the signature is verified (401 and nothing
  else if it fails), the click is queued, and Slack gets its answer well within its 3 seconds;
- the queued click, from SQS: who may act, the action itself (once), and the message updated.
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.ec2 import Ec2
from costguard.buttons.worker import ClickWorker
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics
from costguard.core.settings import ButtonSettings, IdlePolicy
from costguard.runtime import Runtime
from costguard.slack.interactions import Click, parse_interaction
from costguard.slack.notifier import post_response
from costguard.slack.signature import SignatureError, verify


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    if isinstance(event, dict) and isinstance(event.get("Records"), list):
        return work(event, runtime)
    if isinstance(event, dict) and "requestContext" in event and "headers" in event:
        return receive(event, runtime)
    raise EventValidationError("buttons expects a Function URL request or SQS records")


def receive(event: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    """The HTTP side: verify, queue, answer. Nothing is changed here."""
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    try:
        verify(
            runtime.slack_credentials().signing_secret,
            headers.get("x-slack-request-timestamp"),
            headers.get("x-slack-signature"),
            body,
            now=runtime.now().timestamp(),
        )
    except SignatureError as exc:
        logger.warning("slack request refused", reason=str(exc))
        metrics.add_metric(name="SlackRequestsRefused", unit=MetricUnit.Count, value=1)
        return {"statusCode": 401, "body": "unverified"}
    try:
        click = parse_interaction(body.decode())
    except EventValidationError as exc:
        logger.warning("slack request unreadable", reason=str(exc))
        return {"statusCode": 400, "body": "unreadable"}
    if click is None:
        return {"statusCode": 200, "body": ""}
    runtime.client("sqs").send_message(QueueUrl=_settings().queue_url, MessageBody=click.to_json())
    return {"statusCode": 200, "body": ""}


def work(event: dict[str, Any], runtime: Runtime) -> dict[str, Any]:
    """The queued side: act on each click; an exception returns it to the queue for a retry."""
    settings = runtime.settings
    actions = _settings()
    worker = ClickWorker(
        ec2_for=lambda region: Ec2(runtime.client("ec2", region), region, settings.mode),
        notifier=runtime.notifier,
        ledger=runtime.ledger,
        claims=runtime.claims,
        respond=post_response,
        policy=_policy(),
        mode=settings.mode,
        owner_tag_key=settings.owner_tag_key,
        email_domain=settings.email_domain,
        admins=actions.admins,
        zone=ZoneInfo(actions.timezone),
    )
    done = []
    for record in event["Records"]:
        click = Click.from_json(record["body"])
        reply = worker.handle(click, runtime.now())
        metrics.add_metric(name=f"ButtonClick{reply.status.title().replace('-', '')}", unit=MetricUnit.Count, value=1)
        done.append({"instance_id": click.instance_id, "button": click.button.value, "status": reply.status})
    return {"status": "done", "clicks": done}


@cache
def _settings() -> ButtonSettings:
    return ButtonSettings.from_env()


@cache
def _policy() -> IdlePolicy:
    return IdlePolicy.from_env()
