"""The activity check through SSM Run Command: the exact batched requests (Stubber: moto lacks
ListCommandInvocations and DescribeInstanceInformation), and whole sweeps where the machine's answer
saves a stop, lets it go ahead, or is missing."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from costguard.aws.ec2 import Ec2
from costguard.aws.ssm import Ssm
from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.scarcity import FailedStart
from costguard.core.settings import IdlePolicy, Mode
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.rules.activity import ActivityCheck, CheckState
from costguard.idle.rules.jobs import JobKind
from costguard.idle.rules.schedule import parse_schedule
from costguard.runtime import Runtime
from costguard.slack.buttons import Button
from costguard.state.capacity import CapacityLog
from testing.jobs import next_job
from testing.slack_standin import SlackStandIn
from testing.slack_text import marked
from tests.integration.conftest import (
    CMD_C1,
    DOCUMENT,
    REGION,
    TABLE,
    ec2,
    invocation,
    make_runtime,
    midday,
    report,
    ssm_client,
    tags_of,
)
from tests.integration.test_idle_stopper import app, idle, launch, publish, publish_gpu, state_of, warn_tags

pytestmark = pytest.mark.usefixtures("times_in_readers_zones")  # every time in a reader's own zone

CMD_C2 = "00000000-0000-4000-8000-000000000002"
POLICY = IdlePolicy(activity_check_document=DOCUMENT, activity_check_seconds=1)  # a second for the silent ones


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def test_the_check_is_sent_50_machines_a_call_to_online_managed_ones_and_read_in_batches(aws: None) -> None:
    ids = [f"i-{n:017x}" for n in range(60)]
    client = ssm_client()
    stub = Stubber(client)
    online = ids[:55]
    for batch, listed in ((ids[:50], ids[:50]), (ids[50:], ids[50:55])):
        stub.add_response(
            "describe_instance_information",
            {"InstanceInformationList": [{"InstanceId": i, "PingStatus": "Online"} for i in listed]},
            {"Filters": [{"Key": "InstanceIds", "Values": batch}], "MaxResults": 50},
        )
    for command, batch in ((CMD_C1, online[:50]), (CMD_C2, online[50:])):
        stub.add_response(
            "send_command",
            {"Command": {"CommandId": command}},
            {
                "DocumentName": DOCUMENT,
                "InstanceIds": batch,
                "TimeoutSeconds": 30,
                "MaxConcurrency": "100%",
                "MaxErrors": "100%",
                "Comment": "costguard activity check before an idle warning or stop",
            },
        )
    for command, batch in ((CMD_C1, online[:50]), (CMD_C2, online[50:])):
        stub.add_response(
            "list_command_invocations",
            {"CommandInvocations": [invocation(i, output=report()) for i in batch]},
            {"CommandId": command, "Details": True, "MaxResults": 50},
        )
    tagged: list[tuple[list[str], dict[str, str]]] = []

    class Tags(Ec2):
        def create_tags(self, resource_ids: Any, tags: Any) -> bool:
            tagged.append((list(resource_ids), dict(tags)))
            return True

    clock = Clock()
    checker = ActivityChecker(
        ssm=Ssm(client),
        ec2=Tags(ec2(), REGION, Mode.ENFORCE),
        document=DOCUMENT,
        wait_seconds=45,
        time_left=lambda: 250.0,
        sleep=clock.sleep,
        clock=clock,
    )
    now = datetime(2026, 11, 21, 3, 0).astimezone()
    instances = [Instance(i, REGION, "g5.xlarge", "running", now) for i in reversed(ids)]
    with stub:
        checks = checker.check(instances, now)
    stub.assert_no_pending_responses()
    assert [(sorted(ids), t) for ids, t in tagged] == [(online, {tags.ACTIVITY_CHECK_AT: formatting.format_time(now)})]
    assert [i for i in ids if checks[i].state is CheckState.ANSWERED] == online
    assert [i for i in ids if checks[i].state is CheckState.NO_AGENT] == ids[55:]
    assert clock.t == 2.0  # one poll: every answer was in


def test_machines_that_do_not_answer_in_time_are_no_answer_and_the_wait_is_bounded(aws: None) -> None:
    client = ssm_client()
    stub = Stubber(client)
    ids = ["i-0000000000000000a", "i-0000000000000000b"]
    stub.add_response(
        "describe_instance_information",
        {"InstanceInformationList": [{"InstanceId": i, "PingStatus": "Online"} for i in ids]},
    )
    stub.add_response("send_command", {"Command": {"CommandId": CMD_C1}})
    for _ in range(5):
        stub.add_response(
            "list_command_invocations",
            {"CommandInvocations": [invocation(ids[0], output=report()), invocation(ids[1], "InProgress")]},
        )
    clock = Clock()
    checker = checker_of(client, clock)
    now = datetime(2026, 11, 21, 3, 0).astimezone()
    with stub:
        checks = checker.check([Instance(i, REGION, "g5.xlarge", "running", now) for i in ids], now)
    assert checks[ids[0]].state is CheckState.ANSWERED
    assert checks[ids[1]].state is CheckState.NO_ANSWER
    assert checks[ids[1]].detail == "no answer in 10 s"
    assert clock.t == 10.0


def checker_of(client: Any, clock: Clock) -> ActivityChecker:
    """The sweep's checker over `client`, waiting 10 s on `clock`."""
    return ActivityChecker(
        ssm=Ssm(client),
        ec2=Ec2(ec2(), REGION, Mode.DRY_RUN),
        document=DOCUMENT,
        wait_seconds=10,
        time_left=lambda: 250.0,
        sleep=clock.sleep,
        clock=clock,
    )


