"""Names costguard gives what it creates outside its own stack, so that it knows them again."""

from __future__ import annotations

# One CloudWatch idle alarm per machine: costguard-idle-<instance id>. IAM limits alarm writes to it.
ALARM_PREFIX = "costguard-idle-"
