"""The owner-tagging messages. Pure: records in, a Slack message out."""

from __future__ import annotations

from collections.abc import Sequence

from costguard.owners.report import Tagging
from costguard.slack.blocks import DAY, Message, bullet_list, context, header, mrkdwn, section, when


def unattributed_message(results: Sequence[Tagging], owner_tag_key: str) -> Message:
    """The alerts-channel notice for instances costguard could not give an owner."""
    count = len(results)
    how = f"`{owner_tag_key}={'<name or email>'}`"
    noun = "instance has" if count == 1 else "instances have"
    lines = [
        mrkdwn(
            "`{}` {} in {}, launched {}: {}",
            r.instance_id,
            r.instance_type,
            r.region,
            when(r.launch_time, style=DAY),
            r.decision.reason,
        )
        for r in sorted(results, key=lambda r: (r.region, r.launch_time))
    ]
    return Message(
        text=f"{count} {noun} no owner",
        blocks=(
            header(f"{count} {noun} no owner"),
            section(
                "costguard could not tell who launched these, so nobody can be warned before they are "
                f"stopped and their cost is charged to no one. Tag each with {how}."
            ),
            section(bullet_list(lines)),
            context("They are tagged `costguard:owner-source` and listed again in the weekly digest."),
        ),
    )
