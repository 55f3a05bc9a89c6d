"""What the activity check's answers prove across sweeps: the system's own CPU (cgroup v2 accounting), certain
idleness (each thing that vetoes it), and GPUs seen only by the machine's own check; and the review that
keeps or drops a warning or a stop resting on them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from costguard.core.settings import IdlePolicy
from costguard.idle.rules.activity import (
    ActivityCheck,
    ActivityReport,
    CheckState,
    CpuAccount,
    Gpu,
    Kernel,
    Process,
    Session,
)
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.evidence import Answer, answer_of, excused, excuses, gpus_quiet, kept, nothing_alive
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.rules.review import BY_ITS_CPU, confirm

NOW = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
POLICY = IdlePolicy(activity_check_document="doc")
QUARTER = timedelta(minutes=15)


def answer(minutes_ago: int, *, total: float, system: float, boot: str = "b1", **fields: object) -> Answer:
    return Answer(NOW - timedelta(minutes=minutes_ago), boot=boot, total_s=total, system_s=system, **fields)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the system's own CPU


def test_a_stretch_whose_cpu_was_all_the_systems_excuses_the_busy_points_inside_it() -> None:
    # apt took a core for four minutes (240 s) between two answers; everything else used 12 s.
    answers = [answer(30, total=1000, system=400), answer(15, total=1252, system=640)]
    [(start, end)] = excused(answers, busy_core_percent=50)
    assert (start, end) == (answers[0].at + timedelta(minutes=1), answers[1].at)  # the counters read by then
    inside = answers[0].at + timedelta(minutes=5)
    assert excuses([(start, end)], inside, 300)
    # A point whose period, or the agent's sample a minute before it, reaches outside is not.
    assert not excuses([(start, end)], answers[0].at, 300)
    assert not excuses([(start, end)], end - timedelta(minutes=4), 300)


def test_the_minute_after_an_answer_is_not_covered_by_it_its_counters_may_be_read_that_late() -> None:
    # The check reads the cgroup counters after its 3-second sample and nvidia-smi, within its time limit
    # of a minute; CPU used before that is in no difference of two answers.
    answers = [answer(30, total=1000, system=400), answer(15, total=1252, system=640)]
    stretches = excused(answers, busy_core_percent=50)
    sample_opening_at_the_answer = answers[0].at + timedelta(minutes=1)
    assert not excuses(stretches, sample_opening_at_the_answer, 300)
    assert excuses(stretches, sample_opening_at_the_answer + timedelta(minutes=1), 300)


def test_thirty_cpu_seconds_of_anything_else_could_be_a_busy_minute_so_nothing_is_excused() -> None:
    answers = [answer(30, total=1000, system=400), answer(15, total=1270, system=640)]  # 30 s not the system's
    assert excused(answers, busy_core_percent=50) == ()


def test_nothing_is_attributed_across_a_reboot_or_a_count_that_went_back() -> None:
    assert excused([answer(30, total=1000, system=400), answer(15, total=1240, system=640, boot="b2")], 50) == ()
    assert excused([answer(30, total=1000, system=400), answer(15, total=900, system=380)], 50) == ()


def test_answers_without_cgroup_v2_accounting_attribute_nothing() -> None:
    plain = [Answer(NOW - timedelta(minutes=30)), Answer(NOW - timedelta(minutes=15))]
    assert excused(plain, 50) == ()


def test_a_point_across_an_answer_is_covered_by_the_pair_of_answers_around_it() -> None:
    answers = [
        answer(45, total=1000, system=400),
        answer(30, total=1245, system=640),  # apt, 4 minutes, straddling this answer
        answer(15, total=1250, system=644),
    ]
    stretches = excused(answers, busy_core_percent=50)
    assert (answers[0].at + timedelta(minutes=1), answers[2].at) in stretches
    assert excuses(stretches, answers[1].at - timedelta(minutes=2), 300)


def test_a_system_share_that_grew_more_than_the_whole_attributes_nothing_from_there_on() -> None:
    # A unit counted only once it ended (the journal's lifetime figure: CPU from before the first answer
    # too) makes the system's share jump past the whole machine's. The 300 s job running between the first
    # two answers must not be excused by the pair around it all.
    answers = [
        answer(45, total=1000, system=400),
        answer(30, total=1300, system=402),  # a job: 300 s that were not the system's
        answer(15, total=1320, system=710),  # it ended; its whole life (308 s) logged as if a system unit's
    ]
    assert excused(answers, busy_core_percent=50) == ()


def test_the_threshold_follows_busiest_core_percent() -> None:
    answers = [answer(30, total=1000, system=400), answer(15, total=1290, system=640)]  # 50 s not the system's
    assert excused(answers, busy_core_percent=50) == ()
    assert excused(answers, busy_core_percent=90) != ()  # 54 s is what a 90 % minute needs


# ------------------------------------------------------------------ certain idleness: each veto


def quiet(**changes: object) -> ActivityReport:
    fields: dict[str, object] = {"sessions": (Session("pts/0", 5 * 3600),)}
    fields.update(changes)
    return ActivityReport(**fields)  # type: ignore[arg-type]


START = NOW - timedelta(minutes=45)


def saw(report: ActivityReport, answers: list[Answer] | None = None) -> str | None:
    return nothing_alive(answers or [], report, start=START, now=NOW, busy_core_percent=50)


def test_nothing_alive_on_the_machine_is_certain_idleness() -> None:
    assert saw(quiet()) is None
    assert saw(ActivityReport()) is None  # nobody logged in at all


@pytest.mark.parametrize(
    ("report", "why"),
    [
        (quiet(sessions=(Session("pts/2", 40 * 60),)), "someone typed in pts/2 40 min ago"),
        (quiet(kernels=(Kernel("idle", 6 * 3600),)), "1 Jupyter kernel alive"),
        (quiet(cpu=(Process("python tokenize.py", cpu=60.0),)), "python tokenize.py is using 60% of a CPU core"),
        (quiet(gpu=(Process("python serve.py", gpu_mib=2048),)), "python serve.py holds 2.0 GiB of GPU memory"),
        (
            quiet(gpu=(Process("python -m ipykernel_launcher", gpu_mib=900, notebook=True),)),
            "python -m ipykernel_launcher holds 900 MiB of GPU memory",
        ),
        (quiet(hook_exit=0, hook_line="batch at 04:00"), "the owner's keep-alive hook says keep: batch at 04:00"),
    ],
)
def test_each_sign_of_life_vetoes_certain_idleness(report: ActivityReport, why: str) -> None:
    assert saw(report) == why


def test_a_process_under_busiest_core_percent_and_a_failed_hook_do_not_veto() -> None:
    assert saw(quiet(cpu=(Process("sshd", cpu=6.0),), hook_exit=1)) is None


def test_an_earlier_answer_in_the_window_that_saw_a_kernel_vetoes_it() -> None:
    earlier = [Answer(NOW - timedelta(minutes=20), kernels=1)]
    assert saw(quiet(), earlier) == "a Jupyter kernel was alive at 02:40 UTC"
    older = [Answer(NOW - timedelta(minutes=50), kernels=1)]  # before the window: no longer its business
    assert saw(quiet(), older) is None


@pytest.mark.parametrize(
    ("report", "why"),
    [
        # A Jupyter server the check could not ask (HTTPS, a password, busy): its kernels are not "none".
        (quiet(errors=("jupyter: URLError",)), "the check could not see everything (jupyter: URLError)"),
        # nvidia-smi failed, or there is none (Trainium, Inferentia, Gaudi): no GPU memory seen is not none held.
        (
            quiet(errors=("nvidia-smi: TimeoutExpired",)),
            "the check could not see everything (nvidia-smi: TimeoutExpired)",
        ),
        # A kernel no Jupyter server lists (VS Code's notebooks, a server in a container): its process.
        (quiet(kernel_processes=1), "1 Jupyter kernel alive"),
    ],
)
def test_what_the_check_could_not_see_or_saw_only_as_a_process_vetoes_certain_idleness(
    report: ActivityReport, why: str
) -> None:
    assert saw(report) == why


def test_an_earlier_answer_that_could_not_see_everything_vetoes_it() -> None:
    earlier = [Answer(NOW - timedelta(minutes=20), blind=True)]
    assert saw(quiet(), earlier) == "the check could not see everything at 02:40 UTC"


def test_input_an_earlier_answer_saw_in_the_window_vetoes_it_though_its_terminal_is_gone() -> None:
    # Someone typed at 02:30 and logged out: the fresh answer has no terminal left to ask.
    earlier = [Answer(NOW - timedelta(minutes=20), input_idle_s=600)]
    assert saw(ActivityReport(), earlier) == "someone typed at 02:30 UTC"
    long_ago = [Answer(NOW - timedelta(minutes=20), input_idle_s=3600)]  # at 01:40: before the window
    assert saw(ActivityReport(), long_ago) is None


def test_an_answer_keeps_what_the_check_could_not_see_and_the_kernels_it_saw_as_processes() -> None:
    report = quiet(errors=("jupyter: URLError",), kernel_processes=2, at=int(NOW.timestamp()))
    kept_answer = Answer.from_json(answer_of(report, NOW).to_json())
    assert kept_answer is not None
    assert (kept_answer.blind, kept_answer.kernels) == (True, 2)
    assert answer_of(quiet(errors=("hook: TimeoutExpired",)), NOW).blind is True  # the owner's word unknown
    assert answer_of(quiet(errors=("cgroup: OSError",)), NOW).blind is False  # hides no sign of life


# ------------------------------------------------------------------ GPUs seen by the check alone


def gpu_answers(*utils: float | None, every: int = 15, holders: int = 0) -> list[Answer]:
    count = len(utils)
    return [
        Answer(NOW - timedelta(minutes=every * (count - 1 - n)), gpu_util=u, gpu_holders=holders)
        for n, u in enumerate(utils)
    ]


def test_consecutive_answers_with_every_gpu_at_zero_cover_the_window() -> None:
    answers = gpu_answers(*[0.0] * 9)  # 01:00 to 03:00, every quarter hour
    assert gpus_quiet(answers, start=NOW - timedelta(hours=2), now=NOW) is None
    last_hour = answers[4:]  # 02:00 to 03:00 do not cover two hours
    assert gpus_quiet(last_hour, start=NOW - timedelta(hours=2), now=NOW) == "no check answered near 01:00 UTC"


@pytest.mark.parametrize(
    ("answers", "why"),
    [
        (gpu_answers(0.0, 0.0, 3.0, 0.0, 0.0), "a GPU was in use at 02:30 UTC"),
        (gpu_answers(0.0, 0.0, None, 0.0, 0.0), "the check at 02:30 UTC could not read the GPUs"),
        (gpu_answers(0.0, 0.0, 0.0, 0.0, 0.0, holders=1), "a GPU was in use at 02:00 UTC"),
        (gpu_answers(0.0, 0.0, 0.0, every=30), "no check answered between 02:00 and 02:30 UTC"),
        (gpu_answers(0.0, 0.0, 0.0, 0.0, 0.0)[:-2], "no fresh check answer"),
    ],
)
def test_a_gpu_in_use_unread_or_unwatched_for_a_while_is_not_idle(answers: list[Answer], why: str) -> None:
    assert gpus_quiet(answers, start=NOW - timedelta(hours=1), now=NOW) == why


def test_an_idle_notebook_kernel_holding_gpu_memory_leaves_the_gpus_of_a_machine_without_gpu_metrics_idle() -> None:
    # The forgotten notebook, on a machine whose GPUs only its check sees: the kernel's memory is not a job.
    report = ActivityReport(
        gpu=(Process("python -m ipykernel_launcher", gpu_mib=6000, notebook=True),), gpus=(Gpu(0, 0.0, 6003),)
    )
    kept_answer = Answer.from_json(answer_of(report, NOW).to_json())
    assert kept_answer is not None
    assert (kept_answer.gpu_holders, kept_answer.kernel_holders) == (1, 1)
    answers = [replace(kept_answer, at=NOW - timedelta(minutes=15 * k)) for k in range(9)]
    assert gpus_quiet(answers, start=NOW - timedelta(hours=2), now=NOW) is None


def test_a_jobs_process_holding_gpu_memory_beside_a_kernel_is_gpu_use_and_an_older_answer_counts_every_holder() -> None:
    report = ActivityReport(
        gpu=(
            Process("python -m ipykernel_launcher", gpu_mib=6000, notebook=True),
            Process("python train.py", gpu_mib=30000),
        ),
        gpus=(Gpu(0, 0.0, 36003),),
    )
    job = answer_of(report, NOW)
    assert gpus_quiet([job], start=NOW, now=NOW) == "a GPU was in use at 03:00 UTC"
    older = Answer.from_json({"t": int(NOW.timestamp()), "g": 1, "u": 0.0})  # kept before kernels were counted apart
    assert older is not None
    assert gpus_quiet([older], start=NOW, now=NOW) == "a GPU was in use at 03:00 UTC"


def test_an_answer_kept_in_the_log_keeps_a_gpu_at_zero_percent_as_a_fact() -> None:
    report = ActivityReport(
        gpus=(Gpu(0, 0.0, 3), Gpu(1, 0.0, 3)),
        cpu_account=CpuAccount("b1", 1000.0, 400.0),
        at=int(NOW.timestamp()),
    )
    fresh = answer_of(report, NOW)
    again = Answer.from_json(fresh.to_json())
    assert again == fresh
    assert again is not None
    assert again.gpu_util == 0.0
    assert Answer.from_json({"t": "soon"}) is None  # an entry this version cannot read is no evidence


def test_a_machine_whose_clock_is_off_by_minutes_gives_no_cpu_account() -> None:
    report = ActivityReport(cpu_account=CpuAccount("b1", 1000.0, 400.0), at=int(NOW.timestamp()) - 600)
    assert answer_of(report, NOW).total_s is None


def test_the_log_keeps_a_day_of_answers() -> None:
    answers = [Answer(NOW - timedelta(hours=h)) for h in (30, 20, 2, 1)]
    assert [a.at for a in kept(answers, NOW)] == [NOW - timedelta(hours=h) for h in (20, 2, 1)]


# ------------------------------------------------------------------ the review of what rests on them


def early_warning(**changes: object) -> Decision:
    judgement = Judgement(Verdict.IDLE, "idle for 45 min", judged_from=NOW - timedelta(minutes=45))
    fields: dict[str, object] = {
        "instance_id": "i-1",
        "action": Action.WARN,
        "reason": "idle for 45 min",
        "stop_after": NOW + timedelta(minutes=30),
        "judgement": judgement,
        "early": True,
    }
    fields.update(changes)
    return Decision(**fields)  # type: ignore[arg-type]


def test_an_early_warning_stands_when_the_check_saw_nothing_and_says_so() -> None:
    decision = confirm(early_warning(), ActivityCheck(CheckState.ANSWERED, quiet()), [], POLICY, NOW)
    assert decision.action is Action.WARN
    assert decision.activity.startswith("the activity check saw nothing running: no input for 5 h")


def test_an_early_warning_waits_for_the_full_window_when_the_check_saw_a_kernel() -> None:
    check = ActivityCheck(CheckState.ANSWERED, quiet(kernels=(Kernel("idle", 9000),)))
    decision = confirm(early_warning(), check, [], POLICY, NOW)
    assert decision.action is Action.NONE
    assert decision.reason == "idle for 45 min, not yet 2 h: the check saw 1 Jupyter kernel alive"


@pytest.mark.parametrize(
    "check",
    [
        ActivityCheck(CheckState.NOT_ASKED),
        ActivityCheck(CheckState.NO_AGENT),
        ActivityCheck(CheckState.NO_ANSWER, detail="no answer in 45 s"),
    ],
)
def test_metrics_alone_never_shorten_the_window(check: ActivityCheck) -> None:
    assert confirm(early_warning(), check, [], POLICY, NOW).action is Action.NONE
    stop = early_warning(action=Action.STOP)
    assert confirm(stop, check, [], POLICY, NOW).action is Action.NONE


def gpu_blind(**changes: object) -> Decision:
    return early_warning(early=False, gpus_from_check=True, **changes)


def test_a_machine_without_gpu_metrics_is_warned_with_a_stop_when_its_own_check_saw_its_gpus_idle() -> None:
    answers = gpu_answers(0.0, 0.0, 0.0)  # 02:30, 02:45, 03:00 (the fresh one is added by the review)
    report = quiet(gpus=(Gpu(0, 0.0, 3),), at=int(NOW.timestamp()))
    decision = confirm(gpu_blind(), ActivityCheck(CheckState.ANSWERED, report), answers[:-1], POLICY, NOW)
    assert decision.action is Action.WARN
    assert decision.will_stop
    assert "judged from the machine's own check" in decision.activity


def test_without_that_it_is_warned_as_before_and_never_stopped() -> None:
    report = quiet(gpus=(Gpu(0, 12.0, 900),), at=int(NOW.timestamp()))
    warning = confirm(gpu_blind(), ActivityCheck(CheckState.ANSWERED, report), [], POLICY, NOW)
    assert warning.action is Action.WARN
    assert (warning.will_stop, warning.stop_after) == (False, None)
    again = confirm(gpu_blind(told=True), ActivityCheck(CheckState.ANSWERED, report), [], POLICY, NOW)
    assert again.action is Action.NONE  # warned already: nothing new to say
    stop = confirm(gpu_blind(action=Action.STOP), ActivityCheck(CheckState.NO_AGENT), [], POLICY, NOW)
    assert stop.action is Action.NONE


def test_its_owners_word_has_a_machine_nothing_sees_into_judged_by_its_cpu_and_nowhere_else() -> None:
    word = confirm(gpu_blind(), ActivityCheck(CheckState.NO_AGENT), [], POLICY, NOW, owners_word=True)
    assert (word.action, word.will_stop, word.cpu_only, word.gpus_from_check) == (Action.WARN, True, True, False)
    assert word.stop_after == NOW + timedelta(minutes=30)
    assert word.reason.endswith(BY_ITS_CPU)  # the trail says why it may now be stopped
    stop = confirm(gpu_blind(action=Action.STOP), ActivityCheck(CheckState.NO_AGENT), [], POLICY, NOW, owners_word=True)
    assert (stop.action, stop.cpu_only) == (Action.STOP, True)
    # Where its own check answers, or was not asked (ActivityCheck off: nobody knows it cannot answer), the word
    # changes nothing: its GPUs are judged by what sees them, or it is not stopped.
    report = quiet(gpus=(Gpu(0, 12.0, 900),), at=int(NOW.timestamp()))
    seen = confirm(gpu_blind(), ActivityCheck(CheckState.ANSWERED, report), [], POLICY, NOW, owners_word=True)
    assert (seen.will_stop, seen.cpu_only) == (False, False)
    unasked = confirm(gpu_blind(), ActivityCheck(CheckState.NOT_ASKED), [], POLICY, NOW, owners_word=True)
    assert (unasked.will_stop, unasked.cpu_only) == (False, False)
    # The shorter wait of certain idleness still needs the check's answers.
    early = confirm(
        early_warning(gpus_from_check=True), ActivityCheck(CheckState.NO_AGENT), [], POLICY, NOW, owners_word=True
    )
    assert early.action is Action.NONE
