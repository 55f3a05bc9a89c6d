"""What a handler needs, built once per Lambda container: settings, clients, ledger and claims, Slack.

Handlers take an optional Runtime so tests can pass their own; in Lambda, `Runtime.current()`
builds one at the first invocation and keeps it for the container's life.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, ClassVar

from aws_lambda_powertools.utilities.parameters import SecretsProvider
from slack_sdk import WebClient

from costguard.aws.clients import GLOBAL_ENDPOINT_REGION, ClientFactory, new_session
from costguard.aws.commitments import CommitmentReader
from costguard.aws.pricing import PriceBook
from costguard.core.errors import ConfigError
from costguard.core.settings import Settings
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from costguard.slack.pace import PER_CHANNEL_SECONDS
from costguard.slack.relay import RELAY_CLIENT_CONFIG, RelayedWebClient
from costguard.state.claims import Claims
from costguard.state.ledger import Ledger
from costguard.state.slack_ids import KnownSlackUsers

SECRET_MAX_AGE_SECONDS = 300


class Runtime:
    _current: ClassVar[Runtime | None] = None

    def __init__(
        self, settings: Settings, clients: ClientFactory | None = None, *, slack_pace: float = PER_CHANNEL_SECONDS
    ) -> None:
        self.settings = settings
        self.slack_pace = slack_pace  # seconds between two posts to one channel (0 in simulations of days)
        self.clients = clients or ClientFactory(default_region=settings.governed_regions[0])
        self._notifier: SlackNotifier | None = None
        self._notifier_token = ""
        self._time_left: Callable[[], float] = lambda: float("inf")
        self.account = ""  # this function's account, from the invocation's ARN

    @classmethod
    def current(cls) -> Runtime:
        if cls._current is None:
            cls._current = cls(Settings.from_env())
        return cls._current

    def start(self, context: Any) -> Runtime:
        """A new invocation: every wait (Slack's Retry-After, the activity check) knows its time left."""
        arn = str(getattr(context, "invoked_function_arn", "") or "")
        self.account = arn.split(":")[4] if arn.count(":") >= 5 else ""  # arn:aws:lambda:<region>:<account>:…
        remaining = getattr(context, "get_remaining_time_in_millis", None)
        self._time_left = (lambda: remaining() / 1000) if callable(remaining) else (lambda: float("inf"))
        return self

    def time_left(self) -> float:
        """Seconds before the invocation's timeout."""
        return self._time_left()

    @classmethod
    def reset(cls) -> None:
        cls._current = None

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)

    # What a handler waits with (the activity check's polls, one Slack post a second per channel): the
    # wall clock in Lambda. The demo replaces these with its own clock, as it replaces `now`, so that its
    # clock, not the wall clock, pays for the waits; production waits exactly as before.
    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(seconds)

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()

    def client(self, service: str, region: str | None = None, *, quick: bool = False) -> Any:
        return self.clients.get(service, region, quick=quick)

    @cached_property
    def ledger(self) -> Ledger:
        return Ledger(self.client("dynamodb"), self.settings.state_table, self.settings.state_ttl_days)

    @cached_property
    def claims(self) -> Claims:
        return Claims(self.client("dynamodb"), self.settings.state_table)

    @cached_property
    def prices(self) -> PriceBook:
        return PriceBook(self.client("pricing", GLOBAL_ENDPOINT_REGION))

    def commitments(self) -> CommitmentReader:
        """Reserved Instances of every governed region, Savings Plans, and Cost Explorer's view of them."""
        return CommitmentReader(
            ec2={region: self.client("ec2", region) for region in self.settings.governed_regions},
            savingsplans=self.client("savingsplans", GLOBAL_ENDPOINT_REGION),
            ce=self.client("ce", GLOBAL_ENDPOINT_REGION),
        )

    @cached_property
    def _secrets(self) -> SecretsProvider:
        return SecretsProvider(boto3_client=self.client("secretsmanager"))

    def slack_credentials(self) -> SlackCredentials:
        """Fetched by name at run time and cached for five minutes, so a rotated token is picked up."""
        name = self.settings.slack_secret_name
        value = self._secrets.get(name, max_age=SECRET_MAX_AGE_SECONDS)
        try:
            return SlackCredentials.from_secret(value)
        except ConfigError as exc:  # what to fix, and where: the operator reads this in the function's logs
            raise ConfigError(
                f"{exc}. It is the Secrets Manager secret {name!r} (the SlackSecretName parameter): a JSON object "
                '{"bot_token": "xoxb-…", "signing_secret": "…"}, see docs/deploying.md#2-the-secret'
            ) from None

    @cached_property
    def relay_client(self) -> Any:
        """The Lambda client that invokes the hub's Slack relay (SLACK_RELAY_ARN): one attempt per call."""
        region = self.settings.slack_relay_arn.split(":")[3]
        return new_session().client("lambda", region_name=region, config=RELAY_CLIENT_CONFIG)

    @property
    def notifier(self) -> SlackNotifier:
        if self.settings.slack_relay_arn:  # a member of an organization: no Slack secret here, the hub's token
            if self._notifier is None:
                self._notifier = self._new_notifier(
                    SlackCredentials(), RelayedWebClient(self.relay_client, self.settings.slack_relay_arn)
                )
            return self._notifier
        credentials = self.slack_credentials()
        fingerprint = f"{credentials.bot_token}|{credentials.webhook_url}"
        if self._notifier is None or fingerprint != self._notifier_token:
            self._notifier = self._new_notifier(credentials)
            self._notifier_token = fingerprint
        return self._notifier

    def _new_notifier(self, credentials: SlackCredentials, web: WebClient | None = None) -> SlackNotifier:
        return SlackNotifier(
            credentials,
            base_url=self.settings.slack_api_url,
            web_client=web,
            time_left=self.time_left,
            known_users=KnownSlackUsers(self.client("dynamodb"), self.settings.state_table),
            channel_pace=self.slack_pace,
            sleep=self.sleep,
            clock=self.monotonic,
        )
