"""Who a person is to Slack: the email an owner tag stands for. Pure: no I/O."""

from __future__ import annotations

import re


def owner_email(owner: str, email_domain: str) -> str | None:
    """The email Slack knows an owner by: the owner itself if it is one, else owner@domain."""
    owner = owner.strip()
    if owner == "root":  # the account's root user is nobody's Slack identity
        return None
    if "@" in owner:
        return owner
    if owner and email_domain and re.fullmatch(r"[A-Za-z0-9._+-]+", owner):
        return f"{owner}@{email_domain}"
    return None
