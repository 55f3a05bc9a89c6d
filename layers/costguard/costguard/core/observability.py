"""Logger and Metrics, defined once. Service name and level come from POWERTOOLS_* variables."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit

from costguard.core.errors import EventValidationError
from costguard.core.secrets import quiet_wire_loggers
from costguard.core.shapes import shape

logger = Logger()
metrics = Metrics(namespace="costguard")
quiet_wire_loggers()

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
