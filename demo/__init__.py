"""The local demo: costguard's whole governance cycle against an emulated AWS account and Slack."""

import testing  # noqa: F401  (puts the costguard layer on the path, with Lambda's Powertools settings)
