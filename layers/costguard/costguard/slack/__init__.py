"""Slack: Block Kit built by pure functions (blocks), sent by one notifier (notifier)."""