def checked(output: str) -> ActivityCheck:
    """One machine's answer, through DescribeInstanceInformation, SendCommand and ListCommandInvocations."""
    client = ssm_client()
    stub = Stubber(client)
    iid = "i-0000000000000000a"
    stub.add_response(
        "describe_instance_information", {"InstanceInformationList": [{"InstanceId": iid, "PingStatus": "Online"}]}
    )
    stub.add_response("send_command", {"Command": {"CommandId": CMD_C1}})
    stub.add_response("list_command_invocations", {"CommandInvocations": [invocation(iid, output=output)]})
    clock = Clock()
    checker = checker_of(client, clock)
    now = datetime(2026, 11, 21, 3, 0).astimezone()
    with stub:
        return checker.check([Instance(iid, REGION, "g5.xlarge", "running", now)], now)[iid]


def test_the_machines_scheduled_jobs_in_an_answer_are_read_with_the_rest_of_it(aws: None) -> None:
    jobs = {
        "tz": "Europe/Berlin",
        "found": 3,
        "sys": 12,
        "list": [
            {"k": "cron", "s": "30 2 * * *", "c": "python3", "u": "ana"},
            {"k": "timer", "s": "Mon..Fri 22:00", "n": 1795471200, "c": "nightly-train.service"},
            {"k": "anacron", "s": "1 5 cron.daily"},  # not a kind the check reports: skipped, counted
        ],
    }
    check = checked(report(sessions=[{"tty": "pts/0", "idle_s": 50}], jobs=jobs))
    assert check.state is CheckState.ANSWERED
    assert check.report is not None
    assert check.report.sessions[0].tty == "pts/0"
    read = check.report.jobs
    assert read is not None
    assert [(j.kind, j.command) for j in read.jobs] == [
        (JobKind.CRON, "python3"),
        (JobKind.TIMER, "nightly-train.service"),
    ]
    assert (read.found, read.system, read.skipped, read.zone) == (3, 12, 1, "Europe/Berlin")
    upcoming = next_job(read, datetime(2026, 11, 21, 0, 0, tzinfo=UTC))
    assert upcoming is not None
    assert upcoming.when == datetime(2026, 11, 21, 1, 30, tzinfo=UTC)  # 02:30 in Berlin
    assert upcoming.job.command == "python3"


