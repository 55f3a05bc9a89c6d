"""Where a click goes, when one Slack app serves several accounts. Pure.

Each button names the account of its machine. The hub's receiver (the Slack app's one interactivity
URL) queues a click for its own account on its own click queue, and a click for a member account on
that member's click queue, where the member's own worker acts with the member's own role. A click for
an account that is neither is refused: nothing is queued anywhere.

In an organization (make org-deploy) the members are not listed: every member's click queue has the one name
the hub's stack gives them (`organization_queue`), in the account and region of the machine, and IAM lets the
hub send there only in accounts of its organization (aws:ResourceOrgID).
"""

from __future__ import annotations

from collections.abc import Mapping

from costguard.core.errors import EventValidationError
from costguard.core.queues import sqs_queue_region, sqs_queue_url


class NotAMember(EventValidationError):
    """A signed click for a machine in an account this hub does not serve."""


def route(
    account: str,
    *,
    own_account: str,
    own_queue: str,
    members: Mapping[str, str],
    region: str = "",
    organization_queue: str = "",
) -> tuple[str, str]:
    """(region, queue URL) for a click on a machine of `account` ("" on buttons from before accounts) in
    `region`."""
    if not account or account == own_account:
        return sqs_queue_region(own_queue), own_queue
    if account in members:
        return sqs_queue_region(members[account]), members[account]
    if organization_queue and region:
        partition = "aws-cn" if ".amazonaws.com.cn/" in own_queue else "aws"
        return region, sqs_queue_url(f"arn:{partition}:sqs:{region}:{account}:{organization_queue}")
    raise NotAMember(f"a click for account {account}, which this hub does not serve")
