"""The organization's digest: a member's week handed over and read back, untrusted hand-offs refused,
and the hub's totals worked out by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costguard.core.errors import ConfigError, EventValidationError
from costguard.core.settings import IdlePolicy, OrganizationSettings
from costguard.digest.commitments import CommitmentUse
from costguard.digest.gaps import gaps_of
from costguard.digest.handoff import AccountWeek, OwnerWaste, decode, encode
from costguard.digest.organization.rules import OrganizationWeek, chart_days, organization_message
from costguard.digest.weekly.rules.figures import InstanceWeek, summarize
from costguard.digest.weekly.rules.grid import Hour
from costguard.digest.weekly.rules.records import DigestData
from costguard.digest.weekly.rules.summary import account_week
from costguard.state.entries import Entry, EntryKind

START = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday
END = START + timedelta(days=7, hours=9)  # the next Monday, 09:00: the digest's run
HUB, MEMBER, SANDBOX, GONE = "123456789012", "111122223333", "444455556666", "777788889999"


def hours(day: int, first: int, count: int, *, cpu: float, gpu: float, core: float | None = None) -> list[Hour]:
    """`core` the agent's busiest core, where the machine publishes it."""
    base = START + timedelta(days=day, hours=first)
    return [Hour(base + timedelta(hours=k), cpu, gpu, gpu, core_max=core) for k in range(count)]


def member_data() -> DigestData:
    # alice: 4 GPUs at $5.672/h, Monday 10 busy hours at 80 %, Tuesday 6 idle hours (CPU 2 %, no core
    # over 6 %: her agent publishes the busiest core).
    alice = InstanceWeek(
        "i-a", "g5.12xlarge", "eu-west-1", "alice", "", 4, 5.672, True, "running",
        tuple(hours(0, 8, 10, cpu=40, gpu=80, core=100) + hours(1, 8, 6, cpu=2, gpu=1, core=6)),
    )  # fmt: skip
    # bob: 1 GPU at $1.006/h, Monday 4 idle hours.
    bob = InstanceWeek(
        "i-b", "g5.xlarge", "eu-west-1", "bob", "", 1, 1.006, True, "stopped", tuple(hours(0, 0, 4, cpu=1, gpu=0.5))
    )  # fmt: skip
    week = summarize([alice, bob], START, END, IdlePolicy())
    stop = Entry(START + timedelta(days=1, hours=15), EntryKind.STOP, "i-b", "eu-west-1", "enforce")
    warn = replace(stop, kind=EntryKind.WARN)
    keep = replace(stop, kind=EntryKind.KEEP, instance_id="i-a")
    return DigestData(
        start=START, end=END, instances=[alice, bob], raw={}, this_week=week, last_week=week,
        entries=[warn, stop, keep, replace(stop, applied=False)], saved_hours=10.0, saved_usd=10.06,
        commitments=CommitmentUse(), spend_this_week=812.4, spend_last_week=700.0, dashboards={},
        errors=["GetCostAndUsage: AccessDeniedException"], owner_tag_key="Owner",
        gaps=gaps_of(["GetCostAndUsage: AccessDeniedException"]),
    )  # fmt: skip


def test_a_members_week_is_handed_over_with_its_figures_and_read_back_unchanged() -> None:
    week = account_week(member_data(), account=MEMBER, label="training", regions=("eu-west-1",))
    assert (week.machines, week.gpu_hours, week.idle_gpu_hours) == (2, 68.0, 28.0)  # 16 h x 4 + 4 h x 1; 6 x 4 + 4
    assert week.waste_usd == pytest.approx(6 * 5.672 + 4 * 1.006)  # 38.056
    assert week.avg_gpu_util == pytest.approx((10 * 80 + 6 * 1 + 4 * 0.5) / 20)
    assert (week.warned, week.stopped, week.kept) == (1, 1, 1)  # the dry-run stop is not a stop
    [alice, bob] = week.top_owners
    assert (alice.owner, alice.idle_gpu_hours, bob) == ("alice", 24.0, OwnerWaste("bob", 4.0, 4.024))
    assert alice.waste_usd == pytest.approx(34.032)
    assert week.days[0] == (date(2026, 11, 16), 40.0, 4.0)
    assert week.days[1] == (date(2026, 11, 17), 0.0, 24.0)
    assert week.spend_usd == 812.4
    assert week.gaps == ("the week's spend: not read",)  # what it could not read, never AWS's error code
    # each day's idle cost: Monday bob's 4 h at $1.006, Tuesday alice's 6 h at $5.672
    assert [d for d, _ in week.days_usd] == [date(2026, 11, 16), date(2026, 11, 17)]
    assert [usd for _, usd in week.days_usd] == pytest.approx([4.024, 34.032])
    body = encode(week)
    assert len(body) < 2_000  # a few hundred bytes, whatever the fleet's size
    back = decode(body)
    assert back.name == "training (111122223333)"
    assert back.days_usd == ((date(2026, 11, 16), 4.02), (date(2026, 11, 17), 34.03))
    assert back == replace(week, waste_usd=38.06, avg_gpu_util=40.4, top_owners=back.top_owners, days_usd=back.days_usd)
    assert back.top_owners == (OwnerWaste("alice", 24.0, 34.03), OwnerWaste("bob", 4.0, 4.02))


