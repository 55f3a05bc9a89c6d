"""Whoever can launch an instance writes its tags, and costguard posts them as a trusted bot.

For any string in any field a user or AWS controls (tags, owner and instance names, team names,
budget names, SNS subjects, Slack names, reasons, hook output), no message of any kind carries an
unescaped `<!…>`, `<@…>`, `<#…>` or link: the only `<…>` in a message are the ones costguard wrote
(a mention of the person who clicked, `<!here>` on a critical budget alert, the digest's own
dashboard links). And nothing is escaped twice: what Slack shows is what the user wrote.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costguard.budgets.anomalies import Anomaly, RootCause
from costguard.budgets.anomaly_messages import anomaly_message
from costguard.budgets.messages import budget_alert_message, raw_budget_message
from costguard.budgets.notifications import BudgetAlert, SnsNotification
from costguard.buttons.worker import ClickWorker
from costguard.commitments.messages import expiry_reminder, underused_alert
from costguard.core import tags
from costguard.core.records import Commitment, Drivers, Instance, Mover, Price, SpendPicture
from costguard.core.settings import IdlePolicy, Mode
from costguard.digest.commitments import CommitmentUse
from costguard.digest.gaps import Gap, permission_alert
from costguard.digest.handoff import OwnerWaste, decode, encode
from costguard.digest.organization.rules import OrganizationWeek, organization_message
from costguard.digest.owners import owner_message
from costguard.digest.weekly.rules.advice import Advice
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.keeps import OutlivedKeep
from costguard.digest.weekly.rules.messages import digest_message, digest_thread
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.summary import account_week, owner_weeks
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.words import messages as idle
from costguard.owners.messages import unattributed_message
from costguard.owners.report import Tagging
from costguard.owners.rules import OwnerDecision, OwnerSource
from costguard.slack import live
from costguard.slack.blocks import Message, person
from costguard.slack.buttons import Button
from costguard.slack.interactions import Click
from costguard.slack.live import Live
from costguard.slack.notifier import SlackCredentials, SlackNotifier
from costguard.state.claims import Claim, ClaimState

NOW = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)
CLICKER = "U0CLICKER"
DASHBOARD = "https://us-east-1.console.aws.amazon.com/cloudwatch/home#dashboards/dashboard/costguard-ml"

# What an attacker would write, mixed with anything else hypothesis finds. No ';', so "&amp;lt;" in a
# message can only come from escaping twice.
ATTACKS = [
    "<!channel>",
    "<!here|here>",
    "<!subteam^S0EVIL>",
    "<@U0EVIL>",
    "<#C0EVIL>",
    "<https://evil.example/login|re-authenticate>",
    "<mailto:a@evil.example|mail>",
    "&",
    "*bold* `code` _it_",
]
hostile = st.lists(
    st.one_of(st.sampled_from(ATTACKS), st.text(alphabet=st.characters(exclude_characters=";\x00"), max_size=30)),
    min_size=1,
    max_size=6,
).map("".join)

# The only markup costguard itself writes (and a link to an anomaly's page on the AWS console).
OWN_MARKUP = re.compile(
    rf"<@{CLICKER}>|<!here>|<{re.escape(DASHBOARD)}\|[^<>]*>|<!date\^\d+\^[a-z_{{}} ]+\|[^<>|]*>"
    r"|<https://console\.aws\.amazon\.com/[^\s<>|]*\|Open the anomaly in AWS Cost Anomaly Detection>"
    r"|<!date\^\d+\^\{date_short_pretty\}( \{time\})?\|[A-Za-z0-9 :]+>"  # a time, in each reader's zone
)


def texts(value: Any) -> list[str]:
    """Every string Slack renders as mrkdwn in a message or a response body."""
    if isinstance(value, Message):
        value = {"text": value.text, "blocks": value.slack_blocks()}
    found: list[str] = []
    if isinstance(value, dict):
        if value.get("type") in ("plain_text",):
            return found  # plain text is never parsed for mentions or links
        for key, item in value.items():
            if key in ("action_id", "value", "block_id", "url", "type"):
                continue
            found += [item] if isinstance(item, str) else texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found += [item] if isinstance(item, str) else texts(item)
    return found


def assert_harmless(message: Any, *values: str) -> None:
    for text in texts(message):
        left = OWN_MARKUP.sub("", text)
        assert not re.search("[<>]", left), f"unescaped markup in {text!r}"
        assert not re.search("&amp;(lt|gt|amp)", text), f"escaped twice: {text!r}"
    body = json.dumps(texts(message))
    for value in values:
        if len(value) > 4 and "<" in value:
            assert json.dumps(value)[1:-1] not in body, f"{value!r} reached the message as is"


def instance(value: str) -> Instance:
    return Instance(
        instance_id="i-0123456789abcdef0",
        region=value,
        instance_type=value,
        state="running",
        launch_time=NOW - timedelta(days=3),
        tags={"Owner": value, "Name": value, "Team": value, tags.KEEP_UNTIL: value, tags.KEPT_BY: value},
        platform=value,
    )


def decision(value: str, action: Action) -> Decision:
    judgement = Judgement(Verdict.IDLE, value, idle_since=NOW - timedelta(hours=3))
    return Decision(
        "i-0123456789abcdef0",
        action,
        value,
        stop_after=NOW + timedelta(minutes=30),
        will_stop=True,
        judgement=judgement,
        activity=value,
    )


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(value=hostile)
def test_idle_warnings_and_notices_escape_every_user_string(value: str) -> None:
    box, price, who = instance(value), Price(4.1, value), person(value)
    learned = replace(decision(value, Action.WARN), next_work=value, start_at=NOW + timedelta(hours=9))
    warning = idle.idle_warning(box, learned, price, who, NOW, hours=value, whose=value, zone=value)
    for part in (
        idle.idle_warning(box, decision(value, Action.WARN), price, who, NOW),
        warning,
        idle.stopped_part(box, decision(value, Action.STOP), price, who, NOW, zone="UTC"),
        idle.cancelled_part(box, decision(value, Action.CANCEL_STOP), price, who, NOW),
        live.settled(idle.cleared(box, NOW - timedelta(days=9), "UTC"), warning),
        idle.told_above(warning),
    ):
        assert_harmless(Live((part,)).message(), value)
        assert_harmless(Live((part, replace(part, key="i-2"))).message(), value)  # among others: its line
    assert_harmless(idle.not_stopped_notice(box, decision(value, Action.STOP), "notify-only", value), value)
    assert_harmless(idle.dry_run_notice(box, decision(value, Action.WARN), price, value), value)
    assert_harmless(idle.stop_failed_notice(box, value, value), value)
    scheduled = replace(box, tags={**box.tags, tags.SCHEDULE: value})
    assert_harmless(idle.morning_start_note(scheduled, NOW, who), value)
    assert_harmless(idle.schedule_unreadable_notice(scheduled, value, who), value)


@SETTINGS
@given(value=hostile)
def test_budget_alerts_parsed_and_raw_escape_names_subjects_and_keys(value: str) -> None:
    movers = [Mover(value, 120.0, 20.0)]
    picture = SpendPicture(100.0, 300.0, movers, movers, movers, [value])
    for amount in (50.0, 95.0, 130.0):
        alert = BudgetAlert(value, "Cost", 100.0, "ACTUAL", amount, amount, "123456789012", date(2026, 11, 20))
        assert_harmless(budget_alert_message(alert, picture), value)
    forecast = BudgetAlert(value, "Cost", 100.0, "FORECASTED", 100.0, 120.0)
    assert_harmless(budget_alert_message(forecast, picture), value)
    raw = SnsNotification(value, value, value, NOW)
    assert_harmless(raw_budget_message(raw, value), value)


@SETTINGS
@given(value=hostile)
def test_anomaly_alerts_escape_every_string_aws_sent(value: str) -> None:
    cause = RootCause(value, value, value, value, value, 12.5)
    anomaly = Anomaly(
        anomaly_id=value,
        start=date(2026, 11, 18),
        end=None,
        total_impact=2412.8,
        actual=3562.8,
        expected=1150.0,
        impact_percent=209.8,
        max_impact=1104.2,
        dimension=value,
        monitor_name=value,
        monitor_arn=f"arn:aws:ce::123456789012:anomalymonitor/{value}",
        monitor_type=value,
        score=0.5,
        max_score=0.6,
        root_causes=(cause, RootCause(usage_type=value)),
        link=f"https://console.aws.amazon.com/cost-management/home#/{value}",
        account_id=value,
        account_name=value,
        subscription=value,
    )
    drivers = Drivers(date(2026, 11, 18), date(2026, 11, 21), (value,), [Mover(value, 120.0, 20.0)], [value])
    assert_harmless(anomaly_message(anomaly, drivers), value)
    assert_harmless(anomaly_message(anomaly, drivers, was=10.0, updated_at=NOW, replaces=NOW.date()), value)
    assert_harmless(anomaly_message(replace(anomaly, link=""), Drivers(date(2026, 11, 18), date(2026, 11, 21))), value)


@SETTINGS
@given(value=hostile)
def test_commitment_reminders_escape_what_aws_answered(value: str) -> None:
    end, start = NOW + timedelta(days=7), NOW - timedelta(days=358)
    ri = Commitment("reserved-instance", value, end, start, value, value, 2, value, value, value)
    plan = replace(ri, kind="savings-plan", hourly_commitment=3.0, arn=value)
    for commitment in (ri, plan):
        assert_harmless(expiry_reminder(commitment, 7, 80.0, threshold=70.0, recommendation=value, now=NOW), value)
        assert_harmless(underused_alert(commitment, 20.0, 70.0), value)


def week_of(value: str) -> DigestData:
    hours = tuple(Hour(NOW - timedelta(hours=h), 1.0, 0.0, 0.0) for h in range(1, 30))
    machine = InstanceWeek("i-0123456789abcdef0", value, value, value, value, 4, 5.0, True, "running", hours)
    start = NOW - timedelta(days=7)
    week = summarize([machine], start, NOW, IdlePolicy())
    expiring = Commitment("reserved-instance", value, NOW + timedelta(days=5), start, value, value, 1, value)
    return DigestData(
        start=start,
        end=NOW,
        instances=[machine],
        raw={machine.instance_id: instance(value)},
        this_week=week,
        last_week=week,
        entries=[],
        saved_hours=3.0,
        saved_usd=12.0,
        commitments=CommitmentUse(0.9, 0.5, 0.8, 0.4, [expiring]),
        spend_this_week=10.0,
        spend_last_week=8.0,
        dashboards={value: DASHBOARD},
        errors=[value],
        gaps=[Gap(value, value), Gap("GetCostAndUsage", value)],
        owner_tag_key="Owner",
        outlived_keeps=[OutlivedKeep("i-0123456789abcdef0", value, NOW, 8.0, 7.0, 30.0)],
        no_activity_check=[value],
        advice=[
            Advice(machine, "fewer-gpus", value, 5.0, 2.0, 10.0, value),
            Advice(machine, "spot", "", 5, 2, 9, value),
        ],
    )


@SETTINGS
@given(value=hostile)
def test_the_digest_and_the_owner_digest_escape_names_teams_and_errors(value: str) -> None:
    data = week_of(value)
    data.basis = value
    assert_harmless(digest_message(data), value)
    for reply in digest_thread(data):
        assert_harmless(reply.message, value)
    assert_harmless(owner_message(owner_weeks(data, email_domain="example.com"), {"": value}, now=NOW), value)
    alert = permission_alert([Gap("GetCostAndUsage", "AccessDeniedException"), *data.gaps], who=value, week=value)
    assert_harmless(alert, value)


@SETTINGS
@given(value=hostile)
def test_the_organization_digest_escapes_what_a_member_account_handed_over(value: str) -> None:
    # A member account is another trust domain: its label, owners and gaps reach the hub's channel.
    handed = account_week(week_of(value), account="111122223333", label=value[:64], regions=("eu-west-1",))
    handed = replace(handed, top_owners=(OwnerWaste(value[:256], 5.0, 9.0),), gaps=(value[:200],))
    week = decode(encode(handed))
    org = OrganizationWeek(NOW, ["111122223333", "444455556666"], {"111122223333": week}, refused=1)
    assert_harmless(organization_message(org))


@SETTINGS
@given(value=hostile)
def test_the_unattributed_list_escapes_reasons(value: str) -> None:
    decided = OwnerDecision(None, OwnerSource.UNKNOWN, value, value)
    tagging = Tagging(value, value, value, NOW, decided, {}, False)
    assert_harmless(unattributed_message([tagging], value), value)


class Web:
    """chat.postMessage and users.lookupByEmail that knows nobody."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []

    def chat_postMessage(self, **kwargs: Any) -> dict[str, Any]:
        self.posts.append(kwargs)
        return {"ok": True, "ts": "1.1"}

    def users_lookupByEmail(self, email: str) -> dict[str, Any]:
        return {"ok": True, "user": {}}

    def usergroups_users_list(self, usergroup: str) -> dict[str, Any]:
        return {"users": []}


