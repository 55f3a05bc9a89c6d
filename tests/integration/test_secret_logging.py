"""At any log level, no secret reaches the logs: not the Secrets Manager answer (botocore logs response
bodies at DEBUG), not the bot token in an Authorization header (slack-sdk and urllib3 at DEBUG), not
the webhook URL or the signing secret."""

from __future__ import annotations

import json
import logging

import boto3
import pytest

from costguard.core.errors import ConfigError
from costguard.slack.blocks import Message, section
from costguard.slack.notifier import SlackCredentials
from testing.slack_standin import SlackStandIn
from tests.integration.conftest import REGION, make_runtime

SIGNING_SECRET = "d3adb33f-signing-secret-never-logged"


@pytest.mark.usefixtures("aws")
def test_nothing_secret_is_logged_at_debug(slack: SlackStandIn, caplog: pytest.LogCaptureFixture) -> None:
    runtime = make_runtime(slack)
    secret = {"bot_token": slack.token, "webhook_url": slack.webhook_url, "signing_secret": SIGNING_SECRET}
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(
        SecretId="costguard/slack", SecretString=json.dumps(secret)
    )
    with caplog.at_level(logging.DEBUG):
        logging.getLogger().setLevel(logging.DEBUG)
        for name in ("botocore", "boto3", "urllib3", "slack_sdk"):
            logging.getLogger(name).setLevel(logging.DEBUG)  # what LOG_LEVEL=DEBUG or a debugging session does
        credentials = runtime.slack_credentials()
        assert credentials.signing_secret == SIGNING_SECRET
        runtime.notifier.post("C0ALERTS", Message("hello", (section("hello"),)))
        logging.getLogger("costguard").debug("credentials %s", credentials)
    logged = "\n".join(f"{r.name}: {r.getMessage()}" for r in caplog.records)
    assert "botocore" in logged  # the wire loggers did log, at DEBUG
    for value in (slack.token, SIGNING_SECRET, slack.webhook_url.rsplit("/", 1)[-1], "SecretString"):
        assert value not in logged, f"{value!r} reached the logs"
    assert SlackCredentials(bot_token="xoxb-1").bot_token not in repr(SlackCredentials(bot_token="xoxb-1"))


@pytest.mark.usefixtures("aws")
def test_a_slack_secret_without_a_token_is_refused_naming_the_secret_and_what_it_must_hold() -> None:
    runtime = make_runtime(None)
    boto3.client("secretsmanager", region_name=REGION).put_secret_value(
        SecretId="costguard/slack", SecretString=json.dumps({"signing_secret": SIGNING_SECRET})
    )

    with pytest.raises(ConfigError) as refused:
        runtime.slack_credentials()

    said = str(refused.value)
    assert "neither bot_token nor webhook_url" in said
    assert "'costguard/slack'" in said
    assert "SlackSecretName" in said
    assert "docs/deploying.md#2-the-secret" in said
    assert SIGNING_SECRET not in said
