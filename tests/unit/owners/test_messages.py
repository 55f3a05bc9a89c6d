from __future__ import annotations

import re
from datetime import UTC, datetime

from costguard.owners.messages import unattributed_message
from costguard.owners.report import Tagging
from costguard.owners.rules import OwnerDecision, OwnerSource
from testing.slack_text import as_read, dates_in, plain_times


def tagging(instance_id: str, region: str = "us-west-2") -> Tagging:
    decision = OwnerDecision(None, OwnerSource.UNKNOWN, "", "no launch event found in CloudTrail (90 days)")
    return Tagging(instance_id, region, "g4dn.xlarge", datetime(2026, 8, 1, tzinfo=UTC), decision, {}, True)


def test_unattributed_message_lists_each_instance_with_its_reason() -> None:
    message = unattributed_message([tagging("i-0aaa"), tagging("i-0bbb", "us-east-1")], "Owner")
    assert message.text == "2 instances have no owner"
    listing = message.blocks[2]["text"]["text"]
    why = "no launch event found in CloudTrail (90 days)"
    assert as_read(listing).splitlines() == [
        f"• `i-0bbb` g4dn.xlarge in us-east-1, launched Sat 01 Aug 2026 UTC: {why}",
        f"• `i-0aaa` g4dn.xlarge in us-west-2, launched Sat 01 Aug 2026 UTC: {why}",
    ]
    # The day each was launched, as each reader's.
    assert dates_in(listing) == [int(datetime(2026, 8, 1, tzinfo=UTC).timestamp())] * 2
    assert not plain_times(message.slack_blocks())


def test_unattributed_message_has_no_raw_angle_brackets_slack_would_parse_as_links() -> None:
    message = unattributed_message([tagging("i-0aaa")], "Owner<x>")
    for block in message.blocks:
        text = str(block)
        assert re.search(r"<[^@!#][^>]*>", text.replace("&lt;", "").replace("&gt;", "")) is None, text
    assert "`Owner&lt;x&gt;=&lt;name or email&gt;`" in message.blocks[1]["text"]["text"]
