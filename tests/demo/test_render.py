"""The demo page draws Slack's mrkdwn as Slack does: every token kind Slack documents ("Formatting text for app
surfaces"), each against the HTML expected; threads as threads; dates in the reader's zone, drawn by the page's
script in a real browser where one is installed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from demo import render
from testing.slack_standin import Posted
from tests.demo.test_demo import CHROMIUM, HEADLESS

USERS = {"bob@example.com": "U0BOB", "kim@example.com": "U0KIM"}
# Monday 16 November 2026, 08:00 UTC (09:00 in Paris)
STOP = "<!date^1794816000^{date_short_pretty} at {time}|Mon 16 Nov 09:00 CET>"
DRAWN_STOP = (
    '<time class="slack-date" datetime="2026-11-16T08:00:00Z" data-epoch="1794816000" '
    'data-format="{date_short_pretty} at {time}" title="Mon 16 Nov 09:00 CET">Mon 16 Nov 09:00 CET</time>'
)


@pytest.mark.parametrize(
    ("mrkdwn", "html"),
    [
        pytest.param(f"Stopped {STOP} by costguard", f"Stopped {DRAWN_STOP} by costguard", id="date"),
        pytest.param(f"*Stopped {STOP}*", f"<b>Stopped {DRAWN_STOP}</b>", id="bold around a date"),
        pytest.param(
            "<!date^1794816000^{date_num}^https://example.com/run|2026-11-16>",
            '<a href="https://example.com/run"><time class="slack-date" datetime="2026-11-16T08:00:00Z" '
            'data-epoch="1794816000" data-format="{date_num}" title="2026-11-16">2026-11-16</time></a>',
            id="date with a link",
        ),
        pytest.param("<!date^soon^{time}|about 9:00>", "about 9:00", id="unreadable date shows its fallback"),
        pytest.param("<@U0BOB>, your machine", '<span class="mention">@bob</span>, your machine', id="user mention"),
        pytest.param("<@U0ZED|zed> too", '<span class="mention">@zed</span> too', id="user mention with a label"),
        pytest.param("in <#C0ALERTS|ml-costs>", 'in <span class="mention">#ml-costs</span>', id="channel mention"),
        pytest.param("<!here> look", '<span class="mention">@here</span> look', id="special mention"),
        pytest.param("<!subteam^S0ML|@ml-infra>", '<span class="mention">@ml-infra</span>', id="user group mention"),
        pytest.param(
            "see <https://example.com/a?b=1&amp;c=2|the runbook>",
            'see <a href="https://example.com/a?b=1&amp;c=2">the runbook</a>',
            id="link with a label",
        ),
        pytest.param("<https://example.com>", '<a href="https://example.com">https://example.com</a>', id="bare link"),
        pytest.param("`i-0abc` is *idle*", "<code>i-0abc</code> is <b>idle</b>", id="code and bold"),
        pytest.param("`keep *this* as is`", "<code>keep *this* as is</code>", id="nothing formatted inside code"),
        pytest.param(
            "Run:\n```aws sagemaker update-domain --domain-id &lt;id&gt; '{\"a\":1}'```",
            "Run:<br><pre>aws sagemaker update-domain --domain-id &lt;id&gt; '{\"a\":1}'</pre>",
            id="code block",
        ),
        pytest.param(
            "&gt; kept by kim\n&gt; until 18:00\nthen",
            "<blockquote>kept by kim<br>until 18:00</blockquote>then",
            id="quote",
        ),
        pytest.param("_maybe_ ~not~", "<i>maybe</i> <s>not</s>", id="italic and strike"),
        pytest.param(
            "&lt;!channel&gt; &lt;https://example.com|re-authenticate&gt;",
            "&lt;!channel&gt; &lt;https://example.com|re-authenticate&gt;",
            id="escaped text stays text",
        ),
        pytest.param(":warning: two\nlines", "\u26a0\ufe0f two<br>lines", id="emoji and newline"),
    ],
)
def test_each_slack_token_kind_is_drawn_as_slack_draws_it(mrkdwn: str, html: str) -> None:
    assert render.mrkdwn(mrkdwn, USERS) == html


def test_a_notification_shows_a_date_as_its_fallback_and_a_mention_as_the_name() -> None:
    text = f"*Stopped* {STOP}, <@U0BOB>: <https://example.com|the runbook>"
    assert render.plain(text, USERS) == "*Stopped* Mon 16 Nov 09:00 CET, @bob: the runbook"


def message(ts: str, text: str, thread_ts: str = "", channel: str = "#ml-weekly", broadcast: bool = False) -> Posted:
    posted = Posted("bot", channel, text, [], ts)
    posted.thread_ts = thread_ts
    posted.broadcast = broadcast
    return posted


def slack_part(page: str) -> str:
    return page[page.index('<div class="slack">') : page.index("<h2>The story behind the messages</h2>")]


def test_replies_are_drawn_in_their_thread_under_the_parent_with_a_count() -> None:
    digest = message("100.000001", "Your GPU week")
    other = message("101.000002", "A warning", channel="#ml-costs")
    owners = message("102.000003", "Idle cost by owner", thread_ts="100.000001")
    stopped = message("103.000004", "What was stopped", thread_ts="100.000001", broadcast=True)
    page = slack_part(render.page("t", [], [digest, other, owners, stopped], USERS))
    conversations = page.split('<div class="conversation">')[1:]
    assert len(conversations) == 2  # the digest with its thread, then the warning
    first = conversations[0]
    assert first.index("Your GPU week") < first.index('<div class="thread">') < first.index("2 replies")
    assert first.index("2 replies") < first.index("Idle cost by owner") < first.index("What was stopped")
    assert first.count('<div class="message reply">') == 2
    assert "Also sent to the channel" in first.split("What was stopped")[0].rsplit('<div class="message reply">')[-1]
    assert "A warning" in conversations[1]
    assert "repl" not in conversations[1]


def test_an_uploaded_chart_is_drawn_at_its_moment_among_the_messages_not_after_them_all() -> None:
    digest = message("100.000001", "GPU week: $2,665 idle")
    later = message("200.000002", "Your GPU week", channel="U0BOB")
    chart = {"bytes": b"\x89PNG\r\n\x1a\nrest", "channel": "#ml-weekly", "title": "GPU-hours a day", "ts": "150.5"}
    page = slack_part(render.page("t", [], [digest, later], USERS, uploads=[chart]))
    assert page.index("GPU week: $2,665 idle") < page.index("GPU-hours a day") < page.index("Your GPU week")
    drawn = page[page.index("uploaded a file") - 400 : page.index("uploaded a file")]
    assert 'data-epoch="150"' in drawn  # its time beside its author, as a message's


def test_a_reply_whose_parent_is_not_shown_is_drawn_on_its_own() -> None:
    page = slack_part(render.page("t", [], [message("5.000001", "Lost reply", thread_ts="4.000000")], USERS))
    assert page.count('<div class="message">') == 1
    assert "repl" not in page.split("Lost reply")[0]


def test_the_page_has_no_raw_slack_token_and_draws_each_date_as_a_time() -> None:
    posted = message("1794816000.000001", f"*Stopped {STOP}* <@U0BOB>")
    posted.blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*Stopped {STOP}* <@U0BOB>"}}]
    page = render.page("t", [], [posted], USERS)
    assert page.count("<!") == 1
    assert page.startswith("<!doctype html>")
    assert "@date" not in page
    assert "&lt;!date" not in page
    assert slack_part(page).count('class="slack-date') == 2  # the block's date, and the message's own time


def browser_text(page: Path, zone: str, profile: Path) -> str:
    """The page's text once Chromium ran its script, in time zone `zone`, in English."""
    command = [
        str(CHROMIUM),
        *HEADLESS,
        "--lang=en-US",
        f"--user-data-dir={profile}",
        "--dump-dom",
        page.as_uri(),
    ]
    env = {"TZ": zone, "LANG": "en_US.UTF-8", "PATH": "/usr/bin:/bin", "HOME": str(profile)}
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True, env=env).stdout
    return re.sub(r"<[^>]+>", "", dom.split('<div class="slack">')[1])


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install chromium)")
def test_a_date_is_drawn_in_each_reader_s_zone_by_the_page_s_script(tmp_path: Path) -> None:
    posted = message("1794816000.000001", f"Stopped {STOP}; due <!date^1794816000^{{date_num}} {{time}}|fallback>")
    page = tmp_path / "index.html"
    page.write_text(render.page("t", [], [posted], USERS))
    tokyo = browser_text(page, "Asia/Tokyo", tmp_path / "tokyo")
    new_york = browser_text(page, "America/New_York", tmp_path / "new-york")
    assert "Stopped Nov 16, 2026 at 5:00\u202fPM;" in tokyo.replace(" PM", "\u202fPM")
    assert "due 2026-11-16 5:00\u202fPM" in tokyo.replace(" PM", "\u202fPM")
    assert "Stopped Nov 16, 2026 at 3:00\u202fAM;" in new_york.replace(" AM", "\u202fAM")
    assert tokyo.count("Mon 16 Nov 09:00 CET") == 1  # in the notification's text only: the body's is on hover
