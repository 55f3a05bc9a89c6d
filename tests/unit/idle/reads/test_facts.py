"""The sweep's facts: an owner's zone asked of Slack once a sweep."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from costguard.core.records import Instance
from costguard.core.settings import Settings
from costguard.idle.reads.facts import OwnerZones

LAUNCHED = datetime(2026, 11, 1, tzinfo=UTC)
ENV = {"STATE_TABLE": "t", "SLACK_SECRET_NAME": "s", "ALERTS_CHANNEL": "C0A", "AWS_REGION": "us-east-1"}


class Outage:
    """Slack down: every lookup answered with nothing, each one counted."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def user_id_for(self, email: str) -> str | None:
        self.asked.append(email)
        return "U0ASHA"

    def zone_of(self, user_id: str) -> str:
        self.asked.append(user_id)
        return ""


def test_an_owners_zone_is_asked_of_slack_once_a_sweep_even_when_slack_cannot_say() -> None:
    """Its machines' nights and its morning both read the zone: in an outage each lookup costs retries and
    timeouts, so what Slack said (nothing) is kept for the sweep, by owner."""
    slack = Outage()
    settings = Settings.from_env(ENV | {"EMAIL_DOMAIN": "example.com"})
    zones = OwnerZones(lambda: slack, settings)  # type: ignore[arg-type, return-value]
    machines: list[Any] = [
        Instance(f"i-{n}", "us-east-1", "g5.xlarge", "running", LAUNCHED, {"Owner": "asha"}) for n in range(3)
    ]
    assert [zones(m) for m in machines * 2] == [""] * 6
    assert slack.asked == ["asha@example.com", "U0ASHA"]
    assert zones(Instance("i-9", "us-east-1", "g5.xlarge", "running", LAUNCHED, {})) == ""  # no owner: not asked
    assert len(slack.asked) == 2