def valid() -> dict[str, Any]:
    body: dict[str, Any] = json.loads(
        encode(account_week(member_data(), account=MEMBER, label="", regions=("eu-west-1",)))
    )
    return body


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda b: "not json", "not JSON"),
        (lambda b: "[" * 100_000 + "]" * 100_000, "characters"),
        (lambda b: "[" * 30_000 + "]" * 30_000, "nested too deep"),
        (lambda b: {**b, "v": 2}, "version"),
        (lambda b: {**b, "kind": "other"}, "kind"),
        (lambda b: {**b, "account": "12345"}, "account"),
        (lambda b: {**b, "account": ["111122223333"]}, "account"),
        (lambda b: {**b, "waste_usd": -5}, "waste_usd"),
        (lambda b: {**b, "waste_usd": float("nan")}, "waste_usd"),
        (lambda b: {**b, "gpu_hours": 1e300}, "gpu_hours"),
        (lambda b: {**b, "machines": True}, "machines"),
        (lambda b: {**b, "machines": 2.5}, "machines"),
        (lambda b: {**b, "end": "2026-11-23T09:00:00"}, "time zone"),
        (lambda b: {**b, "end": "Monday"}, "end"),
        (lambda b: {**b, "days": [[d, 1, 1] for d in ["2026-11-16"] * 9]}, "days"),
        (lambda b: {**b, "days": [["yesterday", 1, 1]]}, "days[0]"),
        (lambda b: {**b, "top_owners": [["bob", 1]]}, "top_owners[0]"),
        (lambda b: {**b, "regions": ["<!channel>"]}, "regions"),
        (lambda b: {k: v for k, v in b.items() if k != "idle_gpu_hours"}, "idle_gpu_hours"),
    ],
)
def test_a_hand_off_that_is_not_as_it_must_be_is_refused_naming_the_field(change: Any, complaint: str) -> None:
    changed = change(valid())
    body = changed if isinstance(changed, str) else json.dumps(changed)
    with pytest.raises(EventValidationError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
        decode(body)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.sampled_from(sorted(valid())),
    value=st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=30),
        st.lists(st.one_of(st.integers(), st.text(max_size=5)), max_size=4),
        st.dictionaries(st.text(max_size=3), st.integers()),
    ),
)  # fmt: skip
def test_any_field_of_any_type_gives_a_week_or_a_refusal_never_another_error(key: str, value: Any) -> None:
    body = {**valid(), key: value}
    try:
        week = decode(json.dumps(body))
    except EventValidationError:
        return
    assert isinstance(week, AccountWeek)


def week_of(account: str, *, label: str, end: datetime, waste: float, idle: float, gpu: float, util: float | None,
            stopped: int = 0, saved: float = 0.0, owners: tuple[OwnerWaste, ...] = ()) -> AccountWeek:  # fmt: skip
    days = tuple((date(2026, 11, 16) + timedelta(days=k), gpu / 7 - idle / 7, idle / 7) for k in range(7))
    return AccountWeek(
        account, label, end - timedelta(days=7), end, ("us-east-1",), 3, gpu, idle, waste, util, 2, stopped, 0,
        stopped * 5.0, saved, None, days, owners, (),
    )  # fmt: skip


