"""What a digest could not read: said as not read in the digest, and a refused permission said to the alerts
channel with the exact IAM action to grant; never an AWS error code in the digest itself."""

from __future__ import annotations

import json

from costguard.digest.gaps import Gap, gaps_of, not_read, permission_alert


def test_each_failed_read_is_parsed_once_and_said_as_what_the_digest_could_not_say() -> None:
    gaps = gaps_of(
        [
            "GetReservationUtilization: AccessDeniedException",
            "GetReservationUtilization: AccessDeniedException",  # the same read, twice: once
            "DescribeSpotPriceHistory: Throttling",
            "something else entirely",
        ]
    )
    assert gaps == [
        Gap("GetReservationUtilization", "AccessDeniedException"),
        Gap("DescribeSpotPriceHistory", "Throttling"),
        Gap("", "something else entirely"),
    ]
    assert (
        not_read(gaps)
        == "Not read this week: Reserved Instance use, Spot prices, 1 other read. The figures leave them out."
    )
    assert not_read([]) == ""


def test_a_refused_read_names_the_exact_action_to_grant_and_a_throttle_is_no_permission() -> None:
    gaps = gaps_of(
        [
            "GetReservationUtilization: AccessDeniedException",
            "GetSavingsPlansCoverage: AccessDeniedException",
            "DescribeReservedInstances: UnauthorizedOperation",
            "GetCostAndUsage: ThrottlingException",  # not a permission: nothing to grant
            "GetReservationCoverage: NotImplementedError",
        ]
    )
    alert = permission_alert(gaps, who="weekly digest", week="2026-W47")
    assert alert is not None
    text = json.dumps(alert.slack_blocks())
    assert (
        "*AWS refused costguard's weekly digest 3 reads this week (2026-W47).* Grant these actions to its role:" in text
    )
    for action in ("ce:GetReservationUtilization", "ce:GetSavingsPlansCoverage", "ec2:DescribeReservedInstances"):
        assert f"`{action}`" in text
    assert "GetCostAndUsage" not in text
    assert "GetReservationCoverage" not in text
    assert "the digest leaves out Reserved Instance use until it is granted" in text
    assert alert.text == "costguard's weekly digest may not read 3 things: grant them"
    assert permission_alert(gaps_of(["GetCostAndUsage: ThrottlingException"]), who="weekly digest", week="w") is None
