"""Secrets stay out of the logs at any level.

At DEBUG, botocore logs every response body (a GetSecretValue answer is the Slack secret in clear), the
request it signs (with its session token) and the parameters it sends; slack-sdk logs the URL of a
webhook (the webhook's secret is its URL) and its request details; urllib3 logs each connection. Those
wire-level loggers are held at INFO here, explicitly, so neither LOG_LEVEL=DEBUG nor a debugging session
that turns `botocore` or `slack_sdk` to DEBUG makes them log a secret. costguard's own records of the
credentials never show them (SlackCredentials hides its fields from repr).
"""

from __future__ import annotations

import logging

WIRE_LOGGERS = (
    "botocore.parsers",
    "botocore.endpoint",
    "botocore.auth",
    "botocore.awsrequest",
    "botocore.httpsession",
    "botocore.credentials",
    "botocore.utils",
    "urllib3.connectionpool",
    "slack_sdk.web.base_client",
    "slack_sdk.web.legacy_base_client",
    "slack_sdk.webhook.client",
    "slack_sdk.http_retry.builtin_handlers",
)


def quiet_wire_loggers() -> None:
    for name in WIRE_LOGGERS:
        wire = logging.getLogger(name)
        if wire.level < logging.INFO:  # NOTSET (inherit the root's DEBUG) or DEBUG
            wire.setLevel(logging.INFO)
