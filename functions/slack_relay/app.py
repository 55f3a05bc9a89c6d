"""slack_relay (an organization's hub only): a member account's Slack Web API call, made with the hub's bot token,
the only copy, and Slack's answer returned as it was. Input: {"method", "verb", "json", "params"}
(costguard/slack/relay.py), invoked synchronously by the members' functions, the only principals its resource
policy admits (template.yaml, SlackRelayMemberPolicy). A request the relay does not make is answered 400
(not_relayed), so the member knows nothing reached Slack."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costguard.core.errors import ConfigError, EventValidationError
from costguard.core.observability import logger, metrics, tracer
from costguard.core.shapes import shape
from costguard.runtime import Runtime
from costguard.slack.relay import RelayedCall, refused, relay


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: Any, context: Any, runtime: Runtime | None = None) -> dict[str, Any]:
    runtime = (runtime or Runtime.current()).start(context)
    try:
        call = RelayedCall.read(event)
    except EventValidationError as exc:
        logger.error("event refused", reason=str(exc)[:500], shape=shape(event))
        metrics.add_metric(name="EventsRefused", unit=MetricUnit.Count, value=1)
        return refused(str(exc))
    web = runtime.notifier.web
    if web is None:
        raise ConfigError("the hub's Slack secret has no bot_token: the members post through it, and need one")
    answer = relay(web, call)
    logger.info("slack call relayed", method=call.method, status=answer["status"], error=answer["body"].get("error"))
    metrics.add_metric(name="SlackCallsRelayed", unit=MetricUnit.Count, value=1)
    return answer
