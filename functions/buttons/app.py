"""buttons: acts on the clicks the slack_receiver function verified and queued (SQS, one at a time):
who may act, the action itself (once), and the message updated. It has no public endpoint.

A queued click that is not what the receiver queues is refused with EventValidationError: it goes back
to the queue, then to the dead-letter queue, whose alarm says so.
"""

from __future__ import annotations

from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from costguard.aws.ec2 import Ec2
from costguard.aws.sagemaker import SageMaker
from costguard.buttons.clicks import handle_clicks, sagemaker_clicks
from costguard.buttons.worker import ClickWorker
from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import ButtonSettings
from costguard.runtime import Runtime
from costguard.slack.interactions import Click
from costguard.slack.notifier import post_response
from costguard.state.live import LiveMessages


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    records = shapes.items(shapes.obj(event, "event").get("Records"), "Records")
    if not records:
        raise EventValidationError("buttons expects SQS records of queued clicks")
    clicks = [Click.from_json(shapes.obj(r, "Records[]").get("body")) for r in records]
    live = (runtime or Runtime.current()).start(context)
    settings, actions = live.settings, _settings()

    def sagemaker_for(region: str) -> SageMaker:
        client = live.client("sagemaker", region)
        return SageMaker(client, region, settings.mode, account=live.account, owner_tag_key=settings.owner_tag_key)

    worker = ClickWorker(
        ec2_for=lambda region: Ec2(live.client("ec2", region), region, settings.mode),
        notifier=live.notifier,
        ledger=live.ledger,
        claims=live.claims,
        respond=post_response,
        accelerated=actions.is_accelerated,
        mode=settings.mode,
        owner_tag_key=settings.owner_tag_key,
        email_domain=settings.email_domain,
        admins=actions.admins,
        zone=ZoneInfo(actions.timezone),
        account=live.account,
        sagemaker=sagemaker_clicks(actions.sagemaker_governed, sagemaker_for, actions.is_accelerated_ml),
        live=LiveMessages(live.client("dynamodb"), settings.state_table, lambda: live.notifier),
    )
    return handle_clicks(worker, clicks, live.now)


@cache
def _settings() -> ButtonSettings:
    return ButtonSettings.from_env()
