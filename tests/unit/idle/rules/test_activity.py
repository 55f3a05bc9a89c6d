"""The activity check's answer, read and judged: each kind of work metrics cannot see, and the review of a
warning or a stop with it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from costguard.idle.rules.activity import (
    ActivityCheck,
    ActivityReport,
    CheckState,
    CpuAccount,
    Gpu,
    Kernel,
    Process,
    ReportError,
    Session,
    judge_activity,
    memory_at_work,
    parse_report,
    without_hook,
)
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.rules.review import review

NOW = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
WINDOW = 120


def judged(report: ActivityReport) -> tuple[Verdict, str]:
    j = judge_activity(report, window_minutes=WINDOW, busy_core_percent=50)
    return j.verdict, j.reason


def output(**fields: Any) -> str:
    return json.dumps({"v": 1, "at": 0, "sessions": [], "kernels": [], "cpu": [], "gpu": [], "hook": None, **fields})


def test_a_fresh_login_is_work_the_metrics_cannot_see_yet() -> None:
    report = ActivityReport(sessions=(Session("pts/3", 40_000), Session("pts/0", 60)))
    assert judged(report) == (Verdict.BUSY, "someone typed in pts/0 1 min ago")


def test_input_older_than_the_idle_window_is_not_work() -> None:
    verdict, reason = judged(ActivityReport(sessions=(Session("pts/0", 3 * 3600),)))
    assert verdict is Verdict.IDLE
    assert reason == "activity check: last input 3 h ago, no busy process"


def test_a_job_waiting_on_a_queue_holds_gpu_memory_and_is_alive() -> None:
    report = ActivityReport(gpu=(Process("python train.py --resume", gpu_mib=30_000),))
    assert judged(report) == (
        Verdict.BUSY,
        "python train.py --resume holds 29.3 GiB of GPU memory: a job alive and waiting",
    )


def test_an_idle_notebook_kernel_holding_gpu_memory_is_still_idle() -> None:
    report = ActivityReport(
        kernels=(Kernel("idle", 5 * 3600),),
        gpu=(Process("python -m ipykernel_launcher", gpu_mib=15_360, notebook=True),),
    )
    j = judge_activity(report, window_minutes=WINDOW, busy_core_percent=50)
    assert j.verdict is Verdict.IDLE
    assert j.notes == ("an idle notebook kernel holds 15.0 GiB of GPU memory",)


def test_a_busy_kernel_or_a_recently_used_notebook_is_work() -> None:
    assert judged(ActivityReport(kernels=(Kernel("busy", 9_000),)))[0] is Verdict.BUSY
    assert judged(ActivityReport(kernels=(Kernel("idle", 600),))) == (Verdict.BUSY, "a notebook was used 10 min ago")


def test_a_process_busy_on_one_core_is_work() -> None:
    report = ActivityReport(cpu=(Process("python tokenize.py", cpu=99.6), Process("sshd", cpu=6.0)))
    assert judged(report) == (Verdict.BUSY, "python tokenize.py is using 100% of a CPU core")
    assert judged(ActivityReport(cpu=(Process("sshd", cpu=6.0),)))[0] is Verdict.IDLE


def test_the_owners_hook_saying_keep_is_work_with_its_reason() -> None:
    report = ActivityReport(hook_exit=0, hook_line="nightly ETL runs 01:00-03:00")
    assert judged(report) == (Verdict.BUSY, "the owner's keep-alive hook says keep: nightly ETL runs 01:00-03:00")
    assert judged(ActivityReport(hook_exit=1, hook_line="nothing running"))[0] is Verdict.IDLE


def test_the_report_is_read_from_the_scripts_json() -> None:
    raw = output(
        sessions=[{"tty": "pts/0", "idle_s": 30}],
        kernels=[{"state": "idle", "idle_s": 900}],
        cpu=[{"name": "python", "cpu": 98.5, "notebook": False}],
        gpu=[{"name": "python -m ipykernel_launcher", "mib": 2048, "notebook": True}],
        hook={"exit": 3, "line": "no"},
        errors=["jupyter: URLError"],
    )
    report = parse_report("Some noise from the shell\n" + raw + "\n")
    assert report == ActivityReport(
        sessions=(Session("pts/0", 30),),
        kernels=(Kernel("idle", 900),),
        cpu=(Process("python", cpu=98.5),),
        gpu=(Process("python -m ipykernel_launcher", gpu_mib=2048, notebook=True),),
        hook_exit=3,
        hook_line="no",
        errors=("jupyter: URLError",),
    )


def test_a_hook_without_an_exit_code_does_not_say_keep() -> None:
    report = parse_report(output(hook={"line": "keep me"}))
    assert report.hook_exit is None
    assert judged(report)[0] is Verdict.IDLE


@pytest.mark.parametrize(
    "text",
    ["", "bash: python3: command not found", '{"v": 2}', output(error="python3 is not installed"), "[1, 2]"],
)
def test_anything_but_a_version_1_report_is_an_error(text: str) -> None:
    with pytest.raises(ReportError):
        parse_report(text)


def test_wrong_types_in_a_report_are_read_as_nothing() -> None:
    report = parse_report(output(sessions="pts/0", cpu=[{"name": ["x"], "cpu": "99"}], gpu=[7]))
    assert report.sessions == ()
    assert report.cpu == (Process("a process", cpu=0.0),)
    assert report.gpu == ()


# ------------------------------------------------------------------ review


def stop() -> Decision:
    return Decision("i-1", Action.STOP, "idle for 150 min", stop_after=NOW - timedelta(minutes=1))


def warn() -> Decision:
    return Decision("i-1", Action.WARN, "idle for 120 min", stop_after=NOW + timedelta(minutes=30))


def reviewed(decision: Decision, check: ActivityCheck) -> Decision:
    return review(decision, check, window_minutes=WINDOW, busy_core_percent=50)


def test_a_stop_is_cancelled_when_the_machine_is_at_work() -> None:
    check = ActivityCheck(CheckState.ANSWERED, ActivityReport(sessions=(Session("pts/0", 45),)))
    d = reviewed(stop(), check)
    assert d.action is Action.CANCEL_STOP
    assert d.activity == "someone typed in pts/0 45 s ago"


def test_no_warning_goes_out_about_a_machine_at_work() -> None:
    check = ActivityCheck(CheckState.ANSWERED, ActivityReport(gpu=(Process("python serve.py", gpu_mib=900),)))
    assert reviewed(warn(), check).action is Action.NONE


def test_a_managed_machine_that_does_not_answer_is_not_stopped_in_that_sweep() -> None:
    d = reviewed(stop(), ActivityCheck(CheckState.NO_ANSWER, detail="no answer in 45 s"))
    assert d.action is Action.NONE
    assert d.reason == "activity check did not answer (no answer in 45 s): not stopped in this sweep"
    # ...but a warning still goes out, saying the check was silent: a forgotten machine is not left alone.
    w = reviewed(warn(), ActivityCheck(CheckState.NO_ANSWER, detail="its SSM agent is ConnectionLost"))
    assert w.action is Action.WARN
    assert w.activity == "activity check did not answer (its SSM agent is ConnectionLost)"


def test_a_machine_without_the_ssm_agent_is_judged_on_its_metrics() -> None:
    assert reviewed(stop(), ActivityCheck(CheckState.NO_AGENT)) == stop()


def test_an_idle_answer_lets_the_stop_go_ahead_and_says_what_it_saw() -> None:
    report = ActivityReport(gpu=(Process("ipykernel", gpu_mib=4096, notebook=True),))
    d = reviewed(stop(), ActivityCheck(CheckState.ANSWERED, report))
    assert d.action is Action.STOP
    assert d.activity == (
        "activity check: nobody logged in, no busy process; an idle notebook kernel holds 4.0 GiB of GPU memory"
    )


def test_decisions_other_than_warn_and_stop_are_left_alone() -> None:
    keep = Decision("i-1", Action.SKIP, "exempt")
    check = ActivityCheck(CheckState.ANSWERED, ActivityReport(sessions=(Session("pts/0", 1),)))
    assert reviewed(keep, check) is keep


# ------------------------------------------------------------------ GPU facts and CPU accounting (additive fields)


def test_each_gpu_as_nvidia_smi_saw_it_is_read() -> None:
    report = parse_report(output(gpus=[{"i": 0, "u": 0, "m": 3}, {"i": 1, "u": 87, "m": 40_000}]))
    assert report.gpus == (Gpu(0, 0.0, 3), Gpu(1, 87.0, 40_000))


@pytest.mark.parametrize(
    "gpus",
    [
        [{"i": 0, "u": "[N/A]", "m": 3}],  # a GPU whose utilization nvidia-smi cannot tell
        [{"i": 0, "u": 0}],
        [{"i": 0, "u": True, "m": 3}],
        [{"i": 0, "u": -1, "m": 3}],
        "0, 0, 3",
        [],
    ],
)
def test_gpu_figures_that_cannot_all_be_read_are_not_read_at_all(gpus: Any) -> None:
    assert parse_report(output(gpus=gpus)).gpus is None  # never an idle GPU by default


def test_cgroup_v2_accounting_is_read_and_cgroup_v1_reports_none() -> None:
    v2 = parse_report(output(at=1_700_000_000, cg={"v": 2, "boot": "5f3c-boot", "top": 912.5, "sys": 610.0}))
    assert v2.cpu_account == CpuAccount("5f3c-boot", 912.5, 610.0)
    assert v2.at == 1_700_000_000
    assert parse_report(output(cg={"v": 1})).cpu_account is None
    assert parse_report(output(cg={"v": 2})).cpu_account is None  # the journal could not be read


def test_a_system_share_larger_than_the_whole_is_unreadable() -> None:
    assert parse_report(output(cg={"v": 2, "boot": "b", "top": 100.0, "sys": 250.0})).cpu_account is None


def test_a_report_of_the_check_before_these_fields_still_reads() -> None:
    report = parse_report(output(sessions=[{"tty": "pts/0", "idle_s": 30}]))
    assert (report.gpus, report.cpu_account, report.sessions) == (None, None, (Session("pts/0", 30),))


# ------------------------------------------------------------------ GPU memory held, as the metrics saw it

HELD = "GPU 0 held 29.3 GB of memory at 02:40 UTC"


def with_memory(decision: Decision, held: str = HELD) -> Decision:
    judgement = Judgement(Verdict.IDLE, "idle for 150 min: GPU max 0.0% < 5%", memory_held=held)
    return replace(decision, judgement=judgement)


def test_gpu_memory_held_at_zero_utilization_is_work_on_a_machine_without_the_ssm_agent() -> None:
    assert memory_at_work(ActivityCheck(CheckState.NO_AGENT), HELD) == (
        f"{HELD} at 0 % utilization: a job alive and waiting, as far as metrics can tell"
    )
    d = reviewed(with_memory(stop()), ActivityCheck(CheckState.NO_AGENT))
    assert d.action is Action.CANCEL_STOP
    assert d.reason.startswith(f"not idle: {HELD}")
    assert reviewed(with_memory(warn()), ActivityCheck(CheckState.NO_AGENT)).action is Action.NONE


def test_gpu_memory_held_keeps_a_machine_whose_check_did_not_answer_or_was_not_asked() -> None:
    for check in (ActivityCheck(CheckState.NO_ANSWER, detail="no answer in 45 s"), ActivityCheck(CheckState.NOT_ASKED)):
        assert reviewed(with_memory(warn()), check).action is Action.NONE


def test_where_the_check_answers_it_says_whose_the_memory_is_an_idle_notebook_kernel_is_still_idle() -> None:
    report = ActivityReport(gpu=(Process("ipykernel", gpu_mib=6000, notebook=True),))
    check = ActivityCheck(CheckState.ANSWERED, report)
    assert memory_at_work(check, HELD) is None
    assert reviewed(with_memory(stop()), check).action is Action.STOP


def test_without_gpu_memory_held_a_machine_without_the_agent_is_judged_on_its_other_metrics() -> None:
    assert memory_at_work(ActivityCheck(CheckState.NO_AGENT), "") is None
    assert reviewed(with_memory(stop(), ""), ActivityCheck(CheckState.NO_AGENT)).action is Action.STOP


def test_a_hook_that_says_keep_over_an_otherwise_idle_machine_is_told_apart_from_one_over_work() -> None:
    alone = judge_activity(ActivityReport(hook_exit=0, hook_line="kept"), window_minutes=WINDOW, busy_core_percent=50)
    assert (alone.verdict, alone.by_hook) == (Verdict.BUSY, True)
    typed = ActivityReport(hook_exit=0, hook_line="kept", sessions=(Session("pts/0", 60),))
    over_work = judge_activity(typed, window_minutes=WINDOW, busy_core_percent=50)
    assert (over_work.verdict, over_work.by_hook) == (Verdict.BUSY, False)


def test_a_check_without_its_hook_keeps_every_other_sign_and_drops_the_hooks_failure_too() -> None:
    report = ActivityReport(hook_exit=0, hook_line="kept", errors=("hook: timed out", "jupyter: refused"))
    check = without_hook(ActivityCheck(CheckState.ANSWERED, report))
    assert check.report is not None
    assert (check.report.hook_exit, check.report.hook_line, check.report.errors) == (None, "", ("jupyter: refused",))
    assert without_hook(ActivityCheck(CheckState.NO_AGENT)) == ActivityCheck(CheckState.NO_AGENT)


def test_a_hook_over_a_check_that_could_not_look_everywhere_is_not_the_hooks_alone() -> None:
    blind = ActivityReport(hook_exit=0, hook_line="kept", errors=("nvidia-smi: FileNotFoundError",))
    judged_blind = judge_activity(blind, window_minutes=WINDOW, busy_core_percent=50)
    assert (judged_blind.verdict, judged_blind.by_hook) == (Verdict.BUSY, False)  # a job it cannot see may be there
