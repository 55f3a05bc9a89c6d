"""How long a post Slack's history cannot confirm holds its machine (idle/acts/outbox.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.idle.acts.outbox import UNCONFIRMED_FOR, unconfirmed_too_long
from costguard.state.outbox import WARN, Notice

NOW = datetime(2026, 11, 16, 12, 0, tzinfo=UTC)


def warning(lease_ran_out: timedelta) -> Notice:
    return Notice(WARN, "i-0abc", "2026-11-16T10:00:00+00:00", lease_until=int((NOW - lease_ran_out).timestamp()))


def test_a_post_unconfirmed_since_its_lease_ran_out_waits_then_is_judged_anew() -> None:
    assert not unconfirmed_too_long(warning(timedelta(minutes=15)), NOW)
    assert not unconfirmed_too_long(warning(UNCONFIRMED_FOR), NOW)
    assert unconfirmed_too_long(warning(UNCONFIRMED_FOR + timedelta(minutes=15)), NOW)