@pytest.mark.parametrize("jobs", ["every night", [1, 2], {"list": {"k": "cron"}}, {"list": [None, 7, "x"]}])
def test_an_answer_whose_jobs_cannot_be_read_is_still_an_answer(aws: None, jobs: Any) -> None:
    check = checked(report(gpu=[{"name": "python train.py", "mib": 40_000, "notebook": False}], jobs=jobs))
    assert check.state is CheckState.ANSWERED  # what decides a stop is all there
    assert check.report is not None
    assert check.report.gpu[0].gpu_mib == 40_000
    assert check.report.jobs is not None
    assert check.report.jobs.jobs == ()
    assert check.report.jobs.skipped >= 1


def test_an_answer_of_an_older_check_has_no_jobs(aws: None) -> None:
    check = checked(report())
    assert check.state is CheckState.ANSWERED
    assert check.report is not None
    assert check.report.jobs is None


def test_the_wait_never_eats_the_time_the_rest_of_the_sweep_needs(aws: None) -> None:
    client = ssm_client()
    stub = Stubber(client)
    stub.add_response(
        "describe_instance_information",
        {"InstanceInformationList": [{"InstanceId": "i-0000000000000000a", "PingStatus": "Online"}]},
    )
    stub.add_response("send_command", {"Command": {"CommandId": CMD_C1}})
    clock = Clock()
    checker = ActivityChecker(
        ssm=Ssm(client),
        ec2=Ec2(ec2(), REGION, Mode.DRY_RUN),
        document=DOCUMENT,
        wait_seconds=45,
        time_left=lambda: 61.0,  # the sweep's own reserve is 60 s: one second to wait
        sleep=clock.sleep,
        clock=clock,
    )
    now = datetime(2026, 11, 21, 3, 0).astimezone()
    with stub:
        checks = checker.check([Instance("i-0000000000000000a", REGION, "g5.xlarge", "running", now)], now)
    assert checks["i-0000000000000000a"].state is CheckState.NO_ANSWER


# ------------------------------------------------------------------ whole sweeps


