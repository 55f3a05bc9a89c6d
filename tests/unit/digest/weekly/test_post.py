"""The channel's post is read to the end: a headline of five numbers at most, money first and on the bill,
the idle cost not set against what stops saved as if one contradicted the other, who drives it, no time in a
header and every time in each reader's zone, no AWS error code anywhere; the rest in its thread; the chart's
days, a part of a day marked."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from costguard.core.records import Commitment
from costguard.digest.commitments import CommitmentUse
from costguard.digest.gaps import gaps_of
from costguard.digest.weekly.rules.figures import Figures
from costguard.digest.weekly.rules.messages import chart_days, chart_source, digest_message, digest_thread
from costguard.digest.weekly.rules.records import DigestData
from costguard.state.entries import Entry, EntryKind
from tests.unit.digest.organization.test_rules import END, START, member_data

NUMBER = re.compile(r"[$+−-]?\d[\d,.]*%?")


def numbers(text: str) -> list[str]:
    """The figures a reader meets in a text (dates, written in Slack's date markup, are not among them)."""
    return NUMBER.findall(re.sub(r"<!date\^[^>]*>", "", text))


def busy_week() -> DigestData:
    data = member_data()
    data.commitments = CommitmentUse(
        92.0,
        38.0,
        97.0,
        52.0,
        [Commitment("reserved-instance", "ri-1", END + timedelta(days=20), START, "us-east-1", "g5.xlarge", 4)],
    )
    data.errors = ["GetCostAndUsage: AccessDeniedException", "DescribeSpotPriceHistory: UnauthorizedOperation"]
    data.gaps = gaps_of(data.errors)
    data.bill_gaps = gaps_of(["DescribeReservedInstances: UnauthorizedOperation"])
    data.basis = "Prices as your bill shows them: on demand less 4 Reserved Instances; Spot at its price."
    return data


def test_the_post_is_a_headline_of_five_numbers_at_most_in_a_dozen_blocks_at_most() -> None:
    post = digest_message(busy_week())
    assert len(post.blocks) <= 12
    [headline] = [b["text"]["text"] for b in post.blocks if b["type"] == "section"]
    # idle cost, against last week, the biggest owner's share, what stops saved, the least-used commitment
    assert numbers(headline) == ["$38.06", "+0%", "89%", "$10.06", "92%"]
    assert headline == (
        "Idle GPU machines cost *$38.06* on the bill this week (+0% on last week): what stopping them while idle "
        "would have saved. The most: *alice*, 89% of it. The stops costguard made saved *$10.06* on the bill. "
        "Least-used commitment: Reserved Instances, *92%* used."
    )


def test_what_stops_saved_beside_the_idle_cost_reads_as_two_things_not_a_contradiction() -> None:
    # The week: $1,892 idle, $1.50 saved. The old post said "$1.50 saved" next to "$1,892 wasted".
    data = member_data()
    data.this_week.fleet.waste_usd, data.saved_usd = 1892.0, 1.5
    text = json.dumps(digest_message(data).slack_blocks())
    assert "Idle GPU machines cost *$1,892* on the bill this week" in text
    assert "what stopping them while idle would have saved" in text  # what the idle cost is
    assert "The stops costguard made saved *$1.50* on the bill." in text  # what costguard's stops did
    assert "wasted" not in text


def test_machines_without_an_owner_are_named_as_such_and_a_week_with_no_stop_says_so() -> None:
    data = member_data()
    data.this_week.per_owner["(no owner)"] = data.this_week.per_owner.pop("alice")
    data.entries = [e for e in data.entries if e.kind is not EntryKind.STOP]
    data.saved_hours = data.saved_usd = 0.0  # and no machine stopped before the week was still off in it
    text = json.dumps(digest_message(data).slack_blocks())
    assert "The most: machines without an owner, 89% of it." in text
    assert "costguard stopped no machine this week." in text


def test_a_week_with_no_stop_but_machines_stopped_before_it_still_off_says_what_they_saved() -> None:
    data = member_data()
    data.entries = [e for e in data.entries if e.kind is not EntryKind.STOP]
    data.saved_hours, data.saved_usd, data.saved_list_usd = 9.0, 4.5, 9.05
    text = json.dumps(digest_message(data).slack_blocks())
    assert (
        "costguard stopped no machine this week; those it stopped before stayed off into it and saved *$4.50* "
        "on the bill."
    ) in text


def test_no_time_in_a_header_and_each_time_in_the_readers_zone() -> None:
    post = digest_message(member_data())
    assert post.blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "GPU fleet this week", "emoji": True},
    }
    when = post.blocks[-1]["elements"][0]["text"]
    assert when.startswith(f"<!date^{int(START.timestamp())}^{{date_short_pretty}}|Mon 16 Nov 2026 UTC> to ")
    assert f"<!date^{int(END.timestamp())}^{{date_short_pretty}} at {{time}}|Mon 23 Nov 09:00 UTC>" in when


