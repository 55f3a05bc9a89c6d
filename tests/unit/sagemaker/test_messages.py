"""SageMaker's messages (sagemaker/words/messages): what they say, and nothing unescaped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings

from costguard.core.records import Price
from costguard.core.sagemaker import IdleSetting
from costguard.core.series import Signal
from costguard.core.settings import SageMakerPolicy
from costguard.sagemaker.rules.activity import Activity, Verdict, endpoint_activity
from costguard.sagemaker.rules.decision import Action, Decision, decide
from costguard.sagemaker.rules.figures import SageMakerWeek, Zombie
from costguard.sagemaker.words.messages import (
    act_failed_notice,
    act_notice,
    digest_section,
    dry_run_notice,
    idle_settings_report,
    unattributed,
    warning,
)
from costguard.slack.blocks import person
from costguard.slack.live import Live
from testing.slack_text import as_read, dates_in, plain_times
from tests.unit.sagemaker.resources import (
    NOW,
    daily,
    endpoint_resource,
    idle,
    studio_app,
)
from tests.unit.test_hostile_text import assert_harmless, hostile


def test_the_warning_says_what_a_zombie_cost_since_its_last_invocation_and_a_day() -> None:
    activity = endpoint_activity(
        endpoint_resource(),
        {"churn-v2/AllTraffic": {Signal.CPU: daily(8, 2.0), Signal.INVOCATIONS: daily(11, 4.0)[-1:]}},
        window_start=NOW - timedelta(days=7),
        now=NOW,
    )
    decision = decide(endpoint_resource(), activity, SageMakerPolicy(), NOW)
    part = warning(endpoint_resource(), decision, Price(1.5, "pricing-api"), person("bob@example.com"), NOW)
    message = Live((part,)).message()
    body = as_read(message.blocks)
    assert message.blocks[0]["text"]["text"] == "Idle SageMaker endpoint · $72/day"  # cost first
    assert "costguard will not delete it: endpoint deletion is off (EndpointsDelete)." in body
    assert "$3.00/h × 2 instances · $72/day" in body
    # Invoked on Fri 13 Nov: from the end of that day to now, 10 days and 12 h at $3/h. That UTC day, in each
    # reader's zone (its noon: the same day for a reader up to 12 hours away).
    assert "Cost since its last invocation (Fri 13 Nov 2026 UTC): *$756*." in body
    assert datetime(2026, 11, 13, 12, tzinfo=UTC).timestamp() in dates_in(message.blocks)
    assert "bob, your endpoint" in body  # by name where Slack does not know him: never by address
    assert "@example.com" not in body


def test_a_hostile_owner_tag_reaches_slack_escaped_in_every_sagemaker_message() -> None:
    hostile = "<!channel> <https://example.com|re-authenticate>"
    resource = endpoint_resource(tags={"Owner": hostile})
    decision = decide(resource, idle(resource), SageMakerPolicy(endpoints_delete=True), NOW)  # type: ignore[arg-type]
    week = SageMakerWeek(endpoints=1, zombies=[Zombie("churn-v2", hostile, 36.0, hostile)], idle_shutdown_off=[hostile])
    for message in (
        Live((warning(resource, decision, Price(1.5, "pricing-api"), person(hostile), NOW),)).message(),
        Live((act_notice(resource, decision, Price(1.5, "pricing-api"), person(hostile), NOW),)).message(),
        unattributed([("endpoint/churn-v2", "us-east-1", hostile)], "Owner"),
    ):
        assert "<!channel>" not in json.dumps(message.blocks) + message.text
    assert "<!channel>" not in json.dumps(digest_section(week, NOW))
    assert "&lt;!channel&gt;" in json.dumps(digest_section(week, NOW))


@given(value=hostile)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
def test_every_sagemaker_message_escapes_what_it_did_not_write(value: str) -> None:
    # Owner tags, AWS's error messages, Studio names and CloudTrail reasons reach Slack only escaped.
    resource = endpoint_resource(tags={"Owner": value}, instance_type=value, region=value)
    activity = Activity(Verdict.IDLE, value, NOW - timedelta(days=7), last_invoked=NOW - timedelta(days=9))
    decision = Decision(resource.key, Action.WARN, value, NOW + timedelta(hours=24), activity=activity, why_not=value)
    unseen = Decision(
        "app/x", Action.WARN, value, will_act=False, why_not=value, activity=Activity(Verdict.UNSEEN, value)
    )
    app = studio_app(tags={"Owner": value})
    week = SageMakerWeek(
        notebooks=1,
        zombies=[Zombie(value, value, 3.0, value)],
        unwatched=[value],
        idle_shutdown_off=[value],
        errors=[value],
    )
    for message in (
        Live((warning(resource, decision, Price(1.5, "pricing-api"), person(value), NOW, whose=value),)).message(),
        Live((warning(app, unseen, Price(None, "unknown"), person(value), NOW),)).message(),
        Live((act_notice(resource, decision, Price(1.5, "bundled"), person(value), NOW),)).message(),
        dry_run_notice(resource, decision, Price(1.5, "pricing-api"), value),
        act_failed_notice(resource, value, value),
        idle_settings_report([IdleSetting("space", "d-1", value, "JupyterLab", False, None)], 120),
        unattributed([(value, value, value)], "Owner"),
    ):
        assert_harmless(message, value)
    assert_harmless({"blocks": digest_section(week, NOW)}, value)


def test_the_digest_s_zombie_endpoints_say_their_last_invocation_as_each_reader_s_day() -> None:
    reason = "no invocation in 14 days; last invoked Fri 13 Nov"
    week = SageMakerWeek(endpoints=1, zombies=[Zombie("churn-v2", "bob", 36.0, reason)])
    blocks = digest_section(week, NOW)
    assert "last invoked Fri 13 Nov 2026 UTC" in as_read(blocks)
    assert dates_in(blocks) == [int(datetime(2026, 11, 13, 12, tzinfo=UTC).timestamp())]
    assert not plain_times(blocks)


def test_the_digest_s_sagemaker_part_names_what_runs_in_real_plurals_and_leaves_out_the_zeros() -> None:
    week = SageMakerWeek(
        endpoints=1, daily_usd=17.67, zombie_days=7, idle_usd=130, warned=2, stopped=1, idle_shutdown_off=["a", "b"]
    )
    said = as_read(digest_section(week, NOW))
    assert "*SageMaker on GPUs*: 1 real-time endpoint, $17.67/day." in said  # one: nothing to put together
    assert "Idle this week: *7 endpoint-days* without an invocation: *$130*." in said
    assert "costguard warned 2 times and stopped 1 notebook instance." in said
    assert "2 Studio domain, profile or space settings without idle shutdown: `a`, `b`" in said
    assert "(s)" not in said
    for zero in ("0 h", "deleted 0", "0 kept"):
        assert zero not in said


def test_one_studio_setting_or_one_resource_without_an_owner_is_said_in_the_singular() -> None:
    one = idle_settings_report([IdleSetting("domain", "d-1", "research", "JupyterLab", False, None)], 120)
    assert one.text == "1 Studio setting let idle GPU apps run on"
    three = idle_settings_report(
        [
            IdleSetting("domain", "d-1", "research", "JupyterLab", False, None),
            IdleSetting("domain spaces", "d-1", "research", "JupyterLab", False, None),
            IdleSetting("space", "d-1", "lab", "JupyterLab", False, None),
        ],
        120,
    )
    assert three.text == "3 Studio settings let idle GPU apps run on"


def test_a_studio_setting_is_counted_once_whatever_app_types_it_leaves_without_idle_shutdown() -> None:
    # the demo's domain: its users' JupyterLab and Code Editor, its spaces' JupyterLab: two settings, three lines
    findings = [
        IdleSetting("domain", "d-research", "research", "JupyterLab", False, None),
        IdleSetting("domain", "d-research", "research", "CodeEditor", False, None),
        IdleSetting("domain spaces", "d-research", "research", "JupyterLab", False, None),
    ]
    report = idle_settings_report(findings, 120)
    assert report.text == "2 Studio settings let idle GPU apps run on"
    assert as_read(report.blocks).count("idle shutdown off") == 3
    week = SageMakerWeek(endpoints=1, idle_shutdown_off=sorted({f"{f.scope} {f.name}" for f in findings}))
    assert "2 Studio domain, profile or space settings without idle shutdown" in as_read(digest_section(week, NOW))
    assert unattributed([("nb", "us-east-1", "no create event")], "Owner").text == "1 SageMaker resource has no owner"
    assert unattributed([("nb", "r", "w")] * 2, "Owner").text == "2 SageMaker resources have no owner"


def test_a_lone_zombie_endpoint_s_cost_a_day_is_said_once_in_the_digest() -> None:
    reason = "no invocation in 7 days"
    alone = SageMakerWeek(endpoints=1, daily_usd=17.67, zombies=[Zombie("churn-v2", "bob", 17.67, reason)])
    said = as_read(digest_section(alone, NOW))
    assert said.count("$17.67") == 1
    assert "`churn-v2` (bob): no invocation in 7 days" in said
    two = SageMakerWeek(
        endpoints=2, daily_usd=30.0, zombies=[Zombie("a", "bob", 17.67, reason), Zombie("b", "bob", 12.33, reason)]
    )
    assert "`a` (bob): $17.67/day; no invocation" in as_read(digest_section(two, NOW))
    assert "*SageMaker on GPUs*: 2 real-time endpoints, $30.00/day together." in as_read(digest_section(two, NOW))
