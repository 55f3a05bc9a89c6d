"""`make demo` tells the same story whatever the time, and its page opens with what costguard said in Slack.

The story is run as `make demo` runs it (`python -m demo`, a process of its own), with the wall clock moved
by time-machine to a weekday afternoon (the Thursday 14:55 UTC at which bob's Start it again once found no
stop notice), morning and night, and a weekend; each run's scene log (demo-output/scenes.json) must say
that every scene happened. A run costs what `make demo` costs (~15-20 s here), four of them in all; the page
tests read the first run's page.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from costguard.aws.pricing import BUNDLED_USD_PER_HOUR
from demo import render
from demo.clock import PRESENT
from demo.fleet import GPUS
from demo.story import read
from testing.slack_text import plain_times_in
from tests.integration.test_digest_words import shown, words

ROOT = Path(__file__).resolve().parents[2]

# The wall clock the story is told at: (why, when).
WALL_CLOCKS = [
    ("Thursday afternoon, when bob's click found no stop notice", datetime(2026, 11, 26, 14, 55, tzinfo=UTC)),
    ("Tuesday morning, another season", datetime(2027, 3, 2, 7, 40, tzinfo=UTC)),
    ("Wednesday night, Paris on summer time", datetime(2026, 6, 10, 23, 30, tzinfo=UTC)),
    ("Sunday, years on", datetime(2031, 1, 12, 11, 0, tzinfo=UTC)),
]
RUN_DEMO = """
import sys
from datetime import datetime

import time_machine

with time_machine.travel(datetime.fromisoformat(sys.argv[1]), tick=True):
    from demo.__main__ import main

    sys.exit(main())
"""


@dataclass
class Run:
    code: int
    output: str
    out: Path  # its demo-output/


_RUNS: dict[datetime, Run] = {}


def demo_at(wall_clock: datetime, temporary: pytest.TempPathFactory) -> Run:
    """`python -m demo` in a folder of its own, the wall clock at `wall_clock` when it starts (once per moment)."""
    if wall_clock not in _RUNS:
        where = temporary.mktemp("demo")
        paths = [str(ROOT), str(ROOT / "layers" / "costguard"), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        done = subprocess.run(
            [sys.executable, "-c", RUN_DEMO, wall_clock.isoformat()],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        _RUNS[wall_clock] = Run(done.returncode, done.stdout + done.stderr, where / "demo-output")
    return _RUNS[wall_clock]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return demo_at(WALL_CLOCKS[0][1], tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize(("why", "wall_clock"), WALL_CLOCKS, ids=[w for w, _ in WALL_CLOCKS])
def test_every_scene_of_the_story_happens_whatever_the_wall_clock(
    why: str, wall_clock: datetime, tmp_path_factory: pytest.TempPathFactory
) -> None:
    run = demo_at(wall_clock, tmp_path_factory)
    assert (run.out / "scenes.json").exists(), run.output[-3000:]
    scenes = read(run.out / "scenes.json")
    missing = [f"{s['title']}: {s['expected']} != {s['got']}" for s in scenes if not s["happened"]]
    assert not missing, f"at {wall_clock:%A %H:%M} UTC ({why}):\n" + "\n".join(missing)
    assert run.code == 0, run.output[-3000:]
    assert len(scenes) >= 25  # the whole story, not the scenes before a crash
    reference = read(demo_at(WALL_CLOCKS[0][1], tmp_path_factory).out / "scenes.json")
    assert [s["title"] for s in scenes] == [s["title"] for s in reference]  # the same story, scene by scene
    # Nothing it shows is the wall clock's day: every date derives from the story's.
    shown = (run.out / "messages.json").read_text() + (run.out / "index.html").read_text()
    assert f"{wall_clock:%Y-%m-%d}" not in shown
    assert f"{PRESENT:%Y-%m-%d}" in shown


def slack_part(page: str) -> str:
    """The page's Slack messages, before the story that is folded below them."""
    start = page.index('<div class="slack">')
    return page[start : page.index("<h2>The story behind the messages</h2>", start)]


