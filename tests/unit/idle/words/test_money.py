"""What a stop is worth, as the messages say it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from costguard.core.bill import OffWorth
from costguard.core.money import Basis, Hold, Marginal
from costguard.core.records import Instance
from costguard.idle.words.money import prepaid_idle_notice, saving_line
from costguard.slack.blocks import mention
from costguard.slack.buttons import Button
from testing.slack_text import as_read, dates_in

NOW = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


def test_a_saving_says_the_bill_and_why_with_the_list_price_beside_it_when_they_differ() -> None:
    partial = Marginal(10.98, 21.96, Basis.ON_DEMAND, "on demand: 3 p4d run, 2.5 Reserved Instances")
    assert saving_line(partial) == (
        "Saves $10.98/h on the bill (on demand: 3 p4d run, 2.5 Reserved Instances; $21.96/h on demand)"
    )
    assert saving_line(Marginal(21.96, 21.96, Basis.ON_DEMAND, "on demand")) == "Saves $21.96/h on the bill (on demand)"
    unread = Marginal(
        21.96, 21.96, Basis.ON_DEMAND, "on demand", caveat="Reserved Instances not read; priced on demand"
    )
    assert saving_line(unread).endswith("(on demand; Reserved Instances not read; priced on demand)")


def test_the_prepaid_notice_names_the_block_until_when_and_offers_stop_anyway() -> None:
    end = NOW + timedelta(days=2)
    block = Hold("cr-0abc", "p5.48xlarge", "us-east-1a", 2, 0, end, block=True)
    machine = Instance("i-0123456789abcdef0", "us-east-1", "p5.48xlarge", "running", NOW, zone="us-east-1a")
    marginal = Marginal(0.0, 55.04, Basis.CAPACITY_BLOCK, "in Capacity Block cr-0abc: prepaid", hold=block, until=end)
    message = prepaid_idle_notice(machine, marginal, mention("U123"), "3 h")
    text = as_read(message.slack_blocks())
    assert "<@U123>'s `i-0123456789abcdef0`" in text
    assert "Capacity Block cr-0abc (prepaid until Thu 26 Nov 14:00 UTC)" in text
    assert dates_in(message.slack_blocks()) == [int(end.timestamp())]
    assert "stopping it saves nothing on the bill" in text
    assert "$55.04" in text
    [stop] = message.blocks[-1]["elements"]
    assert (stop["action_id"], stop["text"]["text"]) == (Button.STOP_NOW.value, "Stop anyway")
    assert (
        message.text
        == "p5.48xlarge i-0123456789abcdef0 idles on Capacity Block cr-0abc: a stop saves nothing, so it keeps running"
    )


def test_a_stop_priced_over_its_off_period_says_what_it_saves_by_when_and_from_when_the_plan_spills() -> None:
    night = Marginal(0.0, 21.96, Basis.SAVINGS_PLAN, "covered: the Savings Plan's $35.00/h commitment is not used up")
    worth = OffWorth(131.76, NOW + timedelta(hours=19), 5.0, NOW + timedelta(hours=18), "the Savings Plan")
    assert saving_line(night, worth) == (
        "Saves about $132 by Wed 09:00 UTC on the bill: the Savings Plan spills from 08:00 UTC "
        "($0.00/h now: covered: the Savings Plan's $35.00/h commitment is not used up)"
    )
    unprofiled = OffWorth(None, NOW + timedelta(hours=19))
    assert saving_line(Marginal(21.96, 21.96, Basis.ON_DEMAND, "on demand"), unprofiled) == (
        "Saves $21.96/h on the bill (on demand)"  # no profile yet: the hour's price, as before
    )
