"""buttons: acts on the clicks the slack_receiver function verified and queued (SQS, one at a time):
who may act, the action itself (once), and the message updated. It has no public endpoint.

A queued click that is not what the receiver queues is refused with EventValidationError: it goes back
to the queue, then to the dead-letter queue, whose alarm says so.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from aws_lambda_powertools.metrics import MetricUnit

from costguard.aws.ec2 import Ec2
from costguard.aws.sagemaker import SageMaker
from costguard.buttons.sagemaker import SageMakerClicks
from costguard.buttons.worker import ClickWorker, Reply, no_sagemaker
from costguard.core import shapes
from costguard.core.errors import EventValidationError
from costguard.core.observability import logger, metrics, refuses_garbage, tracer
from costguard.core.settings import ButtonSettings
from costguard.runtime import Runtime
from costguard.slack.interactions import Click
from costguard.slack.notifier import post_response


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
@refuses_garbage
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    records = shapes.items(shapes.obj(event, "event").get("Records"), "Records")
    if not records:
        raise EventValidationError("buttons expects SQS records of queued clicks")
    clicks = [Click.from_json(shapes.obj(r, "Records[]").get("body")) for r in records]
    return work(clicks, (runtime or Runtime.current()).start(context))


def work(clicks: list[Click], runtime: Runtime) -> dict[str, Any]:
    """Act on each click; an exception returns it to the queue for a retry."""
    settings, actions = runtime.settings, _settings()
    worker = ClickWorker(
        ec2_for=lambda region: Ec2(runtime.client("ec2", region), region, settings.mode),
        notifier=runtime.notifier,
        ledger=runtime.ledger,
        claims=runtime.claims,
        respond=post_response,
        accelerated=actions.is_accelerated,
        mode=settings.mode,
        owner_tag_key=settings.owner_tag_key,
        email_domain=settings.email_domain,
        admins=actions.admins,
        zone=ZoneInfo(actions.timezone),
        account=runtime.account,
        sagemaker=_sagemaker(runtime, actions) if actions.sagemaker_governed else no_sagemaker,
    )
    done = []
    for click in clicks:
        reply = worker.handle(click, runtime.now())
        metrics.add_metric(name=f"ButtonClick{reply.status.title().replace('-', '')}", unit=MetricUnit.Count, value=1)
        done.append({"instance_id": click.instance_id, "button": click.button.value, "status": reply.status})
    return {"status": "done", "clicks": done}


def _sagemaker(runtime: Runtime, actions: ButtonSettings) -> Callable[[ClickWorker, Click, datetime], Reply]:
    settings = runtime.settings

    def api(region: str) -> SageMaker:
        client = runtime.client("sagemaker", region)
        return SageMaker(client, region, settings.mode, account=runtime.account, owner_tag_key=settings.owner_tag_key)

    return SageMakerClicks(sagemaker_for=api, accelerated=actions.is_accelerated_ml)


@cache
def _settings() -> ButtonSettings:
    return ButtonSettings.from_env()