@pytest.mark.slow
def test_the_page_opens_with_the_messages_and_folds_the_story_below(first_run: Run) -> None:
    page = (first_run.out / "index.html").read_text()
    first_message = page.index('<div class="message">')
    assert first_message < page.index("<details")  # no log, no table, before the first message
    assert page.count("<table") == page[page.index("<h2>The story behind the messages</h2>") :].count("<table")
    assert page.count("<details") >= 4  # the story, the fleet, the decisions, the invocations, each folded


@pytest.mark.slow
def test_the_first_message_is_the_first_deploy_s_dry_run_report(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    dry_run = [m for m in messages if m["text"].startswith("[dry-run]")]
    assert dry_run
    assert messages[0] == dry_run[0]
    assert {m["channel"] for m in dry_run} == {"#ml-costs"}  # the alerts channel only, no owner
    assert not any(m["direct"] for m in dry_run)


@pytest.mark.slow
def test_every_time_and_day_the_story_s_messages_show_is_in_each_reader_s_own_zone(first_run: Run) -> None:
    said = json.loads((first_run.out / "said.json").read_text())
    assert {s["how"] for s in said} >= {"chat.postMessage", "chat.update"}  # the edits too
    assert len(said) > len(json.loads((first_run.out / "messages.json").read_text()))
    plain = plain_times_in([(s["how"], s) for s in said])
    assert not plain, f"{len(plain)} time(s) as plain text:\n" + "\n".join(plain)


@pytest.mark.slow
def test_no_message_the_demo_posts_or_edits_has_a_bracketed_plural_or_a_figure_said_as_not_read(
    first_run: Run,
) -> None:
    said = json.loads((first_run.out / "said.json").read_text())
    assert len(said) > 40  # every post and every edit of the story
    broken = [
        f"{s['how']} to {s['channel']}: {phrase!r} in {s['text'][:80]!r}"
        for s in said
        for phrase in ("(s)", "not read used", "not read of", "at not measured", "*$0.00* idle", ": not read;")
        if phrase in s["text"] + json.dumps(s["blocks"])
    ]
    assert not broken, "\n".join(broken)
    previews = [s["text"] for s in said]
    assert not [p for p in previews if re.match(r"[^$]*: \$0\.00\b", p)]  # no preview leads with nothing


@pytest.mark.slow
def test_the_page_draws_every_emoji_code_its_messages_carry(first_run: Run) -> None:
    messages = (first_run.out / "messages.json").read_text()
    slack = slack_part((first_run.out / "index.html").read_text())
    used = [code for code in render.EMOJI if code in messages]
    assert used  # the story's messages do carry some
    for code in used:
        assert code not in slack
        assert render.EMOJI[code] in slack


def product_emoji_codes() -> set[str]:
    """The Slack emoji codes in costguard's own strings (layers/costguard)."""
    codes: set[str] = set()
    for path in (ROOT / "layers" / "costguard" / "costguard").rglob("*.py"):
        tree = ast.parse(path.read_text())
        # An f-string is read whole, its values as "{}": "arn:{}:ssm:{}" holds no emoji code.
        parts = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in node.values)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in parts:
                text = node.value
            else:
                continue
            codes |= set(re.findall(r"(?:^|(?<=[\s(>*_]))(:[a-z0-9_+]+:)(?=[\s.,;)!?*_]|$)", text))
    return codes


def test_every_emoji_code_costguard_writes_is_drawn_by_the_page() -> None:
    codes = product_emoji_codes()
    assert ":warning:" in codes  # the scan finds them
    assert codes <= set(render.EMOJI), f"add to demo/render.py's EMOJI: {sorted(codes - set(render.EMOJI))}"
    assert render.mrkdwn(":white_check_mark: *kept*") == "\u2705 <b>kept</b>"
    header = {"type": "header", "text": {"type": "plain_text", "text": ":rotating_light: Budget", "emoji": True}}
    assert "\U0001f6a8 Budget" in render.block(header, {}, {})


