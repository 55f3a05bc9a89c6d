"""The week's failed starts: every morning or learned start EC2 refused (the ledger's start-failed entries),
with how it ended. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from costguard.core.formatting import parse_time
from costguard.core.records import Instance
from costguard.digest.owners import RefusedStart
from costguard.state.entries import Entry, EntryKind

# The starts that end a failed start: costguard's own (it tried again and EC2 said yes), or a person's.
STARTS = (EntryKind.MORNING_START, EntryKind.LEARNED_START, EntryKind.DAY_START, EntryKind.START_FROM_SLACK)
EARLY = timedelta(hours=2)  # a start is tried this long before it is due, at the most


def failed_starts(entries: Sequence[Entry], raw: Mapping[str, Instance], end: datetime) -> list[RefusedStart]:
    """Each start-failed entry of the week, oldest first, with how it ended as far as the week can tell."""
    started = sorted((e for e in entries if e.kind in STARTS and e.applied), key=lambda e: e.at)
    out = []
    for entry in sorted((e for e in entries if e.kind is EntryKind.START_FAILED), key=lambda e: e.at):
        later = next((s for s in started if s.instance_id == entry.instance_id and _ends(entry, s)), None)
        ended, at = _ended(entry, later, raw.get(entry.instance_id), end)
        out.append(
            RefusedStart(
                entry.instance_id,
                entry.instance_type,
                entry.owner,
                entry.at,
                entry.reason or "refused by EC2",
                ended,
                at,
            )
        )
    return out


def _ends(failed: Entry, start: Entry) -> bool:
    """The start made the failed one good: costguard's own start for the same time (its entries are keyed by
    the time a start is for), or a person's from Slack before costguard gave up."""
    if start.kind is not EntryKind.START_FROM_SLACK:
        return start.at == failed.at
    until = parse_time(failed.until)
    return failed.at - EARLY <= start.at and (until is None or start.at <= until)


def _ended(entry: Entry, later: Entry | None, instance: Instance | None, end: datetime) -> tuple[str, datetime | None]:
    """How it ended, and when (shown in each reader's zone), where a time belongs to it."""
    if later is not None and later.kind is not EntryKind.START_FROM_SLACK:
        return "started by costguard on a later try", None
    if later is not None:
        return "started from Slack", later.at
    if instance is not None and instance.state in ("pending", "running") and instance.launch_time > entry.at:
        return "running since", instance.launch_time
    until = parse_time(entry.until)
    if until is None:
        return "not started", None
    if until <= end:
        return "not started: costguard gave up", until
    return "not started yet: costguard tries until", until
