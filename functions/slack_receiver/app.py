"""slack_receiver: the only public endpoint, Slack's interactivity Request URL (a Function URL).

It verifies, queues and answers, and can do nothing else: its role may read the Slack secret and send
to the click queue (and, in a hub, to each member account's click queue), no EC2, no table. The click
is acted on by the buttons function of the machine's account, from its queue.

- 401: the request is not provably Slack's (no or bad signature, stale, unreadable on the wire);
- 400: signed by Slack but not a payload costguard understands, or for an account this hub does not serve;
- 200: queued (or an interaction that is not a costguard button, ignored);
- 503: the signing secret or the queue could not be reached: the click was not taken, and Slack
  shows the person an error so they press again (never a 200 for a click that was dropped).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.errors import ConfigError, EventValidationError
from costguard.core.observability import logger, metrics, tracer
from costguard.core.settings import ReceiverSettings
from costguard.core.shapes import shape
from costguard.runtime import Runtime
from costguard.slack.interactions import parse_interaction
from costguard.slack.requests import read_request
from costguard.slack.routing import NotAMember, route
from costguard.slack.signature import SignatureError, verify


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    request = read_request(event)
    try:
        secret = runtime.slack_credentials().signing_secret
    except (ClientError, BotoCoreError, GetParameterError, ConfigError) as exc:
        return _unavailable("slack signing secret unreadable", exc)
    try:
        if request.problem:
            raise SignatureError(request.problem)
        verify(secret, request.timestamp, request.signature, request.body, now=runtime.now().timestamp())
    except SignatureError as exc:
        logger.warning("slack request refused", reason=str(exc), shape=shape(event, depth=2))
        metrics.add_metric(name="SlackRequestsRefused", unit=MetricUnit.Count, value=1)
        return {"statusCode": 401, "body": "unverified"}
    try:
        click = parse_interaction(request.body.decode("utf-8"))
    except (EventValidationError, UnicodeDecodeError) as exc:
        logger.warning("slack request unreadable", reason=str(exc)[:300])
        metrics.add_metric(name="SlackRequestsUnreadable", unit=MetricUnit.Count, value=1)
        return {"statusCode": 400, "body": "unreadable"}
    if click is None:
        return {"statusCode": 200, "body": ""}
    settings = _settings()
    try:
        region, queue = route(
            click.account, own_account=runtime.account, own_queue=settings.queue_url, members=settings.members
        )
    except NotAMember as exc:
        logger.warning("slack click refused", reason=str(exc), user=click.user_id, instance_id=click.instance_id)
        metrics.add_metric(name="SlackClicksRefused", unit=MetricUnit.Count, value=1)
        return {"statusCode": 400, "body": "not a member account"}
    try:
        runtime.client("sqs", region or None).send_message(QueueUrl=queue, MessageBody=click.to_json())
    except (ClientError, BotoCoreError) as exc:
        return _unavailable(f"click not queued for account {click.account or runtime.account}", exc)
    metrics.add_metric(name="ButtonClicksQueued", unit=MetricUnit.Count, value=1)
    return {"statusCode": 200, "body": ""}


def _unavailable(what: str, exc: BaseException) -> dict[str, Any]:
    logger.error(what, error=f"{type(exc).__name__}: {exc}")
    metrics.add_metric(name="SlackRequestsUnavailable", unit=MetricUnit.Count, value=1)
    return {"statusCode": 503, "body": "try again"}


@cache
def _settings() -> ReceiverSettings:
    return ReceiverSettings.from_env()
