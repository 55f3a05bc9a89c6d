from __future__ import annotations

from costguard.slack.blocks import (
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
    section,
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
