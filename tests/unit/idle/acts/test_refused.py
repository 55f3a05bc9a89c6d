"""A start refused for capacity: evidence, one ledger entry per start it was for, its owner told once; other
refusals only logged; Slack down does not lose the telling (the next refusal tells it)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from costguard.core.errors import SlackDeliveryError
from costguard.core.records import Instance
from costguard.core.settings import Settings
from costguard.idle.acts.refused import RefusedStarts
from costguard.slack.blocks import Message
from costguard.state.claims import Claims
from costguard.state.entries import EntryKind
from costguard.state.ledger import Ledger
from costguard.state.scarcity import SweepCapacity
from testing.aws.dynamodb import DynamoDBClient
from testing.slack_text import as_read

NOW = datetime(2026, 11, 24, 8, 50, tzinfo=UTC)
DUE = NOW.replace(minute=45)
UNTIL = NOW.replace(hour=17, minute=0)
TABLE = "costguard-state"
P4D = Instance(
    "i-1", "us-east-1", "p4d.24xlarge", "stopped", NOW - timedelta(days=1), {"Owner": "ana"}, zone="us-east-1a"
)


def refusal(code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "We currently do not have sufficient capacity"}}, "StartInstances"
    )


class Told:
    def __init__(self, failures: int = 0) -> None:
        self.failures, self.messages = failures, []  # type: ignore[var-annotated]

    def __call__(self, owner: str, message: Message) -> None:
        if self.failures:
            self.failures -= 1
            raise SlackDeliveryError("Slack is down")
        self.messages.append((owner, message))


def parts(told: Told) -> tuple[RefusedStarts, SweepCapacity, Ledger]:
    client: Any = DynamoDBClient()
    ledger = Ledger(client, TABLE)
    settings = Settings.from_env(
        {
            "SLACK_SECRET_NAME": "s",
            "ALERTS_CHANNEL": "#alerts",
            "STATE_TABLE": TABLE,
            "COSTGUARD_MODE": "enforce",
            "AWS_REGION": "us-east-1",
        }
    )
    capacity = SweepCapacity(log=None, trail=None, ec2=None, region="us-east-1", now=NOW, time_left=lambda: 900.0)  # type: ignore[arg-type]
    return RefusedStarts(ledger=ledger, claims=Claims(client, TABLE), tell=told, settings=settings), capacity, ledger


def test_a_start_refused_for_capacity_is_evidence_an_entry_and_told_to_its_owner_once() -> None:
    told = Told()
    refusals, capacity, ledger = parts(told)
    refusals.refused(P4D, DUE, UNTIL, NOW, refusal("InsufficientInstanceCapacity"), capacity)
    refusals.refused(P4D, DUE, UNTIL, NOW + timedelta(minutes=15), refusal("InsufficientInstanceCapacity"), capacity)
    assert capacity.scarcity(P4D) is not None
    assert capacity.failed_at("i-1") == NOW + timedelta(minutes=15)
    [entry] = list(ledger.entries_between(NOW - timedelta(days=1), NOW + timedelta(days=1)))
    assert (entry.kind, entry.at, entry.owner) == (EntryKind.START_FAILED, DUE, "ana")
    assert entry.reason == "InsufficientInstanceCapacity in us-east-1a, last at 09:05 UTC"
    assert entry.until == "2026-11-24T17:00:00Z"
    [(owner, message)] = told.messages
    assert owner == "ana"
    assert "tries again every sweep until Tue 24 Nov 17:00 UTC" in as_read(message.blocks)
    assert "ana, your p4d.24xlarge `i-1`" in as_read(message.blocks)  # named, as Slack does not know her here


def test_another_refusal_is_only_logged() -> None:
    told = Told()
    refusals, capacity, _ledger = parts(told)
    refusals.refused(P4D, DUE, UNTIL, NOW, refusal("IncorrectInstanceState"), capacity)
    assert capacity.scarcity(P4D) is None
    assert told.messages == []


def test_a_telling_slack_refused_is_made_by_the_next_refusal() -> None:
    told = Told(failures=1)
    refusals, capacity, _ = parts(told)
    refusals.refused(P4D, DUE, UNTIL, NOW, refusal("InsufficientInstanceCapacity"), capacity)
    assert told.messages == []
    refusals.refused(P4D, DUE, UNTIL, NOW + timedelta(minutes=15), refusal("InsufficientInstanceCapacity"), capacity)
    assert len(told.messages) == 1


def test_a_refused_start_is_known_to_the_next_sweep_from_the_ledger_when_the_evidence_was_not_kept() -> None:
    told = Told()
    refusals, capacity, _ = parts(told)
    refusals.refused(P4D, DUE, UNTIL, NOW, refusal("InsufficientInstanceCapacity"), capacity)
    forgetful = SweepCapacity(log=None, trail=None, ec2=None, region="us-east-1", now=NOW, time_left=lambda: 900.0)  # type: ignore[arg-type]
    assert refusals.refused_before(P4D, DUE, forgetful)  # its capacity record lost: the ledger's entry says so
    assert not refusals.refused_before(P4D, DUE + timedelta(days=1), forgetful)  # another day's start


def test_a_passing_refusal_is_recorded_for_the_retry_but_is_no_evidence_and_not_told() -> None:
    told = Told()
    refusals, capacity, _ = parts(told)
    refusals.refused(P4D, DUE, UNTIL, NOW, refusal("RequestLimitExceeded"), capacity)
    assert capacity.scarcity(P4D) is None
    assert told.messages == []
    assert refusals.refused_before(P4D, DUE, capacity)
