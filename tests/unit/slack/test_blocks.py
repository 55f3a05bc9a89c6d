from __future__ import annotations

import re
from datetime import UTC, date, datetime

from costguard.slack.blocks import (
    CLOCK,
    DAY,
    EMPTY,
    MAX_BLOCKS,
    MAX_SECTION,
    MAX_VALUE,
    Message,
    actions,
    bullet_list,
    button,
    context,
    escape,
    fields_section,
    header,
    here,
    link,
    mention,
    mrkdwn,
    on_day,
    person,
    section,
    times_in,
    when,
)
from testing.blockkit import problems


def test_user_text_is_escaped_for_mrkdwn() -> None:
    assert escape("<!channel> & co") == "&lt;!channel&gt; &amp; co"


def test_section_text_is_clipped_to_slack_limit() -> None:
    block = section("x" * 5000)
    assert len(block["text"]["text"]) == MAX_SECTION
    assert block["text"]["text"].endswith("…")


def test_header_and_button_are_clipped() -> None:
    assert len(header("h" * 300)["text"]["text"]) == 150
    assert len(button("b" * 100, "keep", "i-1")["text"]["text"]) == 75


def test_message_with_too_many_blocks_keeps_fifty_and_says_so() -> None:
    message = Message("t", tuple(section(str(i)) for i in range(70)))
    assert len(message.blocks) == MAX_BLOCKS
    assert message.blocks[-1]["elements"][0]["text"] == "…21 more blocks left out"


def test_bullet_list_fits_a_section_and_counts_what_it_left_out() -> None:
    lines = [f"instance i-{n:017d} is idle" for n in range(500)]
    text = bullet_list(lines)
    assert len(text) <= MAX_SECTION
    shown = text.count("• ")
    assert text.endswith(f"…and {500 - shown} more")


def test_bullet_list_shows_everything_when_it_fits() -> None:
    assert bullet_list(["a", "b"]) == "• a\n• b"


def test_plain_text_is_escaped_by_every_builder_and_costguards_markup_is_not() -> None:

    assert section("<!channel> & co")["text"]["text"] == "&lt;!channel&gt; &amp; co"
    assert context("<@U1>")["elements"][0]["text"] == "&lt;@U1&gt;"
    assert Message("<#C1|x>").text == "&lt;#C1|x&gt;"
    assert section(mrkdwn("{} kept {}", mention("U0ALICE"), "<!here>"))["text"]["text"] == (
        "<@U0ALICE> kept &lt;!here&gt;"
    )
    assert here() + " <b>" == "<!here> &lt;b&gt;"
    assert "x: " + mention("U0BOB") == "x: <@U0BOB>"


def test_only_slack_ids_are_mentions_and_only_https_urls_are_links() -> None:

    assert mention("U0ALICE> <!channel") == "U0ALICE&gt; &lt;!channel"
    assert link("https://console.aws.amazon.com/x", "<team>") == "<https://console.aws.amazon.com/x|&lt;team&gt;>"
    assert link("javascript:alert(1)", "t") == "t (javascript:alert(1))"
    assert link("https://a.example/x|<!channel>", "t").count("<") == 0
    assert link("https://a.example/x\n", "t").count("<") == 0  # a trailing newline breaks a link: text


def test_a_long_user_value_is_cut_and_no_entity_is_cut_in_half() -> None:

    assert len(mrkdwn("{}", "x" * 1000)) == MAX_VALUE
    cut = section("&" * 2000)["text"]["text"]
    assert cut.endswith("&amp;…")


def test_an_empty_value_never_makes_an_empty_text_slack_would_refuse() -> None:
    # A value AWS or a user left blank (a tag, an id): Slack refuses a text object with no character.
    blocks = [
        header(""),
        section(""),
        section("x", fields=["", "y"]),
        fields_section([""]),
        context(""),
        actions("b", [button("", "keep", "i-1")]),
    ]
    assert problems({"text": "fallback", "blocks": blocks}) == []
    assert context("")["elements"][0]["text"] == EMPTY
    assert header("")["text"]["text"] == EMPTY


# ------------------------------------------------------------------ times, and people


