"""slack_receiver: the only public endpoint, Slack's interactivity Request URL (a Function URL).

It verifies, queues and answers, and can do nothing else (costguard.buttons.receiver, with its status codes):
its role may read the Slack secret and send to the click queue (and, in a hub, to each member account's click
queue), no EC2, no table. The click is acted on by the buttons function of the machine's account, from its
queue.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from costguard.aws.queues import Mailbox
from costguard.buttons.receiver import receive
from costguard.core.observability import logger, metrics, tracer
from costguard.core.settings import ReceiverSettings
from costguard.runtime import Runtime


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    live = (runtime or Runtime.current()).start(context)

    def queue(region: str | None, url: str) -> Mailbox:
        return Mailbox(live.client("sqs", region), url)

    return receive(
        event,
        signing_secret=lambda: live.slack_credentials().signing_secret,
        settings=_settings,
        queue=queue,
        own_account=live.account,
        now=live.now,
    )


@cache
def _settings() -> ReceiverSettings:
    return ReceiverSettings.from_env()
