"""The people's word on a machine: exempt, or kept until a time. One rule for every kind of machine costguard
stops (EC2 instances, SageMaker notebook instances, endpoints and Studio apps). Pure: tags and `now` in. And
for EC2 machines, kept for their runs (stopped when idle, started before their runs), and whether costguard's
starts were turned off for one.

A data scientist costs more than the machine: a keep-until costguard cannot read keeps the machine, it does
not lift the keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from costguard.core import formatting, tags


def kept_by_people(resource_tags: Mapping[str, str], now: datetime) -> str | None:
    """Why the tags a person set keep this machine now (exempt, or kept until a later time), or None."""
    exempt = resource_tags.get(tags.EXEMPT)
    if exempt is not None:
        return f"exempt: {exempt or 'no reason given'}"
    keep = resource_tags.get(tags.KEEP_UNTIL)
    if keep is not None:
        until = formatting.parse_time(keep)
        if until is None:
            return f"{tags.KEEP_UNTIL}={keep!r} is not a time I can read, so it is kept"
        if until > now:
            return f"kept until {formatting.format_time(until)}"
    return None


def kept_for_runs(resource_tags: Mapping[str, str]) -> bool:
    """Whether its owner asked costguard to keep the machine for its runs (`costguard:keep-for-runs`): any value
    but `off`, as `costguard:exempt` is any value (an empty one too: a key written without a value means it)."""
    value = resource_tags.get(tags.KEEP_FOR_RUNS)
    return value is not None and value.strip().lower() != tags.OFF


def hook_set_aside(resource_tags: Mapping[str, str]) -> bool:
    """Whether its owner keeps the machine for its runs in place of its keep-alive hook
    (`costguard:keep-for-runs=ignore-hook`): the hook's keep no longer holds it between its runs."""
    return resource_tags.get(tags.KEEP_FOR_RUNS, "").strip().lower() == tags.IGNORE_HOOK


def nothing_unseen(resource_tags: Mapping[str, str]) -> bool:
    """Whether its owner says nothing runs on the machine unless a person starts it (`costguard:unseen-work=none`):
    where costguard cannot look inside it, it is then not held for nights it has not watched, and without GPU
    metrics it is judged by its CPU (outside its owner's working day)."""
    return resource_tags.get(tags.UNSEEN_WORK, "").strip().lower() == tags.NOTHING_UNSEEN


def starts_declined(resource_tags: Mapping[str, str]) -> bool:
    """Whether its owner turned costguard's starts off for this machine (`costguard:learned-start=off`, the
    "Skip the planned start" button), and did not keep it for its runs, which outranks that switch."""
    off = resource_tags.get(tags.LEARNED_START, "").strip().lower() == tags.OFF
    return off and not kept_for_runs(resource_tags)
