"""Times in the digests' messages, as Slack writes them for each reader: `<!date^EPOCH^TOKENS|fallback>`
(docs.slack.dev, "Formatting text for app surfaces": the tokens {date_short_pretty}, {time}, ... are shown
in the reader's own time zone and locale; the fallback, after the bar, where a client cannot). The
fallback is written in UTC and says so. Pure.

A header block is plain text and cannot hold one: the digests keep times out of their headers, and out of
a message's notification text (plain too), and say them in a section or a context line instead.
"""

from __future__ import annotations

from datetime import UTC, datetime

from costguard.slack.blocks import Mrkdwn

WHEN = "{date_short_pretty} {time}"  # "Nov 23, 2026 9:17 AM", or "Today 9:17 AM", in the reader's zone
DAY = "{date_short_pretty}"  # "Nov 23, 2026", or "Yesterday"


def when(moment: datetime) -> Mrkdwn:
    """A day and a time of day, in the reader's zone."""
    return _date(moment, WHEN, f"{moment.astimezone(UTC):%a %d %b %H:%M} UTC")


def day(moment: datetime) -> Mrkdwn:
    """A day, in the reader's zone (a commitment's end, the day an account last reported)."""
    return _date(moment, DAY, f"{moment.astimezone(UTC):%a %d %b %Y}")


def _date(moment: datetime, tokens: str, fallback: str) -> Mrkdwn:
    if moment.tzinfo is None:
        raise ValueError("a time without a zone cannot be shown in the reader's")
    return Mrkdwn(f"<!date^{int(moment.timestamp())}^{tokens}|{fallback}>")
