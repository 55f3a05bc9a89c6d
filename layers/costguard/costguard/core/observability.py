"""Logger, Tracer and Metrics, defined once. Service name, level and tracing come from POWERTOOLS_*
variables (the Tracing parameter sets POWERTOOLS_TRACE_DISABLED; outside Lambda the tracer is off)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, ParamSpec, TypeVar

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from costguard.core.errors import EventValidationError
from costguard.core.secrets import quiet_wire_loggers
from costguard.core.shapes import shape

logger = Logger()
# Every AWS SDK call a subsegment (botocore patched); the Slack calls get theirs from `traced`, in the
# notifier. Nothing else is patched: http.client would trace each botocore request a second time.
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics(namespace="costguard")
quiet_wire_loggers()


@contextlib.contextmanager
def traced(name: str) -> Iterator[None]:
    """A subsegment of the invocation's trace around a call X-Ray's patching does not see (Slack's)."""
    if tracer.disabled:
        yield
        return
    with tracer.provider.in_subsegment(name=name, namespace="remote"):  # a call out: a node on X-Ray's map
        yield


P = ParamSpec("P")
R = TypeVar("R")


def refuses_garbage(handler: Callable[P, R]) -> Callable[P, R]:
    """An event a handler cannot read is refused once, here: logged with its shape (keys and types, no
    values), counted, and raised again so the invocation fails, is retried and lands in the DLQ."""

    @functools.wraps(handler)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return handler(*args, **kwargs)
        except EventValidationError as exc:
            event: Any = args[0] if args else kwargs.get("event")
            logger.error("event refused", reason=str(exc)[:500], shape=shape(event))
            metrics.add_metric(name="EventsRefused", unit=MetricUnit.Count, value=1)
            raise

    return wrapper


def ignored(reason: str) -> dict[str, Any]:
    """An event a function was not meant to act on: said in the log and counted, and its summary returned."""
    logger.info("event ignored", reason=reason)
    metrics.add_metric(name="EventsIgnored", unit=MetricUnit.Count, value=1)
    return {"status": "ignored", "reason": reason}