def test_no_aws_error_code_reaches_the_post_or_its_thread_and_what_was_not_read_is_said_plainly() -> None:
    data = busy_week()
    said = json.dumps([digest_message(data).slack_blocks(), *(r.message.slack_blocks() for r in digest_thread(data))])
    for code in ("AccessDenied", "Unauthorized", "Exception", "GetCostAndUsage", "DescribeSpotPriceHistory"):
        assert code not in said
    assert "Not read this week: the week's spend, Spot prices. The figures leave them out." in said


def test_the_thread_has_the_owners_the_advice_and_the_housekeeping_in_that_order() -> None:
    data = busy_week()
    names = [r.name for r in digest_thread(data)]
    assert names == ["owners", "housekeeping"]  # no advice this week, no other feature's part
    owners = json.dumps(digest_thread(data)[0].message.slack_blocks())
    assert "*alice*: *$34.03* (24 idle GPU-h)" in owners
    assert "*bob*: *$4.02* (4 idle GPU-h)" in owners
    housekeeping = json.dumps(digest_thread(data)[1].message.slack_blocks(), ensure_ascii=False)
    ends = int((END + timedelta(days=20)).timestamp())
    assert (
        f"4 × g5.xlarge Reserved Instances ends <!date^{ends}^{{date_short_pretty}}|Sun 13 Dec 2026 UTC>"
        in housekeeping
    )
    assert "Reserved Instances: 38% of eligible hours covered" in housekeeping  # its use: the post's headline


def test_the_chart_marks_today_as_part_of_a_day_and_writes_each_days_idle_cost() -> None:
    data = member_data()
    bars = chart_days(data)
    # the week runs from Monday 16 Nov 00:00 to Monday 23 Nov 09:00: 8 days, the last one to 09:00
    assert [b.partial for b in bars] == [""] * 7 + ["to 09:00"]
    assert bars[-1].label == "Today\n23 Nov"
    assert [round(b.note or 0, 2) for b in bars[:2]] == [4.02, 34.03]  # bob's 4 h at $1.006, alice's 6 h at $5.672
    later = DigestData(**{**data.__dict__, "start": START + timedelta(hours=14)})
    assert chart_days(later)[0].partial == "from 14:00"  # a week begun inside its first day
    assert "idle hours priced on the bill as it stood Mon 23 Nov 09:00 UTC" in chart_source(data)
    data.basis = "Prices: on-demand list (the bill was not read)."
    assert "idle hours at on-demand list prices" in chart_source(data)


def test_a_week_of_no_idle_time_says_so_without_a_dollar() -> None:
    data = member_data()
    for figures in (data.this_week.fleet, *data.this_week.per_owner.values()):
        figures.waste_usd = figures.idle_gpu_hours = 0.0
    data.entries = [Entry(START, EntryKind.WARN, "i-a", "eu-west-1", "enforce")]
    data.saved_hours = data.saved_usd = 0.0  # no machine stopped before the week was still off in it
    post = digest_message(data)
    [headline] = [b["text"]["text"] for b in post.blocks if b["type"] == "section"]
    assert headline == "No GPU machine sat idle this week. costguard stopped no machine this week."
    assert post.text == "GPU week: nothing idle cost anything"
    assert datetime.now(UTC) > START  # the fixture's week is in the past: dates are fixed, not today's


