"""The people's word on a machine: exempt, or kept until a time. One rule for every kind of machine costguard
stops (EC2 instances, SageMaker notebook instances, endpoints and Studio apps). Pure: tags and `now` in.

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