def sweep(runtime: Runtime, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(runtime, "now", lambda: now)
    result: dict[str, Any] = app.lambda_handler({"costguard": "sweep"}, lambda_context, runtime=runtime, policy=POLICY)
    region: dict[str, Any] = result["regions"][REGION]
    return region


def warned_machine(now: datetime) -> str:
    iid = launch(now, tags=warn_tags(now, warned_minutes_ago=40))
    publish(iid, now, gpus=[idle(), idle(), idle(), idle()])
    return iid


def test_a_person_who_logged_in_a_minute_before_the_stop_saves_the_machine_and_is_told_why(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = warned_machine(now)
    answers[iid] = report(sessions=[{"tty": "pts/1", "idle_s": 50}])

    result = sweep(runtime, now, lambda_context, monkeypatch)

    assert state_of(iid) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(iid)  # the warning is withdrawn
    assert tags_of(iid)[tags.ACTIVITY_CHECK_AT] == formatting.format_time(now)
    assert result["stopped"] == []
    [message] = slack.messages  # warned before this test: no warning message to change, so a message of its own
    assert marked(message, "cancel")
    assert message.blocks[0]["text"]["text"] == "At work: GPU machine · $136/day"
    assert f"`{iid}` (alice-box) is not stopped after all." in message.text
    assert "Not stopped: at work after all (someone typed in pts/1 50 s ago)." in json.dumps(message.blocks)


def test_an_idle_notebook_holding_gpu_memory_is_stopped_and_the_notice_says_what_was_seen(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = warned_machine(now)
    answers[iid] = report(
        kernels=[{"state": "idle", "idle_s": 20_000}],
        gpu=[{"name": "python -m ipykernel_launcher", "mib": 20_480, "notebook": True}],
    )
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["stopped"] == [iid]


def test_a_managed_machine_that_does_not_answer_is_not_stopped(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = warned_machine(now)
    answers[iid] = None
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["stopped"] == []
    assert state_of(iid) == "running"
    assert tags.IDLE_WARNED_AT in tags_of(iid)  # still warned: the next sweep asks again
    assert slack.messages == []


def test_the_sweep_waits_for_answers_on_the_runtimes_clock(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The demo (and any simulation) gives the runtime its own clock: the whole wait for a silent machine
    # is paid on it, in the production poll's steps, and none on the wall clock.
    monkeypatch.setattr("costguard.idle.reads.checks.POLL_SECONDS", 2.0)
    clock = Clock()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.sleep(seconds)

    monkeypatch.setattr(runtime, "monotonic", clock)
    monkeypatch.setattr(runtime, "sleep", sleep)
    iid = warned_machine(now)
    answers[iid] = None
    real_sleeps: list[float] = []
    real_sleep = time.sleep

    def wall_sleep(seconds: float) -> None:  # a wait of the poll's length on the wall clock is the bug
        real_sleeps.append(seconds)
        real_sleep(min(seconds, 0.05))

    monkeypatch.setattr(time, "sleep", wall_sleep)
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["stopped"] == []
    assert slept == [2.0]  # one poll step covers the policy's 1 s wait
    assert [s for s in real_sleeps if s >= 1.0] == []


def test_a_machine_without_the_ssm_agent_is_stopped_on_its_metrics_and_listed(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = midday(now)  # in its day: in its evening, its nights not watched yet, it is held
    iid = warned_machine(now)
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["stopped"] == [iid]
    assert result["no_activity_check"] == [iid]


def test_a_machine_without_the_ssm_agent_whose_nights_were_never_watched_is_not_stopped_into_its_evening(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    evening = midday(now) - timedelta(hours=12)  # 00:00 UTC, the team's night: a job of its own may run
    iid = warned_machine(evening)
    result = sweep(runtime, evening, lambda_context, monkeypatch)
    assert result["stopped"] == []
    assert state_of(iid) == "running"


def test_a_warning_is_not_sent_about_a_machine_whose_job_waits_with_its_gpu_memory(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = launch(now)
    publish(iid, now, gpus=[idle(), idle()])
    answers[iid] = report(gpu=[{"name": "python train.py", "mib": 40_000, "notebook": False}])
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["warned"] == []
    assert slack.messages == []
    assert tags.IDLE_WARNED_AT not in tags_of(iid)


def test_dry_run_asks_no_machine_anything(
    aws: None, slack: SlackStandIn, now: datetime, lambda_context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = make_runtime(slack, Mode.DRY_RUN)

    class Refuse:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"dry-run called ssm.{name}")

    runtime.clients._clients[("ssm", REGION)] = Refuse()
    iid = warned_machine(now)
    sweep(runtime, now, lambda_context, monkeypatch)
    assert tags.ACTIVITY_CHECK_AT not in tags_of(iid)


def finished_an_hour_ago(now: datetime) -> str:
    """A 4-GPU machine whose run ended 50 minutes ago: idle for the shorter window, not the full one."""
    iid = launch(now)
    ran = [90.0] * 26 + [0.0] * 10
    publish(iid, now, gpus=[ran] * 4, cpu=[30.0] * 26 + [1.0] * 10, core=[100.0] * 26 + [3.0] * 10)
    return iid


def test_a_machine_whose_check_sees_nothing_alive_is_warned_after_the_shorter_window(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = finished_an_hour_ago(now)
    answers[iid] = report(sessions=[{"tty": "pts/0", "idle_s": 4 * 3600}])
    result = sweep(runtime, now, lambda_context, monkeypatch)
    assert result["warned"] == [iid]
    [warning] = slack.messages
    assert "has done no work for *50 min*" in warning.text
    assert "The activity check saw nothing running: no input for 4 h" in json.dumps(warning.blocks)
    assert tags_of(iid)[tags.STOP_AFTER] == formatting.format_time(now + timedelta(minutes=30))


def test_a_machine_warned_after_the_shorter_window_is_stopped_after_the_grace_and_its_tag_says_so(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = finished_an_hour_ago(now)
    answers[iid] = report(sessions=[{"tty": "pts/0", "idle_s": 4 * 3600}])
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == [iid]
    later = now + timedelta(minutes=30)
    ran = [90.0] * 26 + [0.0] * 16  # the same run, and the grace period since: idle 80 minutes
    publish(iid, later, gpus=[ran] * 4, cpu=[30.0] * 26 + [1.0] * 16, core=[100.0] * 26 + [3.0] * 16)
    answers[iid] = report(sessions=[{"tty": "pts/0", "idle_s": 4 * 3600 + 1800}])
    assert sweep(runtime, later, lambda_context, monkeypatch)["stopped"] == [iid]
    # Not "for 120 min": it was stopped sooner, on what its check saw.
    assert tags_of(iid)[tags.STOP_REASON] == (
        "idle: GPU < 5%, CPU < 10% for 80 min, and the activity check saw nothing alive on it"
    )


@pytest.mark.parametrize(
    "alive",
    [
        {"kernels": [{"state": "idle", "idle_s": 9000}]},  # an idle kernel still holds its user's state
        {"sessions": [{"tty": "pts/0", "idle_s": 1800}]},  # someone typed 30 minutes ago
        {"gpu": [{"name": "python serve.py", "mib": 900, "notebook": False}]},
    ],
)
def test_anything_alive_on_the_machine_keeps_the_full_window(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    alive: dict[str, Any],
) -> None:
    iid = finished_an_hour_ago(now)
    answers[iid] = report(**alive)
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == []
    assert slack.messages == []


def test_without_its_check_a_machine_waits_the_full_window(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iid = finished_an_hour_ago(now)  # not managed by SSM: metrics alone never shorten the window
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == []
    assert tags.IDLE_WARNED_AT not in tags_of(iid)


def test_a_machine_with_a_crontab_job_at_2_is_started_before_it_on_its_first_night_under_costguard(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No history of the job in its metrics (its first night): only its crontab says it runs at 02:00.
    job = (now + timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    iid = warned_machine(now)
    crontab = {"tz": "UTC", "found": 2, "sys": 3, "list": [
        {"k": "cron", "s": f"0 {job:%H} * * *", "c": "nightly.sh", "u": "ana"},
        {"k": "cron", "s": "*/5 * * * *", "c": "sync", "u": "ana"},  # ran all through the idle window
    ]}  # fmt: skip
    answers[iid] = report(jobs=crontab)

    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == [iid]
    start_at = job - timedelta(minutes=POLICY.schedule_lead_minutes)
    assert tags_of(iid)[tags.START_AT] == formatting.format_time(start_at)
    notice = json.dumps([m.blocks for m in slack.messages])
    assert "runs `nightly.sh` at <!date^" in notice  # the job's time in each reader's own zone
    assert f"|{job:%H:%M} UTC> (its crontab)" in notice
    assert Button.DONT_START.value in notice

    assert sweep(runtime, start_at - timedelta(minutes=15), lambda_context, monkeypatch)["started"] == []
    assert sweep(runtime, start_at, lambda_context, monkeypatch)["started"] == [iid]
    assert state_of(iid) == "running"


def test_a_machine_whose_crontab_job_is_too_near_is_not_stopped(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = now + timedelta(minutes=50)
    iid = warned_machine(now)
    answers[iid] = report(jobs={"tz": "UTC", "list": [{"k": "cron", "s": f"{job:%M %H} * * *", "c": "train.sh"}]})

    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == []
    assert state_of(iid) == "running"


def test_a_scarce_machine_whose_crontab_job_comes_before_its_owner_is_back_is_left_running_for_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EC2 lately refused starts of its type: stopped tonight, the start for its job might be refused as well,
    with nobody there to start it again. Left running for the job; its owner is told why, once a day."""
    job = (now + timedelta(hours=5)).replace(minute=0, second=0, microsecond=0)
    iid = warned_machine(now)
    answers[iid] = report(jobs={"tz": "UTC", "list": [{"k": "cron", "s": f"0 {job:%H} * * *", "c": "nightly.sh"}]})
    failures = [FailedStart("g5.12xlarge", "", now - timedelta(hours=h), "CloudTrail", region=REGION) for h in (2, 5)]
    CapacityLog(boto3.client("dynamodb", region_name=REGION), TABLE).add(REGION, failures, read_until=now)
    monkeypatch.setattr("costguard.idle.rules.pipeline.working_now", lambda *_: False)  # the evening
    back = job + timedelta(hours=3)  # its owner's next working hours open after the job
    hours = parse_schedule(f"daily {back:%H:%M}-{back + timedelta(hours=1):%H:%M} UTC")
    monkeypatch.setattr("costguard.idle.rules.capacity.owners_hours", lambda *_: hours)

    assert sweep(runtime, now, lambda_context, monkeypatch)["stopped"] == []
    assert state_of(iid) == "running"
    assert tags.IDLE_WARNED_AT not in tags_of(iid)  # its warning withdrawn: it is not to be stopped
    [told] = [m for m in slack.messages if "hard to get back" in json.dumps(m.blocks)]
    assert "leaves it running for its run before you are back (it runs `nightly.sh` at <!date^" in json.dumps(
        told.blocks
    )


def test_a_machine_that_cannot_answer_warned_before_its_owners_morning_keeps_its_warning_and_is_stopped_after_it(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Warned at 07:40 on a Tuesday, its stop due at 08:10 (the team's clock, UTC: Slack says no zone for its
    owner): no agent answers, and a person's run of the day may begin unseen in the morning. Every sweep of the
    morning leaves it running with its warning standing (none withdrawn, none given again); the first sweep
    after 13:00 stops it."""
    morning = datetime(2026, 11, 24, 8, 30, tzinfo=UTC)
    iid = launch(morning, tags=warn_tags(morning, warned_minutes_ago=50))
    last = morning + timedelta(hours=5)
    points = int((last - (morning - timedelta(hours=6))) / timedelta(minutes=5))
    publish(iid, last + timedelta(minutes=5), gpus=[idle(points)] * 4, cpu=[2.0] * points)
    for at in (morning + timedelta(minutes=15 * k) for k in range(18)):  # 08:30 to 12:45
        assert sweep(runtime, at, lambda_context, monkeypatch)["stopped"] == []
        assert tags.IDLE_WARNED_AT in tags_of(iid)
    # its warning (given before) stands: not withdrawn, not given again (its owner is asked, once, whether anything
    # runs on it unseen: tests/integration/test_unseen_offers.py)
    said = [s for s in slack.said if "costguard cannot look inside it" not in s[1].get("text", "")]
    assert said == []
    assert len(slack.said) == 1
    assert sweep(runtime, morning.replace(hour=13), lambda_context, monkeypatch)["stopped"] == [iid]
    assert state_of(iid) == "stopped"


def test_a_warning_given_past_the_systems_timer_is_not_withdrawn_for_it_once_the_check_has_answered(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A machine at rest for three hours but for ten minutes of one core half an hour ago (apt's timer), its GPUs
    and their memory at rest throughout, and no answer of its check kept yet (the first sweep after a deploy): the
    burst is the system's, and it is warned. Its check answers that sweep; the
    next sweep has that answer, which cannot speak for the CPU before it, and must judge the burst as the sweep
    before did: its warning stands (before, it was withdrawn as "at work again", to be given again later)."""
    iid = launch(now, instance_type="g5.12xlarge")
    points = 36
    core = [3.0] * points
    cpu = [1.0] * points
    for k in (points - 6, points - 5):  # 30 and 25 minutes before now: one core of 48, for ten minutes
        core[k], cpu[k] = 100.0, 2.5
    publish(iid, now, gpus=[idle(points)] * 4, cpu=cpu, core=core)
    for index in range(4):
        publish_gpu(iid, now, "nvidia_smi_memory_used", [3.0] * points, index)
    answers[iid] = report(sessions=[{"tty": "pts/0", "idle_s": 5 * 3600}])
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == [iid]
    warned_at = tags_of(iid)[tags.IDLE_WARNED_AT]

    later = now + timedelta(minutes=15)
    more = points + 3
    publish(iid, later, gpus=[idle(more)] * 4, cpu=[*cpu, 1.0, 1.0, 1.0], core=[*core, 3.0, 3.0, 3.0])
    for index in range(4):
        publish_gpu(iid, later, "nvidia_smi_memory_used", [3.0] * more, index)
    result = sweep(runtime, later, lambda_context, monkeypatch)

    assert result["warned"] == []
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == warned_at  # not withdrawn
    [warning] = slack.messages
    assert "At work again" not in json.dumps(warning.blocks)


def stamp(at: datetime) -> int:
    """The machine's own time in its answer, which places its cgroup counters between the metrics' points."""
    return int(at.timestamp())


def cgroup(total: float, system: float) -> dict[str, Any]:
    """cgroup v2's CPU seconds since boot in a check's answer: the whole machine's, and its system services'."""
    return {"v": 2, "boot": "b-1", "top": total, "sys": system}


def burst_after_its_warning(iid: str, at: datetime, points: int) -> None:
    """Idle but for five minutes of one core (of 48) at the 37th point: five minutes after its warning."""
    core, cpu = [3.0] * points, [1.0] * points
    core[37], cpu[37] = 100.0, 2.5
    publish(iid, at, gpus=[idle(points)] * 4, cpu=cpu, core=core)


@pytest.mark.parametrize(("system_s", "stopped"), [(960.0, True), (900.0, False)])
def test_a_burst_its_check_has_not_answered_for_yet_keeps_the_warning_until_the_next_answer_says_whose(
    runtime: Runtime,
    slack: SlackStandIn,
    answers: dict[str, str | None],
    now: datetime,
    lambda_context: Any,
    monkeypatch: pytest.MonkeyPatch,
    system_s: float,
    stopped: bool,
) -> None:
    """Warned with its check's answer at hand; five minutes later a core runs for five minutes, after that answer.
    The next sweep cannot say whose that CPU was (only a pair of answers can): its warning stands, nothing is
    stopped, and the check is asked again (before, the warning was withdrawn at once, "At work again", to be given
    again once the answers showed the system's timer). With that answer, the sweep at the end of the grace stops
    it if the CPU was the system's services', and withdraws the warning if it was not."""
    iid = launch(now, instance_type="g5.12xlarge")
    publish(iid, now, gpus=[idle(36)] * 4, cpu=[1.0] * 36)
    answers[iid] = report(sessions=[{"tty": "pts/0", "idle_s": 5 * 3600}], cg=cgroup(1000.0, 900.0), at=stamp(now))
    assert sweep(runtime, now, lambda_context, monkeypatch)["warned"] == [iid]
    warned_at = tags_of(iid)[tags.IDLE_WARNED_AT]

    later = now + timedelta(minutes=15)
    burst_after_its_warning(iid, later, 39)
    answers[iid] = report(
        sessions=[{"tty": "pts/0", "idle_s": 5 * 3600 + 900}], cg=cgroup(1060.0, system_s), at=stamp(later)
    )
    result = sweep(runtime, later, lambda_context, monkeypatch)
    assert (result["warned"], result["stopped"]) == ([], [])
    assert tags_of(iid)[tags.IDLE_WARNED_AT] == warned_at  # not withdrawn
    assert tags_of(iid)[tags.ACTIVITY_CHECK_AT] == formatting.format_time(later)  # asked for its next answer
    [warning] = slack.messages
    assert "At work again" not in json.dumps(warning.blocks)

    end = now + timedelta(minutes=30)
    burst_after_its_warning(iid, end, 42)
    idle_s = 5 * 3600 + 1800
    answers[iid] = report(
        sessions=[{"tty": "pts/0", "idle_s": idle_s}], cg=cgroup(1061.0, system_s + 1.0), at=stamp(end)
    )
    result = sweep(runtime, end, lambda_context, monkeypatch)
    assert result["stopped"] == ([iid] if stopped else [])
    assert (tags.IDLE_WARNED_AT in tags_of(iid)) is stopped  # at work after all: its warning withdrawn
