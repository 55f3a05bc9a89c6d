"""The digest's hygiene lines name a few machines and say how many more there are: a list cut at five
reads as if there were five."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from costguard.core import tags
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.digest.commitments import CommitmentUse
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.messages import digest_thread
from costguard.digest.weekly.rules.records import DigestData
from costguard.setup.reach import Unanswered

NOW = datetime(2026, 11, 23, 9, tzinfo=UTC)


def machine(n: int, **extra: str) -> Instance:
    return Instance(
        instance_id=f"i-{n:017x}",
        region="eu-west-1",
        instance_type="g5.xlarge",
        state="running",
        launch_time=NOW - timedelta(days=3),
        tags=dict(extra),
    )


def week(raw: list[Instance], silent: int, unchecked: int) -> DigestData:
    weeks = [
        InstanceWeek(i.instance_id, "", "", "", "g5.xlarge", 1, 1.0, n >= silent, "running", ())
        for n, i in enumerate(raw)
    ]
    start = NOW - timedelta(days=7)
    summary = summarize(weeks, start, NOW, IdlePolicy())
    return DigestData(
        start=start,
        end=NOW,
        instances=weeks,
        raw={i.instance_id: i for i in raw},
        this_week=summary,
        last_week=summary,
        entries=[],
        saved_hours=0.0,
        saved_usd=0.0,
        commitments=CommitmentUse(None, None, None, None, []),
        spend_this_week=0.0,
        spend_last_week=0.0,
        dashboards={},
        errors=[],
        owner_tag_key="Owner",
        no_activity_check=[i.instance_id for i in raw[:unchecked]],
    )


def hygiene(data: DigestData) -> str:
    [housekeeping] = [r.message for r in digest_thread(data) if r.name == "housekeeping"]  # in the thread
    text = "\n".join(str(block) for block in housekeeping.blocks)
    return text[text.index("Hygiene") : text.index("Commitments")]


def test_each_hygiene_list_says_how_many_it_does_not_name() -> None:
    raw = [machine(n) for n in range(11)] + [machine(100 + n, Owner="ana", **{tags.EXEMPT: "ci"}) for n in range(8)]
    text = hygiene(week(raw, silent=12, unchecked=11))
    assert "11 without an owner" in text
    assert text.count("and 6 more") == 2  # the owners' list and the activity check's
    assert "12 without GPU telemetry" in text
    assert "and 7 more" in text
    assert "and 3 more exempt or kept" in text


def test_a_short_list_names_them_all() -> None:
    raw = [machine(n) for n in range(3)]
    text = hygiene(week(raw, silent=3, unchecked=3))
    assert "more" not in text


def test_a_keep_until_tag_is_said_in_each_readers_zone_and_a_tag_that_is_no_time_as_written() -> None:
    kept = machine(1, Owner="ana", **{tags.KEEP_UNTIL: "2026-11-25T09:17:00Z", tags.KEPT_BY: "ana"})
    odd = machine(2, Owner="ana", **{tags.KEEP_UNTIL: "<!here> soon"})
    text = hygiene(week([kept, odd], silent=0, unchecked=0))
    assert f"kept until <!date^{int(datetime(2026, 11, 25, 9, 17, tzinfo=UTC).timestamp())}^" in text
    assert "|Wed 25 Nov 09:17 UTC> by ana" in text
    assert "kept until &lt;!here&gt; soon" in text  # not a time: the tag as written, escaped


def idled(raw: list[Instance], idle_hours: int, busy_hours: int, reach: int) -> DigestData:
    """The week of 4-GPU machines at $5.672 an hour, each idle for `idle_hours` and at work for `busy_hours`; the
    first `reach` of them the activity check cannot reach."""
    start = NOW - timedelta(days=7)
    hours = [Hour(start + timedelta(hours=h), 1.0, 0.0, 0.0, 0) for h in range(idle_hours)]
    hours += [Hour(start + timedelta(hours=idle_hours + h), 60.0, 90.0, 90.0, 4) for h in range(busy_hours)]
    weeks = [
        InstanceWeek(i.instance_id, "g5.12xlarge", "eu-west-1", "", "", 4, 5.672, True, "running", tuple(hours))
        for i in raw
    ]
    data = week(raw, silent=0, unchecked=0)
    data.instances, data.this_week = weeks, summarize(weeks, start, NOW, IdlePolicy())
    data.unanswered = [Unanswered(i.instance_id, "no agent", "install it") for i in raw[:reach]]
    data.no_activity_check = [u.instance_id for u in data.unanswered]
    return data


def test_what_the_machines_the_check_cannot_reach_idled_is_said_in_gpu_hours_and_dollars() -> None:
    raw = [machine(n) for n in range(3)]
    text = hygiene(idled(raw, idle_hours=10, busy_hours=5, reach=2))
    # two machines of 4 GPUs, 10 idle hours each: their busy hours and the machine the check reaches are not counted
    assert "Together they idled 80 GPU-hours ($113 on the bill), part of it held for work costguard cannot see" in text


def test_a_kept_exempt_or_prepaid_machine_the_check_cannot_reach_is_not_counted_in_what_they_idled() -> None:
    raw = [
        machine(0),
        machine(1, **{tags.EXEMPT: "ci"}),
        machine(2, **{tags.KEEP_UNTIL: "2026-11-30T09:00:00Z"}),
        machine(3),
    ]
    data = idled(raw, idle_hours=10, busy_hours=5, reach=4)
    data.instances[3] = dataclasses.replace(data.instances[3], paid_by="a Capacity Block")
    assert "Together they idled 40 GPU-hours ($56.72 on the bill)" in hygiene(data)  # machine 0's alone


def test_nothing_is_said_of_what_they_idled_where_they_did_not_idle_or_all_answer() -> None:
    raw = [machine(n) for n in range(2)]
    assert "idled" not in hygiene(idled(raw, idle_hours=0, busy_hours=5, reach=2))
    assert "idled" not in hygiene(idled(raw, idle_hours=10, busy_hours=5, reach=0))
    kept = [machine(n, **{tags.EXEMPT: "ci"}) for n in range(2)]
    assert "Together they idled" not in hygiene(idled(kept, idle_hours=10, busy_hours=5, reach=2))


def test_machines_whose_price_was_not_read_are_said_in_gpu_hours_without_a_dollar_figure() -> None:
    data = idled([machine(0)], idle_hours=10, busy_hours=0, reach=1)
    data.instances[0] = dataclasses.replace(data.instances[0], usd_per_hour=None)
    text = hygiene(data)
    assert "Together they idled 40 GPU-hours, part of it held" in text
    assert "$0" not in text