def test_the_organization_digest_adds_up_the_accounts_that_reported_and_names_the_others() -> None:
    hub = week_of(HUB, label="research", end=END - timedelta(hours=2), waste=100.0, idle=50.0, gpu=700.0, util=60.0,
                  stopped=2, saved=40.0, owners=(OwnerWaste("alice", 30.0, 60.0),))  # fmt: skip
    member = week_of(MEMBER, label="training", end=END - timedelta(hours=1), waste=250.5, idle=70.0, gpu=300.0,
                     util=20.0, stopped=1, saved=12.5, owners=(OwnerWaste("<!channel>", 40.0, 90.0),))  # fmt: skip
    stale = week_of(SANDBOX, label="", end=END - timedelta(days=7, hours=1), waste=9.0, idle=1.0, gpu=2.0, util=None)
    org = OrganizationWeek(END, [HUB, MEMBER, SANDBOX, GONE], {HUB: hub, MEMBER: member, SANDBOX: stale}, refused=1)

    assert [w.account for w in org.fresh] == [HUB, MEMBER]
    assert [(a, last is not None) for a, last in org.missing] == [(SANDBOX, True), (GONE, False)]
    message = organization_message(org)
    text = json.dumps(message.blocks)
    # 1,000 GPU-hours at (700 x 60 + 300 x 20) / 1,000 = 48 %; 120 idle; $350.50 (shown $350); 3 stops, $52.50 saved.
    assert "*2 of 4 accounts* reported: *6* GPU machines ran *1,000 GPU-hours* at 48% average GPU use." in text
    assert "*120 GPU-hours were idle*: *$350* on the bill that stops would have saved." in text
    assert "costguard stopped 3 machines; stopped machines stayed off 15 h: *$52.50 saved*" in text
    # most waste first; each account by its name; the member's hostile owner escaped
    assert text.index("*training (111122223333)*") < text.index("*research (123456789012)*")
    assert "&lt;!channel&gt; in training (111122223333): idle 40 GPU-h, $90.00" in text
    assert "<!channel>" not in text
    assert "No figures this week from 2 accounts*" in text
    last = int((END - timedelta(days=7, hours=1)).timestamp())
    # a day alone names the zone of its fallback (the reader may be a day away from UTC)
    assert f"`444455556666`: last figures <!date^{last}^{{date_short_pretty}}|Mon 16 Nov 2026 UTC>" in text
    assert "GPU fleet across the organization, this week" in text  # no date in a header: plain text, one zone
    assert "`777788889999`: never reported" in text
    assert "1 hand-off could not be read" in text
    assert message.text == "GPU week, 2 accounts: 120 idle GPU-hours, $350 wasted, 2 accounts without figures"
    assert "(s)" not in text
    # the chart: each day's GPU-hours summed over the two accounts (100 + 42.86 used, 7.14 + 10 idle)
    days = chart_days(org)
    assert len(days) == 7
    assert [d.label for d in days] == [
        "Mon\n16 Nov",
        "Tue\n17 Nov",
        "Wed\n18 Nov",
        "Thu\n19 Nov",
        "Fri\n20 Nov",
        "Sat\n21 Nov",
        "Sun\n22 Nov",
    ]  # the weekday over the date
    assert days[0].low == pytest.approx((700 - 50) / 7 + (300 - 70) / 7)
    assert days[0].high == pytest.approx(120 / 7)
    # both weeks began on Monday morning (the member's at 08:00): that bar is part of a day, and says so
    assert [d.partial for d in days] == ["from 08:00"] + [""] * 6
    assert {d.note for d in days} == {None}  # these accounts said no day's idle cost: no dollars drawn


def test_with_no_account_reporting_the_digest_still_goes_out_and_names_them_all() -> None:
    org = OrganizationWeek(END, [HUB, MEMBER], {})
    text = json.dumps(organization_message(org).blocks)
    assert "*0 of 2 accounts* reported" in text
    assert "`123456789012`: never reported" in text
    assert chart_days(org) == []


def test_the_hub_expects_itself_and_the_account_of_each_member_digest_role() -> None:
    env = {
        "FIGURES_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/figures",
        "MEMBER_DIGEST_ROLES": f"arn:aws:iam::{MEMBER}:role/costguard-WeeklyDigestFunctionRole-AB12, "
        f"arn:aws:iam::{SANDBOX}:role/path/costguard-digest,arn:aws:iam::{MEMBER}:role/again",
    }
    assert OrganizationSettings.from_env(env).expected(HUB) == [HUB, MEMBER, SANDBOX]
    alone = OrganizationSettings.from_env({**env, "HUB_WEEKLY_DIGEST": "false"})
    assert alone.expected(HUB) == [MEMBER, SANDBOX]
    with pytest.raises(ConfigError, match="not an IAM role ARN"):
        OrganizationSettings.from_env({**env, "MEMBER_DIGEST_ROLES": "111122223333"})


class Throttled:
    """DynamoDB's BatchGetItem under throttling: every key left unprocessed, every time."""

    def __init__(self) -> None:
        self.calls = 0

    def batch_get_item(self, RequestItems: Any) -> Any:
        self.calls += 1
        assert self.calls < 50, "asked again and again, without end"
        return {"Responses": {}, "UnprocessedKeys": RequestItems}


