"""The receiver's one job, behind the only public endpoint: verify a Slack request, read the click, route it to
the click queue of the machine's account, queue it, and answer Slack. Nothing else: no EC2, no table.

- 401: the request is not provably Slack's (no or bad signature, stale, unreadable on the wire);
- 400: signed by Slack but not a payload costguard understands, or for an account this hub does not serve;
- 200: queued (or an interaction that is not a costguard button, ignored);
- 503: the signing secret or the queue could not be reached: the click was not taken, and Slack
  shows the person an error so they press again (never a 200 for a click that was dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError
from botocore.exceptions import BotoCoreError, ClientError

from costguard.aws.queues import Mailbox
from costguard.core.errors import ConfigError, EventValidationError
from costguard.core.observability import logger, metrics
from costguard.core.settings import ReceiverSettings
from costguard.core.shapes import shape
from costguard.slack.interactions import parse_interaction
from costguard.slack.requests import read_request
from costguard.slack.routing import NotAMember, route
from costguard.slack.signature import SignatureError, verify


def receive(
    event: Any,
    *,
    signing_secret: Callable[[], str],
    settings: Callable[[], ReceiverSettings],
    queue: Callable[[str | None, str], Mailbox],
    own_account: str,
    now: Callable[[], datetime],
) -> dict[str, Any]:
    """The Function URL's answer to one request. `settings` is read only for a verified click (a request that
    is not one is refused the same, whatever the configuration); `queue` is the mailbox of (region, URL)."""
    request = read_request(event)
    try:
        secret = signing_secret()
    except (ClientError, BotoCoreError, GetParameterError, ConfigError) as exc:
        return _unavailable("slack signing secret unreadable", exc)
    try:
        if request.problem:
            raise SignatureError(request.problem)
        verify(secret, request.timestamp, request.signature, request.body, now=now().timestamp())
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
    routes = settings()
    try:
        region, url = route(
            click.account,
            own_account=own_account,
            own_queue=routes.queue_url,
            members=routes.members,
            region=click.region,
            organization_queue=routes.member_queue_name,
        )
    except NotAMember as exc:
        logger.warning("slack click refused", reason=str(exc), user=click.user_id, instance_id=click.instance_id)
        metrics.add_metric(name="SlackClicksRefused", unit=MetricUnit.Count, value=1)
        return {"statusCode": 400, "body": "not a member account"}
    try:
        queue(region or None, url).send(click.to_json())
    except (ClientError, BotoCoreError) as exc:
        return _unavailable(f"click not queued for account {click.account or own_account}", exc)
    metrics.add_metric(name="ButtonClicksQueued", unit=MetricUnit.Count, value=1)
    return {"statusCode": 200, "body": ""}


def _unavailable(what: str, exc: BaseException) -> dict[str, Any]:
    logger.error(what, error=f"{type(exc).__name__}: {exc}")
    metrics.add_metric(name="SlackRequestsUnavailable", unit=MetricUnit.Count, value=1)
    return {"statusCode": 503, "body": "try again"}