@SETTINGS
@given(value=hostile)
def test_the_note_of_a_message_sent_to_the_channel_instead_escapes_the_owner(value: str) -> None:
    web = Web()
    notifier = SlackNotifier(SlackCredentials(bot_token="xoxb-test"), web_client=cast(Any, web))
    box = instance(value)
    notifier.send_to_owner(
        f"{value}@example.com",
        Live((idle.idle_warning(box, decision(value, Action.WARN), Price(1.0, "x"), person(value), NOW),)).message(),
        fallback_channel="C0ALERTS",
        owner=value,
    )
    assert_harmless(web.posts[-1], value)


class Machines:
    """The EC2 adapter's answers for one instance whose tags are the attacker's."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def describe(self, ids: Any) -> list[Instance]:
        return [replace(instance(self.owner), instance_type="g5.xlarge", region="us-east-1")]

    def create_tags(self, ids: Any, values: Any) -> bool:
        return True

    def delete_tags(self, ids: Any, keys: Any) -> bool:
        return True

    def stop(self, ids: Any, *, hibernate: bool) -> bool:
        return True

    def start(self, instance_id: str) -> bool:
        return True


class Memory:
    """Claims that are always new, and a ledger that keeps nothing."""

    def claim(self, key: str, now: datetime, ttl: timedelta) -> Claim:
        return Claim(key, "token", ClaimState.TAKEN)

    def done(self, claim: Claim, detail: str = "") -> None:
        return None

    def record(self, entry: Any) -> None:
        return None


@SETTINGS
@given(value=hostile, button=st.sampled_from(list(Button)), admin=st.booleans())
def test_button_replies_escape_the_owner_and_the_clicker(value: str, button: Button, admin: bool) -> None:
    answers: list[dict[str, Any]] = []
    worker = ClickWorker(
        ec2_for=lambda region: cast(Any, Machines(value)),
        notifier=cast(Any, SlackNotifier(SlackCredentials(bot_token="xoxb-test"), web_client=cast(Any, Web()))),
        ledger=cast(Any, Memory()),
        claims=cast(Any, Memory()),
        respond=lambda url, body: answers.append(dict(body)),
        accelerated=IdlePolicy().is_accelerated,
        mode=Mode.ENFORCE,
        owner_tag_key="Owner",
        email_domain="example.com",
        admins=[CLICKER] if admin else [],
        zone=ZoneInfo("UTC"),
    )
    original = ({"type": "section", "text": {"type": "mrkdwn", "text": "i-0123456789abcdef0 is idle"}},)
    click = Click(button, "i-0123456789abcdef0", "us-east-1", CLICKER, value, "https://hooks", "1.1", "1.2", original)
    worker.handle(click, NOW)
    assert answers
    for answer in answers:
        assert_harmless(answer, value)