def test_reading_the_kept_weeks_backs_off_and_gives_up_when_dynamodb_keeps_refusing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from costguard.state import handoffs, ledger  # noqa: PLC0415

    pauses: list[int] = []
    monkeypatch.setattr(handoffs, "backoff", pauses.append)
    client = Throttled()
    with pytest.raises(ledger.StateTableBusy):
        handoffs.HandedWeeks(client, "t").latest([MEMBER])  # type: ignore[arg-type]
    assert client.calls == ledger.MAX_BATCH_ATTEMPTS
    assert pauses == list(range(ledger.MAX_BATCH_ATTEMPTS - 1))


def test_the_organization_digest_keeps_each_accounts_paid_idle_hours_apart_and_names_the_accounts_priced_at_list() -> (
    None
):
    on_the_bill = replace(
        week_of(HUB, label="research", end=END - timedelta(hours=2), waste=100.0, idle=50.0, gpu=700.0, util=60.0,
                stopped=2, saved=40.0),
        paid_idle_hours=30.0, saved_list_usd=70.0, basis="Prices as your bill shows them: on demand less 3 RIs.",
    )  # fmt: skip
    listed = replace(
        week_of(MEMBER, label="training", end=END - timedelta(hours=1), waste=20.0, idle=10.0, gpu=300.0, util=20.0,
                stopped=1, saved=12.5),
        saved_list_usd=12.5, basis="Prices: on-demand list (the bill could not be read: AccessDenied).",
    )  # fmt: skip
    text = json.dumps(
        organization_message(OrganizationWeek(END, [HUB, MEMBER], {HUB: on_the_bill, MEMBER: listed})).blocks
    )
    assert (
        "*$120* on the bill that stops would have saved, and 30 idle machine-hours were on capacity already paid"
        in text
    )
    assert "*$52.50 saved* on the bill ($82.50 at on-demand prices)." in text
    assert (
        "Prices as each account's bill shows them, but training (111122223333): the on-demand list (each account's "
        "digest says why)."
    ) in text


def test_a_hand_off_keeps_the_paid_idle_hours_and_the_basis_and_one_from_before_them_still_reads() -> None:
    data = member_data()
    data.this_week.fleet.paid_idle_hours, data.saved_list_usd, data.basis = 12.0, 30.5, "Prices: on-demand list."
    back = decode(encode(account_week(data, account=MEMBER, label="", regions=("eu-west-1",))))
    assert (back.paid_idle_hours, back.saved_list_usd, back.basis) == (12.0, 30.5, "Prices: on-demand list.")
    before = {k: v for k, v in valid().items() if k not in ("paid_idle_hours", "saved_list_usd", "basis")}
    old = decode(json.dumps(before))
    assert (old.paid_idle_hours, old.saved_list_usd, old.basis) == (0.0, None, "")


def test_what_a_member_could_not_read_is_said_at_the_hub_without_an_aws_error_code() -> None:
    # a member from before issue 34 handed "Call: Code"; one since hands what it could not say
    old = replace(
        week_of(MEMBER, label="training", end=END - timedelta(hours=1), waste=1.0, idle=1.0, gpu=2.0, util=None),
        gaps=("GetReservationUtilization: AccessDeniedException", "listing Reserved Instances: Throttling"),
    )
    new = replace(
        week_of(HUB, label="research", end=END - timedelta(hours=1), waste=1.0, idle=1.0, gpu=2.0, util=None),
        gaps=("the week's spend: not read",),
    )
    text = json.dumps(organization_message(OrganizationWeek(END, [HUB, MEMBER], {HUB: new, MEMBER: old})).blocks)
    assert (
        "Not read this week: training (111122223333): Reserved Instance use, listing Reserved Instances; "
        "research (123456789012): the week's spend. The figures leave them out."
    ) in text
    assert ": not read" not in text
    assert "AccessDenied" not in text
    assert "Throttling" not in text


def test_stops_that_stayed_off_under_an_hour_across_the_accounts_say_their_minutes() -> None:
    week = replace(
        week_of(HUB, label="research", end=END - timedelta(hours=1), waste=10.0, idle=5.0, gpu=70.0, util=20.0,
                stopped=1, saved=0.47),
        saved_hours=0.92,
    )  # fmt: skip
    text = json.dumps(organization_message(OrganizationWeek(END, [HUB], {HUB: week})).blocks)
    assert "costguard stopped 1 machine; stopped machines stayed off 55 min: *$0.47 saved*" in text
    assert "off 1 h" not in text
