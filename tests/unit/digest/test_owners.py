"""Each owner's week: told only with something to act on, one message a person whatever the accounts, and
handed to the hub in parts it checks as untrusted input."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from costguard.core.errors import EventValidationError
from costguard.digest.handoff import MAX_BODY, decode_owners, encode_owners
from costguard.digest.owners import IdleMachine, KeptIdle, OwnerWeek, RefusedStart, Suggestion, owner_message
from testing.slack_text import as_read, dates_in, plain_times

START = datetime(2026, 11, 16, tzinfo=UTC)
END = START + timedelta(days=7, hours=9)
ALICE = OwnerWeek(
    "alice", "alice@example.com", "", "", machines=2, gpu_hours=120.0, avg_gpu_util=41.0, idle_gpu_hours=30.0,
    waste_usd=75.5, warned=1, idle=(IdleMachine("i-0123456789abcdef0", "g5.12xlarge", 12.0, 136.13),),
)  # fmt: skip


def test_an_owner_is_told_only_with_idle_cost_of_ten_dollars_or_something_to_act_on() -> None:
    quiet = replace(ALICE, waste_usd=0.0, idle=())
    assert not quiet.to_act_on  # "$0.00 idle" is no reason to interrupt anyone
    assert not replace(quiet, waste_usd=9.99).to_act_on
    assert replace(quiet, waste_usd=10.0).to_act_on
    suggestion = Suggestion("i-0123456789abcdef0", "g5.12xlarge", "fewer-gpus", "g5.2xlarge", 5.672, 1.212, 312.2, "x")
    assert replace(quiet, advice=(suggestion,)).to_act_on
    keep = KeptIdle("i-0123456789abcdef0", END, 14.0, 12.0, 8.0)
    assert replace(quiet, keeps=(keep,)).to_act_on
    refused = RefusedStart("i-0123456789abcdef0", "p5.48xlarge", "alice", START, "no capacity", "not started")
    assert replace(quiet, refused=(refused,)).to_act_on


def test_one_message_says_a_persons_week_in_every_account_money_first() -> None:
    training = replace(ALICE, account="111122223333", account_name="training (111122223333)")
    research = replace(ALICE, account="123456789012", account_name="research (123456789012)", waste_usd=20.0)
    basis = {"111122223333": "Prices as your bill shows them: on demand.", "123456789012": "Prices: on-demand list."}
    message = owner_message([training, research], basis, now=END)
    text = json.dumps(message.slack_blocks())
    assert "*Your GPU week*: idle machines cost you *$95.50* across 2 accounts" in text
    assert "*training (111122223333)*: idle machines cost *$75.50* on the bill (30 idle GPU-hours)" in text
    assert "*research (123456789012)*: idle machines cost *$20.00* at on-demand list prices" in text
    assert text.count("Idle the longest, still running") == 2
    assert message.text == "Your GPU week: $95.50 idle"  # the two accounts' dollars are not of one kind
    assert message.blocks[-1]["elements"][0]["text"] == basis["111122223333"]
    one = owner_message([ALICE], {"": "Prices as your bill shows them: on demand."}, now=END)
    assert one.text == "Your GPU week: $75.50 idle on the bill"
    assert "*Your GPU week*: idle machines cost *$75.50* on the bill (30 idle GPU-hours): what stopping" in json.dumps(
        one.slack_blocks()
    )


def weeks(count: int) -> list[OwnerWeek]:
    advice = Suggestion("i-0123456789abcdef0", "p4d.24xlarge", "spot", "", 21.96, 7.69, 632.46, "b" * 300)
    keep = KeptIdle("i-0123456789abcdef0", END, 14.0, 12.0, 8.0)
    refused = RefusedStart("i-0123456789abcdef0", "p5.48xlarge", "", START, "no capacity", "not started: gave up", END)
    return [
        replace(ALICE, owner=f"user{n}", email=f"user{n}@example.com", advice=(advice,) * 3, keeps=(keep,) * 3,
                refused=(refused,) * 3, idle=ALICE.idle * 3)
        for n in range(count)
    ]  # fmt: skip


def test_the_owners_weeks_go_to_the_hub_in_parts_that_fit_and_come_back_unchanged() -> None:
    owners = weeks(300)
    parts = encode_owners("111122223333", "training", START, END, owners)
    assert len(parts) > 1
    assert all(len(p) <= MAX_BODY for p in parts)
    back = [decode_owners(p) for p in parts]
    assert [(p.part, p.parts) for p in back] == [(k, len(parts)) for k in range(len(parts))]
    got = [o for p in back for o in p.owners]
    assert len(got) == 300
    expected = replace(owners[7], account="111122223333", account_name="training (111122223333)")
    assert got[7] == expected
    assert encode_owners("111122223333", "", START, END, []) == []


def owners_body() -> dict[str, Any]:
    [body] = encode_owners("111122223333", "training", START, END, weeks(1))
    return dict(json.loads(body))


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda b: {**b, "kind": "costguard.week"}, "kind"),
        (lambda b: {**b, "account": "12"}, "account"),
        (lambda b: {**b, "part": 3, "parts": 2}, "part"),
        (lambda b: {**b, "parts": 1000}, "parts"),
        (lambda b: {**b, "owners": [{**b["owners"][0], "waste_usd": -1}]}, "waste_usd"),
        (lambda b: {**b, "owners": [{**b["owners"][0], "idle": [["i-1", "x", 1, 1]]}]}, r"idle\[0\]"),
        (lambda b: {**b, "owners": [{**b["owners"][0], "advice": [b["owners"][0]["advice"][0]] * 4}]}, "advice"),
        (
            lambda b: {**b, "owners": [{**b["owners"][0], "keeps": [["i-0123456789abcdef0", "Monday", 1, 1, 1]]}]},
            "time",
        ),
        (
            lambda b: {
                **b,
                "owners": [
                    {**b["owners"][0], "advice": [["i-0123456789abcdef0", "p4d.24xlarge", "<!here>", "", 1, 1, 1, ""]]}
                ],
            },
            "advice",
        ),
        (lambda b: {**b, "owners": [{**b["owners"][0], "owner": ""}]}, "owner"),
    ],
)
def test_an_owners_part_that_is_not_as_it_must_be_is_refused_naming_the_field(change: Any, complaint: str) -> None:
    with pytest.raises(EventValidationError, match=complaint):
        decode_owners(json.dumps(change(owners_body())))


def test_a_suggested_schedule_s_hours_are_on_the_reader_s_clock_and_its_tag_value_as_written() -> None:
    basis = "worked within 08:00-10:00 UTC on 7 days (14 of its 14 working hours), and sat idle 20 h outside them"
    schedule = Suggestion(
        "i-0123456789abcdef0", "g5.xlarge", "schedule", "daily 08:00-10:00 UTC", 1.01, 0.0, 20.2, basis
    )
    message = owner_message([replace(ALICE, advice=(schedule,))], {}, now=END)
    text = json.dumps(message.slack_blocks())
    assert "tag it `costguard:schedule` = `daily 08:00-10:00 UTC`" in text
    assert "Worked within 08:00 UTC-10:00 UTC on 7 days" in as_read(text)
    # The nearest 08:00 and 10:00 to the week's end (Monday 09:00): that morning's.
    assert dates_in(text) == [int((END - timedelta(hours=1)).timestamp()), int((END + timedelta(hours=1)).timestamp())]
    assert not plain_times(message.slack_blocks())


def test_a_week_whose_idle_time_cost_nothing_leads_with_its_news_not_with_zero_dollars() -> None:
    advice = Suggestion("i-0123456789abcdef0", "g5.12xlarge", "fewer-gpus", "g5.8xlarge", 5.672, 2.45, 261.0, "x")
    pat = replace(ALICE, waste_usd=0.0, idle_gpu_hours=0.0, idle=(), warned=0, advice=(advice,))
    message = owner_message([pat], {"": "Prices as your bill shows them: on demand."}, now=END)
    said = as_read(message.blocks)
    assert message.text == "Your GPU week: the same work for $261 less"
    assert "$0.00" not in message.text + said
    assert "*Your GPU week*: 2 machines, 120 GPU-hours at 41% average use; no idle time cost anything on the bill." in (
        said
    )
    assert "*g5.8xlarge* instead, $2.45/h rather than $5.67/h, *$261 less* this week" in said


def test_a_machine_without_gpu_telemetry_says_its_use_was_not_measured() -> None:
    message = owner_message([replace(ALICE, avg_gpu_util=None)], {"": ""}, now=END)
    said = as_read(message.blocks)
    assert "2 machines, 120 GPU-hours (GPU use not measured)." in said
    assert "not measured average" not in said