@pytest.mark.slow
def test_the_page_draws_every_slack_date_and_leaves_no_raw_token(first_run: Run) -> None:
    page = (first_run.out / "index.html").read_text()
    assert page.startswith("<!doctype html>")
    assert page.count("<!") == 1  # the doctype's: no <!date…>, <!channel> or <!here> left as Slack wrote it
    assert "@date" not in page
    assert "&lt;!date" not in page
    messages = json.loads((first_run.out / "messages.json").read_text())
    dates = sum(json.dumps(m["blocks"] or m["text"]).count("<!date^") for m in messages)  # what the card shows
    assert dates > 0
    slack = slack_part(page)
    assert slack.count('<time class="slack-date"') == dates  # each one drawn in the reader's zone
    uploads = slack.count(": uploaded a file</span>")
    assert uploads >= 2  # the charts and the deep dive's CSV, each drawn at its moment
    assert slack.count('<time class="slack-date posted"') == len(messages) + uploads  # each one's own time too


@pytest.mark.slow
def test_the_page_draws_each_reply_in_its_thread_under_its_parent(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    if not any("thread_ts" in m for m in messages):
        pytest.skip("this version of the Slack stand-in does not record threads")
    replies = [m for m in messages if m.get("thread_ts")]
    assert replies  # the digest's details and the stop notices are replies
    slack = slack_part((first_run.out / "index.html").read_text())
    assert slack.count('<div class="message reply">') == len(replies)
    parents = {(m["channel"], m["thread_ts"]) for m in replies}
    assert slack.count('<div class="thread">') == len(parents)
    counts = re.findall(r'<div class="replies">(\d+) repl(?:y|ies)</div>', slack)
    assert sum(int(c) for c in counts) == len(replies)


def said_in(messages: list[dict[str, Any]], channel: str, opening: str) -> str:
    """The whole text (fallback and blocks) of the message in `channel` whose fallback opens with `opening`,
    and of its thread's replies."""
    [parent] = [m for m in messages if m["channel"] == channel and m["text"].startswith(opening)]
    thread = [m for m in messages if m["channel"] == channel and m.get("thread_ts") == parent["ts"]]
    if not any("thread_ts" in m for m in messages):  # a Slack stand-in that kept no threads: the posts after it
        after = [m for m in messages[messages.index(parent) + 1 :] if m["channel"] == channel]
        thread = list(itertools.takewhile(lambda m: not m["text"].startswith(("GPU week: $", "GPU week,")), after))
    return "\n".join(m["text"] + json.dumps(m["blocks"]) for m in [parent, *thread])


def dollars(pattern: str, text: str) -> list[float]:
    """Every amount `pattern` (a regex with one group around the amount, without "$") finds in `text`."""
    return [float(x.replace(",", "")) for x in re.findall(pattern, text)]


def shown_to(amount: float) -> float:
    """Half the unit an amount was shown to: a cent, or a dollar for those shown whole ($5,129)."""
    return 0.005 if amount != round(amount) else 0.5


def figures(digest: str) -> dict[str, float]:
    """An account's weekly digest: its idle cost on the bill, what costguard's stops saved, how many stops."""
    [idle] = dollars(r"GPU week: \$([\d,.]+) idle", digest)
    saved = set(dollars(r"\$([\d,.]+)\*? saved", digest) + dollars(r"costguard made saved \*\$([\d,.]+)\*", digest))
    assert len(saved) == 1, f"the digest gives two savings: {saved}"
    [stops] = [int(x) for x in re.findall(r"(\d+) stops?(?=[;.,])", digest)]  # not "1 stop whose machine..."
    return {"idle": idle, "saved": saved.pop(), "stops": stops}


@pytest.mark.slow
def test_every_figure_of_the_week_agrees_from_one_message_to_another(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    research = figures(said_in(messages, "#ml-weekly", "GPU week: $"))
    training = figures(said_in(messages, "#ml-training-weekly", "GPU week: $"))
    organization = said_in(messages, "#ml-weekly", "GPU week, 2 accounts")
    for label, week in (("research", research), ("training", training)):
        [line] = re.findall(rf"\*{label} \(\d+\)\*:[^\\]*", organization)
        assert dollars(r"waste \$([\d,.]+)", line) == [week["idle"]], line
        assert dollars(r"\$([\d,.]+) saved", line) == [week["saved"]], line
        assert [int(x) for x in re.findall(r"(\d+) stopped", line)] == [week["stops"]], line
    # The sums of figures each shown rounded: within the rounding of the two.
    savings = (research["saved"], training["saved"])
    [idle] = dollars(r"\*\$([\d,.]+)\* on the bill that stops would have saved", organization)
    assert abs(idle - research["idle"] - training["idle"]) <= 1
    [saved] = dollars(r"\*\$([\d,.]+) saved\*", organization)
    assert abs(saved - research["saved"] - training["saved"]) <= sum(map(shown_to, (saved, *savings))) + 1e-9
    assert [int(x) for x in re.findall(r"costguard stopped (\d+) machines", organization)] == [
        research["stops"] + training["stops"]
    ]


def research_fleet(output: str) -> list[str]:
    """The instance types of the hub's (research's) machines, as the demo printed its fleet at the end."""
    table = output[output.index("== The fleet at the end") : output.index("== Slack:")]
    return re.findall(r"^ +\S+ +(?:us-east-1|us-west-2) +(\S+) ", table, re.MULTILINE)


WEEK = 7 * 24  # hours


@pytest.mark.slow
def test_the_weekly_digest_s_saving_is_consistent_with_its_fleet_s_week(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    week = figures(said_in(messages, "#ml-weekly", "GPU week: $"))
    prices = [BUNDLED_USD_PER_HOUR[t] for t in research_fleet(first_run.output) if t in GPUS]
    assert len(prices) >= 20  # the research account's GPU machines, as printed
    # At most the whole GPU fleet's week at list price; at least an hour of the cheapest GPU machine a stop
    # (a week's stops keep machines off overnight; Reserved Instance hours, $0 on the bill, leave room).
    assert week["saved"] <= WEEK * sum(prices)
    assert week["stops"] >= 10, week  # a week of sweeps, not the story's hour
    assert week["saved"] >= week["stops"] * min(prices) * 1.0, week


@pytest.mark.slow
def test_the_deep_dive_s_quarter_is_the_weekly_digest_s_week_repeated_and_the_transcript_says_so(
    first_run: Run,
) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    week = figures(said_in(messages, "#ml-weekly", "GPU week: $"))
    deep_dive = said_in(messages, "#ml-weekly", "EC2 deep dive")
    found = re.search(
        r"costguard's quarter\* \((\d+) weekly records?\): [\d,]+ idle GPU-hours \(\$([\d,.]+) that stops would "
        r"have saved.*?(\d+) idle machines? stopped, saving \$([\d,.]+)",
        deep_dive,
    )
    assert found, deep_dive[-1500:]
    weeks, idle, stopped, saved = int(found[1]), *(float(x.replace(",", "")) for x in found.group(2, 3, 4))
    assert 12 <= weeks <= 14  # every week that starts in the quarter
    # Each week is the one the weekly digest posted: its figures, `weeks` times, within what their rounding hides.
    assert stopped == weeks * week["stops"]
    assert abs(saved - weeks * week["saved"]) <= weeks * shown_to(week["saved"]) + shown_to(saved)
    assert abs(idle - weeks * week["idle"]) <= weeks * shown_to(week["idle"]) + shown_to(idle)
    # Said where the story is told: the quarter is one simulated week, repeated.
    assert f"{weeks} weekly records, each the week the demo simulated" in first_run.output
    assert "repeats the one week the demo simulates" in (first_run.out / "index.html").read_text()


@pytest.mark.slow
def test_every_team_digest_the_demo_posts_is_at_most_400_words_in_all_its_posts(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    posts = [m for m in messages if m["text"].startswith("GPU week: ") and not m.get("thread_ts")]
    assert len(posts) == 2  # research's and training's
    counted = {}
    for post in posts:
        thread = [m for m in messages if m["channel"] == post["channel"] and m.get("thread_ts") == post["ts"]]
        counted[post["channel"]] = sum(words(shown(m["blocks"])) for m in [post, *thread])
    assert max(counted.values()) <= 400, counted


@pytest.mark.slow
def test_the_weekly_digest_compares_its_idle_cost_with_a_week_before_of_the_same_fleet(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    [headline] = [m["text"] for m in messages if m["channel"] == "#ml-weekly" and m["text"].startswith("GPU week: $")]
    # The week before had the same machines and nothing to stop them at night: this week, with costguard's
    # stops, idled less. (With the week before holding 11 of its machines, it said "+250% on last week".)
    found = re.search(r"\(−(\d+)% on last week\)", headline)
    assert found, headline
    assert 0 < int(found[1]) < 100


@pytest.mark.slow
def test_the_deep_dive_reads_cost_anomaly_detection_once_the_demo_posted_one_of_its_anomalies(first_run: Run) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    anomalies = [m for m in messages if m["text"].startswith("Cost anomaly:")]
    assert anomalies  # the story posts one, from monitor ml-services
    deep_dive = said_in(messages, "#ml-weekly", "EC2 deep dive")
    assert "*Anomalies* (AWS Cost Anomaly Detection)" in deep_dive
    assert "Cost Anomaly Detection is not on" not in deep_dive


@pytest.mark.slow
def test_the_studio_settings_without_idle_shutdown_are_counted_alike_in_the_alert_and_the_digest(
    first_run: Run,
) -> None:
    messages = json.loads((first_run.out / "messages.json").read_text())
    [alert] = [int(x) for m in messages for x in re.findall(r"^(\d+) Studio setting", m["text"])]
    digest = said_in(messages, "#ml-weekly", "GPU week: $")
    [counted] = [int(x) for x in re.findall(r"(\d+) Studio domain, profile or space setting", digest)]
    assert alert == counted


CHROMIUM = next((p for p in ("chromium", "chromium-browser", "google-chrome") if shutil.which(p)), None)
# As the machine's notes advise: headless, no sandbox (root), and no background calls to Google's hosts.
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMIUM_FLAGS = [*HEADLESS, "--hide-scrollbars"]
SCREEN = (1280, 900)
MEASURE = """<script>
window.addEventListener("load", () => {
  const first = document.querySelector(".message");
  const shown = first.querySelector(".header, .section, .text");
  document.body.dataset.measured = JSON.stringify({
    message_top: first.getBoundingClientRect().top,
    first_block_bottom: shown.getBoundingClientRect().bottom,
    viewport: [window.innerWidth, window.innerHeight],
  });
});
</script>"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install chromium)")
def test_a_screenshot_of_the_page_in_headless_chromium_shows_the_first_message(first_run: Run, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    measured_page = tmp_path / "index.html"
    measured_page.write_text((first_run.out / "index.html").read_text().replace("</body>", MEASURE + "</body>"))
    browser = [
        CHROMIUM,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={SCREEN[0]},{SCREEN[1]}",
    ]
    shot = tmp_path / "first-screen.png"
    subprocess.run(
        [*browser, f"--screenshot={shot}", measured_page.as_uri()], capture_output=True, timeout=120, check=True
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = subprocess.run(
        [*browser, "--dump-dom", measured_page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    found = re.search(r'data-measured="([^"]+)"', dom)
    assert found, dom[:500]
    measured = json.loads(found.group(1).replace("&quot;", '"'))
    assert 0 <= measured["message_top"] < measured["first_block_bottom"] <= SCREEN[1], measured


OVERFLOW = """<script>
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const over = [...document.querySelectorAll(".slack *")].filter((e) => e.getBoundingClientRect().right > width + 1);
  document.body.dataset.overflow = JSON.stringify(over.map((e) => e.tagName + ": " + e.textContent.slice(0, 60)));
});
</script>"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine (Debian: apt-get install chromium)")
def test_at_a_phone_s_width_nothing_in_a_message_runs_off_the_card(first_run: Run, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    measured_page = tmp_path / "index.html"
    measured_page.write_text((first_run.out / "index.html").read_text().replace("</body>", OVERFLOW + "</body>"))
    browser = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=480,2000"]
    dom = subprocess.run(
        [*browser, "--dump-dom", measured_page.as_uri()], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    found = re.search(r'data-overflow="([^"]*)"', dom)
    assert found, dom[:500]
    assert json.loads(found.group(1).replace("&quot;", '"')) == []