def test_a_commitment_figure_that_could_not_be_read_is_left_out_and_the_last_line_says_why() -> None:
    data = member_data()
    data.gaps = gaps_of(
        [f"{call}: AccessDeniedException" for call in ("GetReservationUtilization", "GetReservationCoverage")]
    )
    data.commitments = CommitmentUse(None, None, 91.0, None)
    housekeeping = json.dumps(digest_thread(data)[-1].message.slack_blocks())
    assert "not read used" not in housekeeping
    assert "not read of" not in housekeeping
    assert "Reserved Instances:" not in housekeeping  # neither of its figures was read
    assert "Savings Plans:" not in housekeeping  # its use is the post's headline; its coverage simply not there
    assert "Least-used commitment: Savings Plans, *91%* used." in json.dumps(digest_message(data).slack_blocks())
    assert "Not read this week: Reserved Instance use, Reserved Instance coverage. The figures leave them out." in (
        housekeeping
    )


def test_commitments_none_of_which_was_read_leave_no_empty_section() -> None:
    data = member_data()
    calls = ("GetReservationUtilization", "GetReservationCoverage", "GetSavingsPlansUtilization")
    data.gaps = gaps_of([f"{call}: AccessDeniedException" for call in (*calls, "GetSavingsPlansCoverage")])
    housekeeping = json.dumps(digest_thread(data)[-1].message.slack_blocks())
    assert "*Commitments*" not in housekeeping
    assert "not read used" not in housekeeping


def test_stops_that_stayed_off_under_an_hour_say_their_minutes_not_zero_hours() -> None:
    data = member_data()
    data.saved_hours, data.saved_usd = 0.42, 0.47
    housekeeping = json.dumps(digest_thread(data)[-1].message.slack_blocks())
    assert "Stopped machines stayed off 25 min." in housekeeping
    assert "0 h" not in housekeeping


def test_an_owner_idle_only_on_paid_capacity_is_left_out_of_the_owners_list() -> None:
    data = member_data()
    bob = data.this_week.per_owner["bob"]
    bob.waste_usd, bob.paid_idle_hours = 0.0, 4.0
    owners = digest_thread(data)[0].message
    [listed] = [b["text"]["text"] for b in owners.blocks if b["type"] == "section" and "Idle cost by owner" in str(b)]
    # the commitments say the paid hours; owners with no idle cost are not counted in words either
    assert listed == "*Idle cost by owner* (on the bill)\n• *alice*: *$34.03* (24 idle GPU-h)"
    assert "$0.00" not in json.dumps(owners.slack_blocks())


def test_the_owners_list_is_six_lines_at_most_the_rest_summed_on_its_last() -> None:
    data = member_data()
    for k in range(10):
        data.this_week.per_owner[f"user{k}"] = Figures(instances=1, idle_gpu_hours=2.0 + k, waste_usd=1.0 + k)
    owners = digest_thread(data)[0].message
    [listed] = [b["text"]["text"] for b in owners.blocks if b["type"] == "section" and "Idle cost by owner" in str(b)]
    lines = listed.split("\n")[1:]
    assert len(lines) == 6
    assert lines[0] == "• *alice*: *$34.03* (24 idle GPU-h)"  # the most first
    # 12 owners with idle cost: 5 named, the other 7 (user0-user5 at $1-$6, bob at $4.02) summed; only those
    # with something to act on get a direct message (digest/owners.py), so the line promises none
    assert lines[-1] == "• and 7 more, $25.02 together"


def test_the_digest_says_the_top_owner_s_share_in_the_post_and_their_dollars_in_the_thread_only() -> None:
    data = member_data()
    post = json.dumps(digest_message(data).slack_blocks())
    owners = json.dumps(digest_thread(data)[0].message.slack_blocks())
    assert "The most: *alice*, 89% of it." in post  # $34.03 of $38.06
    assert "$34.03" not in post
    assert "*alice*: *$34.03*" in owners
