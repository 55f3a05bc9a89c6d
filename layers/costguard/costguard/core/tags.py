"""Tag keys costguard owns. State that belongs to an instance lives in its tags, under `costguard:`.

One name for one thing: the template's IAM conditions, the code and the docs use these keys.
"""

from __future__ import annotations

import unicodedata

PREFIX = "costguard:"

CREATED_BY = "costguard:created-by"
OWNER_SOURCE = "costguard:owner-source"

# Set by people to keep a machine from being stopped.
KEEP_UNTIL = "costguard:keep-until"
EXEMPT = "costguard:exempt"
SCHEDULE = "costguard:schedule"  # working hours: never stopped inside them, started shortly before them
KEPT_BY = "costguard:kept-by"  # who pressed a keep button
# Kept while it works: set to the time it was pressed; the normal rule resumes once the machine has
# been idle for a whole window that began after it.
KEEP_WHILE_BUSY = "costguard:keep-while-busy"
# Owners' switches for the two things costguard may do without a full idle window: `off` on either turns
# it off for that machine. LEARNED_START: never started again for learned recurring work (nor kept up for
# it); costguard's "Don't start it" button sets it. EARLY_WARNING: never warned before the full window,
# however certain the activity check is that nothing runs.
LEARNED_START = "costguard:learned-start"
EARLY_WARNING = "costguard:early-warning"
OFF = "off"
# Kept for its runs: stopped when idle, but never just before its known runs (its scheduled jobs, the recurring
# work learned), and started before them even where learned starts are off (for the deployment, or by
# LEARNED_START). Any value but `off` (`on` is what the "Keep it for its runs" button writes).
KEEP_FOR_RUNS = "costguard:keep-for-runs"
ON = "on"
# ... in place of the owner's keep-alive hook, which then no longer keeps it (the hook's offer writes it).
IGNORE_HOOK = "ignore-hook"
# Its owner's word on a machine costguard cannot look inside (no SSM agent answers its activity check): `none`,
# nothing runs on it unless a person starts it (no job of its own at night, no work that waits unseen), so it is
# stopped when idle like the others (judged by its CPU where it sends no GPU metrics, outside its
# owner's working day); any other value (`maybe`, what "Keep holding it" writes) leaves it held as before.
UNSEEN_WORK = "costguard:unseen-work"
NOTHING_UNSEEN = "none"
MAYBE_UNSEEN = "maybe"

# What people told costguard, through a tag or a button: an uninstall keeps these unless told to delete its data
# (scripts/uninstall), so that a keep, an exemption or a schedule survives a reinstall.
SET_BY_PEOPLE = (
    EXEMPT,
    KEEP_UNTIL,
    SCHEDULE,
    KEPT_BY,
    KEEP_WHILE_BUSY,
    LEARNED_START,
    EARLY_WARNING,
    KEEP_FOR_RUNS,
    UNSEEN_WORK,
)

# The idle stopper's state, on the instance itself, visible in the console.
IDLE_WARNED_AT = "costguard:idle-warned-at"
STOP_AFTER = "costguard:stop-after"
STOPPED_AT = "costguard:stopped-at"
STOP_REASON = "costguard:stop-reason"
WARNING_TAGS = (IDLE_WARNED_AT, STOP_AFTER)
# A machine costguard stopped between the runs of work it learned recurs: when costguard starts it again
# (ISO 8601, UTC), until it is started by anyone. Only costguard's own role may write it.
START_AT = "costguard:start-at"
# When costguard last asked the machine's SSM agent for its activity check. IAM lets costguard send
# the check only to instances that carry it, and lets it write it only on accelerated instances.
ACTIVITY_CHECK_AT = "costguard:activity-check-at"

# SageMaker: on an endpoint configuration whose endpoint costguard deleted, one tag per endpoint deleted from
# it, "costguard:deleted-endpoint:<endpoint name>" = its owner, so that "Recreate" brings each back with its
# owner (several endpoints may share a configuration: one tag for all kept only the last one deleted).
DELETED_ENDPOINT = "costguard:deleted-endpoint"
RECREATED_BY = "costguard:recreated-by"  # on an endpoint recreated from Slack (IAM requires it on CreateEndpoint)

# Tag values are limited to 256 characters by EC2.
MAX_VALUE_LENGTH = 256


def clip(value: str) -> str:
    """EC2 refuses tag values over 256 characters; a long role-session ARN must not fail the call."""
    return value if len(value) <= MAX_VALUE_LENGTH else value[: MAX_VALUE_LENGTH - 1] + "…"


_SAGEMAKER_PUNCTUATION = frozenset("_.:/=+-@")


def sagemaker_value(value: str) -> str:
    """SageMaker's Tag.Value pattern is ([\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*), at most 256 characters: letters,
    separators and numbers by Unicode category (a tab or a newline is a control character, not \\p{Z}), and
    that punctuation. Anything else becomes "_"; no ellipsis when cut, SageMaker refuses it too."""
    kept = (c if unicodedata.category(c)[0] in "LZN" or c in _SAGEMAKER_PUNCTUATION else "_" for c in value)
    return "".join(kept)[:MAX_VALUE_LENGTH]


def deleted_endpoint(name: str) -> str:
    """The tag, on its kept endpoint configuration, of an endpoint costguard deleted (at most 27 + 63 of
    SageMaker's 128 characters of a key)."""
    return f"{DELETED_ENDPOINT}:{name}"
