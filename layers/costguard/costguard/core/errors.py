"""Errors costguard raises on purpose. Each one carries a message a person can act on."""

from __future__ import annotations


class CostguardError(Exception):
    """Base class of costguard's own errors."""


class ConfigError(CostguardError):
    """The function's environment is missing or has an invalid setting."""


class EventValidationError(CostguardError, ValueError):
    """An incoming event does not have the shape its trigger promises.

    Raised (not swallowed) so that the invocation fails visibly, is retried and lands in the DLQ.
    """


class SlackDeliveryError(CostguardError):
    """A Slack message could not be delivered by any configured route.

    Raised so that the invocation fails and is retried: a notification is never silently lost.
    `maybe_delivered`: Slack may have posted it before its answer was lost (a timeout, a 5xx). `lasting`:
    Slack refused it for good (the message or its channel is gone, or the message itself is refused): trying
    the same again later changes nothing.
    """

    def __init__(self, message: str, *, maybe_delivered: bool = False, lasting: bool = False) -> None:
        super().__init__(message)
        self.maybe_delivered = maybe_delivered
        self.lasting = lasting
