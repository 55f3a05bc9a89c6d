"""The accounts the organization's digest expects besides those it was told of: every active account of the
organizational units make org-deploy chose (OrganizationUnits), and of their child units, read from AWS
Organizations at the hub (the management account or a delegated administrator, which may read it). An account
there that has not handed a week over is named in the digest as not reporting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger, metrics


def accounts_in_units(organizations: Any, units: Sequence[str]) -> list[str]:
    """The active accounts under `units` (child units included), each once, in the order found."""
    found: list[str] = []
    pending = list(units)
    seen: set[str] = set()
    while pending:
        unit = pending.pop(0)
        if unit in seen:
            continue
        seen.add(unit)
        for page in organizations.get_paginator("list_accounts_for_parent").paginate(ParentId=unit):
            for account in page["Accounts"]:
                # State is the newer field (ACTIVE, SUSPENDED, PENDING_CLOSURE, CLOSED); Status the older one.
                if account.get("State", account.get("Status")) == "ACTIVE" and account["Id"] not in found:
                    found.append(account["Id"])
        for page in organizations.get_paginator("list_organizational_units_for_parent").paginate(ParentId=unit):
            pending.extend(child["Id"] for child in page["OrganizationalUnits"])
    return found


def expected_with_units(expected: Sequence[str], organizations: Any, units: Sequence[str]) -> list[str]:
    """`expected`, then each account of the units not among them. Organizations unreadable: `expected` alone
    (the digest is still posted; the log and a metric say why the units' accounts are not named)."""
    accounts = list(expected)
    if not units:
        return accounts
    try:
        in_units = accounts_in_units(organizations, units)
    except (ClientError, BotoCoreError) as exc:
        logger.warning("organizational units unreadable", units=list(units), error=f"{type(exc).__name__}: {exc}")
        metrics.add_metric(name="OrganizationUnitsUnreadable", unit=MetricUnit.Count, value=1)
        return accounts
    return accounts + [a for a in in_units if a not in accounts]