def test_a_time_is_slacks_own_date_each_reader_sees_in_their_zone_its_fallback_naming_one() -> None:
    moment = datetime(2026, 11, 21, 16, 8, tzinfo=UTC)
    assert when(moment, "Europe/Paris") == "<!date^1795277280^{date_short_pretty} at {time}|Sat 21 Nov 17:08 CET>"
    assert when(moment) == "<!date^1795277280^{date_short_pretty} at {time}|Sat 21 Nov 16:08 UTC>"
    assert when(moment, "America/New_York", style=CLOCK) == "<!date^1795277280^{time}|11:08 EST>"
    # A day alone: its fallback has the year and says the zone whose day it is, as a time's does.
    assert when(moment, "Nowhere/Atlantis", style=DAY) == "<!date^1795277280^{date_short_pretty}|Sat 21 Nov 2026 UTC>"
    assert when(moment, "Asia/Tokyo", style=DAY).endswith("|Sun 22 Nov 2026 JST>")
    assert section(mrkdwn("Stops {}.", when(moment)))["text"]["text"].startswith("Stops <!date^")  # never escaped


def test_clock_times_in_what_the_rules_wrote_become_slack_dates_near_now_and_the_rest_is_escaped() -> None:
    now = datetime(2026, 11, 21, 0, 10, tzinfo=UTC)
    said = times_in("a GPU was in use at 23:55 UTC & <x>; no check between 23:50 and 00:05 UTC", now)
    assert said.count("<!date^") == 3
    assert [int(t) for t in re.findall(r"<!date\^(\d+)", said)] == [
        int(datetime(2026, 11, 20, 23, 55, tzinfo=UTC).timestamp()),  # yesterday's 23:55: the nearest to now
        int(datetime(2026, 11, 20, 23, 50, tzinfo=UTC).timestamp()),
        int(datetime(2026, 11, 21, 0, 5, tzinfo=UTC).timestamp()),
    ]
    assert "&amp; &lt;x&gt;" in said
    learned = times_in("starts work at about 09:00 Europe/Paris on weekdays", now)
    assert "|09:00 CET>" in learned
    assert times_in("at 25:00 UTC, on Mars/Olympus 09:00", now) == "at 25:00 UTC, on Mars/Olympus 09:00"


def test_a_day_without_a_time_is_its_noon_the_same_day_for_a_reader_up_to_12_hours_away() -> None:
    said = on_day(date(2027, 6, 4))
    assert said == "<!date^1812110400^{date_short_pretty}|Fri 04 Jun 2027 UTC>"
    assert datetime.fromtimestamp(1812110400, UTC) == datetime(2027, 6, 4, 12, tzinfo=UTC)
    assert on_day(date(2027, 6, 4), "Europe/Paris").endswith("|Fri 04 Jun 2027 CEST>")


def test_the_days_and_windows_the_rules_write_become_slack_dates_near_now() -> None:
    now = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)  # a Saturday
    epochs = lambda said: [datetime.fromtimestamp(int(t), UTC) for t in re.findall(r"<!date\^(\d+)", said)]  # noqa: E731
    day_and_time = times_in("no health check since Wed 18 Nov 12:50 UTC (the last at Thu 12:55 UTC)", now)
    assert epochs(day_and_time) == [
        datetime(2026, 11, 18, 12, 50, tzinfo=UTC),
        datetime(2026, 11, 19, 12, 55, tzinfo=UTC),
    ]
    assert "^{date_short_pretty} at {time}|Wed 18 Nov 12:50 UTC>" in day_and_time
    assert "Thu" not in day_and_time.replace("|Thu 19 Nov 12:55 UTC>", "")  # the weekday became the date
    alone = times_in("no invocation in 14 days; last invoked Wed 04 Nov", now)
    assert alone == (
        "no invocation in 14 days; last invoked <!date^1793793600^{date_short_pretty}|Wed 04 Nov 2026 UTC>"
    )
    assert epochs(times_in("invoked on Wed 30 Dec", datetime(2027, 1, 2, tzinfo=UTC))) == [
        datetime(2026, 12, 30, 12, tzinfo=UTC)  # last year's, the nearer
    ]
    window = times_in("worked within 08:00-10:00 UTC on 5 days", now)
    assert re.fullmatch(
        r"worked within <!date\^\d+\^\{time\}\|08:00 UTC>-<!date\^\d+\^\{time\}\|10:00 UTC> on 5 days", window
    )
    as_written = "Sat 31 Feb, Mon 1 Nov, 12:00"  # no such day, no zone: as written
    assert times_in(as_written, now) == as_written
    assert times_in("tag it `daily 08:00-10:00 UTC`", now) == "tag it `daily 08:00-10:00 UTC`"  # a value to copy


def test_an_owner_is_named_by_mention_else_by_name_never_by_address_nor_as_root() -> None:
    assert person("quinn@example.com", "U0QUINN") == "<@U0QUINN>"
    assert person("quinn@example.com") == "quinn"
    assert person("root") == ""
    assert person("") == ""
    assert person("<!here>@evil.example") == "&lt;!here&gt;"
