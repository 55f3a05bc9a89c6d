"""What a digest could not read, said the way its readers need it. Pure.

A read that failed is one missing part of the digest, never a reason to send none; but an AWS error code
is no sentence for the channel ("GetReservationUtilization: AccessDeniedException" read as a fault in
costguard). So the channel and the owners are told only what was not read, neutrally ("Reserved Instance
use: not read"), and a read AWS refused for want of a permission is said once a week to the alerts
channel, to the people who can grant it, with the exact IAM action. costguard's own template grants every
action the digest calls: a refusal comes from a policy above its role (a service control policy, a
permissions boundary) or, for Cost Explorer in a member account, from the management account, which
decides whether member accounts may use Cost Explorer at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from costguard.core.formatting import plural
from costguard.slack.blocks import Message, bullet_list, context, mrkdwn, section

# The codes AWS answers a call the caller may not make with. Anything else (a throttle, an outage, an
# unsupported call) is a gap the next run may not have: not a permission to grant.
DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnauthorizedException", "AuthFailure"}
)

# The calls the weekly digest makes: (IAM service prefix, what the digest reads with it).
CALLS: dict[str, tuple[str, str]] = {
    "GetReservationUtilization": ("ce", "Reserved Instance use"),
    "GetReservationCoverage": ("ce", "Reserved Instance coverage"),
    "GetSavingsPlansUtilization": ("ce", "Savings Plans use"),
    "GetSavingsPlansCoverage": ("ce", "Savings Plans coverage"),
    "GetSavingsPlansUtilizationDetails": ("ce", "each Savings Plan's recent use"),
    "GetCostAndUsage": ("ce", "the week's spend"),
    "DescribeReservedInstances": ("ec2", "Reserved Instances"),
    "DescribeCapacityReservations": ("ec2", "capacity reservations"),
    "DescribeSpotPriceHistory": ("ec2", "Spot prices"),
    "DescribeSavingsPlans": ("savingsplans", "Savings Plans"),
    "DescribeInstanceInformation": ("ssm", "which machines run the SSM agent"),
    "GetServiceSetting": ("ssm", "whether Default Host Management Configuration is on"),
}


@dataclass(frozen=True)
class Gap:
    """One read that failed: the API call and the code AWS (or the SDK) answered."""

    call: str
    code: str

    @property
    def what(self) -> str:
        """What the digest could not say because of it."""
        return CALLS.get(self.call, ("", self.call or "one read"))[1]

    @property
    def action(self) -> str:
        """The IAM action the call needs ("ce:GetReservationUtilization"); "" for a call not in CALLS."""
        service = CALLS.get(self.call, ("", ""))[0]
        return f"{service}:{self.call}" if service else ""

    @property
    def denied(self) -> bool:
        return self.code in DENIED


def gaps_of(errors: Iterable[str]) -> list[Gap]:
    """The failed reads in what the readers collected ("Call: Code" each), once each, in order. An entry in
    another shape is kept as a gap of unknown call: its words are never shown, only counted."""
    found: dict[tuple[str, str], Gap] = {}
    for error in errors:
        call, _, code = error.rpartition(": ")
        gap = Gap(call.strip(), code.strip()) if call else Gap("", error.strip())
        found.setdefault((gap.call, gap.code), gap)
    return list(found.values())


def not_read(gaps: Sequence[Gap]) -> str:
    """The digest's neutral line for what it could not read: "" when it read everything."""
    named = list(dict.fromkeys(g.what for g in gaps if g.call in CALLS))
    others = sum(1 for g in gaps if g.call not in CALLS)
    if others:
        named.append(f"{others} other read{'s' if others != 1 else ''}")
    if not named:
        return ""
    return "Not read this week: " + ", ".join(named) + ". The figures leave them out."


def permission_alert(gaps: Sequence[Gap], *, who: str, week: str) -> Message | None:
    """The alerts channel's one message of the week for the reads AWS refused `who` (the weekly digest), each
    with the action to grant; None when none was refused for want of a permission."""
    refused = {g.action: g for g in gaps if g.denied and g.action}
    if not refused:
        return None
    lines = [mrkdwn("`{0}`: the digest leaves out {1} until it is granted", a, g.what) for a, g in refused.items()]
    where = (
        "costguard's template grants these to the digest's role, so a policy above it refuses them: a service "
        "control policy or a permissions boundary. For Cost Explorer (`ce:`) in a member account, the management "
        "account must also let member accounts use Cost Explorer (Billing and Cost Management, Cost Management "
        "preferences)."
    )
    one = len(refused) == 1
    return Message(
        f"costguard's {who} may not read {len(refused)} thing{'' if one else 's'}: grant {'it' if one else 'them'}",
        (
            section(
                mrkdwn("*AWS refused costguard's {0} {1} this week ({2}).* ", who, plural(len(refused), "read"), week)
                + f"Grant {'this action' if one else 'these actions'} to its role:\n"
                + bullet_list(lines)
            ),
            context(where),
        ),
    )
