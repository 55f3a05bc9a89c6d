"""The accounts the organization's digest expects besides those it was told of: every active account of the
organizational units make org-deploy chose (OrganizationUnits), and of their child units, read from AWS
Organizations at the hub (the management account or a delegated administrator, which may read it). An account
there that has not handed a week over is named in the digest as not reporting."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from botocore.exceptions import BotoCoreError, ClientError

from costguard.core.observability import logger, metrics
from costguard.digest.organization.stacksets import why_not_reporting
from costguard.state.handoffs import HandedWeeks


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


# Where the hub keeps the accounts its last digest covered (beside the accounts' weeks): an account among them that
# is no longer expected has left the organization or the chosen units, which the next digest says in one line.
ROSTER = "#accounts"


@dataclass
class Accounts:
    """The accounts the organization's digest covers, and what the hub learned of the units' other accounts."""

    expected: list[str]
    why: dict[str, str] = field(default_factory=dict)  # why an account may have no figures (its stack instances)
    left: list[str] = field(default_factory=list)  # covered last time, no longer in the organization
    moved: list[str] = field(default_factory=list)  # covered last time, still in the organization, out of the units


def accounts_of_units(
    expected: Sequence[str],
    organizations: Any,
    cloudformation: Any,
    kept: HandedWeeks,
    *,
    units: Sequence[str],
    stack_set: str,
) -> Accounts:
    """`expected_with_units`, with why each account may have no figures (the members' StackSet's instances) and
    which accounts of the last digest are gone (DescribeAccount: not found is an account that left). A read that
    fails leaves its part out (logged, with a metric): the digest is still posted."""
    found = Accounts(expected_with_units(expected, organizations, units))
    if not units:
        return found
    if stack_set:
        try:
            of_units = [a for a in found.expected if a not in expected]  # the hub's own account has no instance
            found.why = why_not_reporting(stack_instances(cloudformation, stack_set), of_units)
        except (ClientError, BotoCoreError) as exc:
            logger.warning("stack instances unreadable", stack_set=stack_set, error=f"{type(exc).__name__}: {exc}")
            metrics.add_metric(name="StackInstancesUnreadable", unit=MetricUnit.Count, value=1)
    last = kept.latest([ROSTER]).get(ROSTER)
    try:
        covered = [a for a in (json.loads(last) if last else []) if isinstance(a, str)]
    except ValueError:  # changed by hand: nothing to tell this time, the digest keeps a new one
        covered = []
    for account in covered:
        if account in found.expected:
            continue
        try:
            organizations.describe_account(AccountId=account)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "AccountNotFoundException":
                found.left.append(account)
            else:
                logger.warning("account unreadable", account=account, error=f"{type(exc).__name__}: {exc}")
            continue
        found.moved.append(account)
    return found


def remember(kept: HandedWeeks, accounts: Sequence[str], now: datetime) -> None:
    """The accounts this digest covered, for the next one to tell which have gone."""
    kept.keep(ROSTER, now, json.dumps(list(accounts)))


def stack_instances(cloudformation: Any, stack_set: str) -> list[dict[str, Any]]:
    """Every stack instance of the members' StackSet (ListStackInstances), as the management account (SELF) or,
    when that is refused, as the delegated administrator that make org-deploy ran as."""
    try:
        return _instances(cloudformation, stack_set, "SELF")
    except ClientError:
        return _instances(cloudformation, stack_set, "DELEGATED_ADMIN")


def _instances(cloudformation: Any, stack_set: str, call_as: str) -> list[dict[str, Any]]:
    pages = cloudformation.get_paginator("list_stack_instances").paginate(StackSetName=stack_set, CallAs=call_as)
    return [summary for page in pages for summary in page["Summaries"]]
