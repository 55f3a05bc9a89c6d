"""A local AWS account and Slack workspace: moto's server behind the gap proxy, and the Slack stand-in.

Used by `make demo` and `make bench`. `environ()` is the Lambda environment `sam deploy` would set,
pointed at the local endpoints; `install()` creates what the stack and the operator would have made.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from typing import Any

import boto3
from moto.server import ThreadedMotoServer

from testing import moto_fixes
from testing.aws_gaps import AwsGaps, GapProxy
from testing.slack_standin import SlackStandIn
from testing.template import install_costguard, lambda_environment

HOME = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalAccount:
    def __init__(self, users: dict[str, str] | None = None) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
        moto_fixes.apply()  # the server runs in this process: the same corrections as in the tests
        moto_fixes.index_metric_queries()  # a week of hourly data would take moto minutes to scan
        self.moto_port = free_port()
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=self.moto_port, verbose=False)
        self.moto.start()
        self.gaps = AwsGaps(home_key="local")  # its AWS_ACCESS_KEY_ID below: another account sees no commitments
        self.proxy = GapProxy(self.gaps, self.moto_port).start()
        self.slack = SlackStandIn(users=dict(users or {})).start()
        self._saved_env: dict[str, str | None] = {}

    def client(self, service: str, region: str = HOME) -> Any:
        return boto3.client(service, region_name=region, endpoint_url=self.proxy.url)  # type: ignore[call-overload]

    def environ(self, **overrides: str) -> dict[str, str]:
        """The Lambda environment every function shares (template.yaml's Globals, testing.template), for the
        demo's account, pointed at the local endpoints; `overrides` last."""
        parameters = {
            "Mode": "enforce",
            "AlertsChannel": "#ml-costs",
            "DigestChannel": "#ml-weekly",
            "EmailDomain": "example.com",
            "GovernedRegions": HOME,
            "LogLevel": os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO"),
            "Tracing": "Disabled",
        }
        env = {
            "AWS_ENDPOINT_URL": self.proxy.url,
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_DEFAULT_REGION": HOME,
            "AWS_REGION": HOME,
            **lambda_environment(None, parameters, {"StateTable": "costguard-state"}),
            "SLACK_API_URL": self.slack.api_url,
        }
        env.update(overrides)
        return env

    def activate(self, **overrides: str) -> dict[str, str]:
        """Set the Lambda environment in this process and install costguard's resources."""
        env = self.environ(**overrides)
        for key in [*env, "AWS_PROFILE", "AWS_SESSION_TOKEN"]:
            self._saved_env.setdefault(key, os.environ.get(key))
        os.environ.update(env)
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
            os.environ.pop(key, None)
        secret = {"bot_token": self.slack.token, "webhook_url": self.slack.webhook_url, "signing_secret": "local"}
        install_costguard(self.client("dynamodb"), self.client("secretsmanager"), env, json.dumps(secret))
        return env

    def set_env(self, **values: str) -> None:
        """More of the Lambda environment, known only once the account exists (a queue URL); restored on close."""
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def close(self) -> None:
        """Stop the servers and give the process its environment back."""
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.slack.stop()
        self.proxy.stop()
        self.moto.stop()
