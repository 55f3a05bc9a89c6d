"""The local demo: costguard's whole governance cycle against an emulated AWS account and Slack."""
