"""The idle decision: examples for each rule, then properties hypothesis checks over random inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.core.series import Series, Signal, Utilization
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.decision import Action, KeptFor, decide, protection
from costguard.idle.rules.judgement import Verdict, judge

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)
POLICY = IdlePolicy()
PERIOD = timedelta(minutes=5)


def points(values: list[float], end: datetime = NOW) -> tuple[tuple[datetime, float], ...]:
    """One value per 5-minute period, the last period ending at `end`."""
    start = end - PERIOD * len(values)
    return tuple((start + PERIOD * i, v) for i, v in enumerate(values))


def utilization(
    gpu: list[list[float]] | None = None,
    cpu: list[float] | None = None,
    *,
    core: list[float] | None = None,
    vcpus: int = 8,
) -> Utilization:
    """A machine's series; with `core`, the agent's busiest-core series too. 8 vCPUs by default, so that
    without the busiest core a CPU at 6.25% (half a core's share) is work."""
    gpu = [[1.0] * 36] if gpu is None else gpu
    cpu = [2.0] * 36 if cpu is None else cpu
    series = [Series(Signal.GPU, f"GPU {i}", points(v)) for i, v in enumerate(gpu)]
    series.append(Series(Signal.CPU, "CPU", points(cpu)))
    if core is not None:
        series.append(Series(Signal.BUSIEST_CORE, "busiest core", points(core)))
    return Utilization("i-1", tuple(series), gpu_telemetry=bool(gpu), vcpus=vcpus)


def instance(**overrides: object) -> Instance:
    fields: dict[str, object] = {
        "instance_id": "i-1",
        "region": "us-east-1",
        "instance_type": "g5.12xlarge",
        "state": "running",
        "launch_time": NOW - timedelta(hours=6),
        "tags": {"Owner": "bob@example.com"},
    }
    fields.update(overrides)
    return Instance(**fields)  # type: ignore[arg-type]


def warned(at: datetime, stop_after: datetime, **tags_: str) -> dict[str, str]:
    return {
        "Owner": "bob@example.com",
        tags.IDLE_WARNED_AT: formatting.format_time(at),
        tags.STOP_AFTER: formatting.format_time(stop_after),
        **tags_,
    }


# ------------------------------------------------------------------ judgement


def test_all_signals_below_thresholds_for_the_window_is_idle() -> None:
    j = judge(utilization(gpu=[[0.5] * 36, [1.5] * 36]), POLICY, NOW)
    assert j.verdict is Verdict.IDLE
    assert j.reason == "idle for 120 min: GPU max 1.5% < 5%, CPU max 2.0% < 6.25%"
    assert j.idle_minutes(NOW) == 180  # the data goes back 3 h, all of it idle


def test_one_busy_gpu_of_four_makes_the_instance_busy() -> None:
    busy = [1.0] * 36
    busy[30] = 97.0
    j = judge(utilization(gpu=[[1.0] * 36, [1.0] * 36, busy, [1.0] * 36]), POLICY, NOW)
    assert j.verdict is Verdict.BUSY
    assert j.reason == "GPU 2 at 97.0% at 13:30 UTC"


def test_a_gap_in_the_window_is_insufficient_data_not_idle() -> None:
    cpu = points([2.0] * 36)
    gappy = Series(Signal.CPU, "CPU", cpu[:20] + cpu[23:])  # 15 minutes missing
    u = Utilization("i-1", (Series(Signal.GPU, "GPU 0", points([1.0] * 36)), gappy), True, vcpus=8)
    j = judge(u, POLICY, NOW)
    assert j.verdict is Verdict.INSUFFICIENT
    assert j.reason == "CPU: no data for 3 of 22 periods (from 12:40 UTC)"


def test_the_newest_periods_may_lag_without_counting_as_a_gap() -> None:
    late = utilization(gpu=[[1.0] * 34], cpu=[2.0] * 34)  # nothing for the last 10 minutes
    shifted = Utilization(
        "i-1",
        tuple(Series(s.signal, s.label, points([v for _, v in s.points], NOW - 2 * PERIOD)) for s in late.series),
        True,
        vcpus=8,
    )
    assert judge(shifted, POLICY, NOW).verdict is Verdict.IDLE


def test_no_cpu_data_at_all_is_insufficient() -> None:
    u = Utilization("i-1", (Series(Signal.GPU, "GPU 0", points([1.0] * 36)),), True, vcpus=8)
    assert judge(u, POLICY, NOW).verdict is Verdict.INSUFFICIENT


def test_gpu_series_discovered_but_empty_is_insufficient() -> None:
    u = Utilization("i-1", (Series(Signal.CPU, "CPU", points([1.0] * 36)),), gpu_telemetry=True, vcpus=8)
    assert judge(u, POLICY, NOW).verdict is Verdict.INSUFFICIENT


def test_a_fetch_error_is_insufficient() -> None:
    assert judge(Utilization("i-1", error="Throttling"), POLICY, NOW).verdict is Verdict.INSUFFICIENT


def test_network_counts_only_when_it_is_a_signal() -> None:
    u = utilization()
    busy_net = Series(Signal.NETWORK_IN, "network in", points([5_000_000.0] * 36))
    with_net = Utilization(
        "i-1", (*u.series, busy_net, Series(Signal.NETWORK_OUT, "network out", points([0.0] * 36))), True, vcpus=8
    )
    assert judge(with_net, POLICY, NOW).verdict is Verdict.IDLE
    net_policy = IdlePolicy(network_idle_bytes_per_second=100_000)
    assert judge(with_net, net_policy, NOW).verdict is Verdict.BUSY


def test_one_busy_core_on_a_192_vcpu_host_is_work_without_the_busiest_core_metric() -> None:
    # Tokenization pegs one core: CPUUtilization, the average over 192 vCPUs, reads 0.52%; the GPUs 0.
    j = judge(utilization(gpu=[[0.0] * 36] * 8, cpu=[100 / 192] * 36, vcpus=192), POLICY, NOW)
    assert j.verdict is Verdict.BUSY
    assert j.reason == "CPU at 0.5% at 12:00 UTC"


def test_one_busy_core_on_a_192_vcpu_host_is_work_by_the_busiest_core_metric() -> None:
    u = utilization(gpu=[[0.0] * 36] * 8, cpu=[100 / 192] * 36, core=[100.0] * 36, vcpus=192)
    j = judge(u, POLICY, NOW)
    assert j.verdict is Verdict.BUSY
    assert j.reason == "busiest core at 100.0% at 12:00 UTC"


def test_with_the_busiest_core_metric_a_quiet_big_host_is_idle_at_the_usual_cpu_threshold() -> None:
    u = utilization(gpu=[[0.0] * 36] * 8, cpu=[2.0] * 36, core=[20.0] * 36, vcpus=192)
    j = judge(u, POLICY, NOW)
    assert j.verdict is Verdict.IDLE
    assert j.reason == "idle for 120 min: GPU max 0.0% < 5%, busiest core max 20.0% < 50%, CPU max 2.0% < 10%"


def test_many_cores_at_low_use_are_still_work_by_the_instance_cpu() -> None:
    u = utilization(gpu=[[0.0] * 36], cpu=[15.0] * 36, core=[15.0] * 36, vcpus=96)
    assert judge(u, POLICY, NOW).verdict is Verdict.BUSY


def test_the_cpu_threshold_is_half_a_cores_share_without_the_busiest_core() -> None:
    assert POLICY.cpu_threshold(8, busiest_core_known=False) == 6.25
    assert POLICY.cpu_threshold(192, busiest_core_known=False) == pytest.approx(0.2604, abs=1e-4)
    assert POLICY.cpu_threshold(2, busiest_core_known=False) == 10.0  # the usual threshold is the lower
    assert POLICY.cpu_threshold(0, busiest_core_known=False) == POLICY.cpu_threshold(192, busiest_core_known=False)
    assert POLICY.cpu_threshold(192, busiest_core_known=True) == 10.0


@pytest.mark.parametrize(
    ("instance_type", "vcpus"),
    [("g5.xlarge", 4), ("p3.2xlarge", 8), ("g5.12xlarge", 48), ("p5.48xlarge", 192), ("g4dn.metal", 0)],
)
def test_vcpus_come_from_the_size_when_ec2_does_not_say(instance_type: str, vcpus: int) -> None:
    assert instance(instance_type=instance_type).vcpu_count == vcpus
    assert instance(instance_type=instance_type, vcpus=7).vcpu_count == 7


@pytest.mark.parametrize("silent_for", [timedelta(hours=3), timedelta(days=13)])
def test_a_gpu_agent_that_went_silent_is_insufficient_data_not_idle(silent_for: timedelta) -> None:
    # The GPU series are still listed (ListMetrics covers two weeks) but hold nothing in the window.
    last = NOW - silent_for
    u = Utilization(
        "i-1",
        (
            Series(Signal.GPU, "GPU 0", points([0.0] * 12, end=last)),
            Series(Signal.CPU, "CPU", points([1.0] * 36)),
            Series(Signal.BUSIEST_CORE, "busiest core", points([3.0] * 36)),
        ),
        gpu_telemetry=True,
        vcpus=8,
    )
    j = judge(u, POLICY, NOW)
    assert j.verdict is Verdict.INSUFFICIENT
    assert j.reason.endswith("its GPU agent may be silent")
    d = decide(instance(), j, POLICY, NOW)
    assert d.action is Action.NONE


def test_a_gpu_listed_under_two_dimension_sets_is_judged_on_the_points_it_has() -> None:
    # After an agent upgrade the same GPU 0 has an old series (empty now) and a new one (idle).
    u = utilization(gpu=[[1.0] * 36])
    old = Series(Signal.GPU, "GPU 0", ())
    j = judge(Utilization("i-1", (old, *u.series), True, vcpus=8), POLICY, NOW)
    assert j.verdict is Verdict.IDLE


# ------------------------------------------------------------------ decision


def test_idle_instance_never_warned_is_warned_with_stop_time_after_grace() -> None:
    d = decide(instance(), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.WARN
    assert d.stop_after == NOW + timedelta(minutes=30)


def test_warned_instance_still_in_grace_waits() -> None:
    inst = instance(tags=warned(NOW - timedelta(minutes=10), NOW + timedelta(minutes=20)))
    d = decide(inst, judge(utilization(), POLICY, NOW, since=NOW - timedelta(minutes=10)), POLICY, NOW)
    assert d.action is Action.WAIT


def test_gpu_instance_idle_through_grace_period_is_stopped_and_hibernated_when_configured() -> None:
    inst = instance(tags=warned(NOW - timedelta(minutes=31), NOW - timedelta(minutes=1)), hibernation_configured=True)
    d = decide(inst, judge(utilization(), POLICY, NOW, since=NOW - timedelta(minutes=31)), POLICY, NOW)
    assert (d.action, d.hibernate) == (Action.STOP, True)


def test_stop_needs_data_covering_everything_since_the_warning() -> None:
    # Warned 3 h ago (a sweep was missed): a 2-hour judgement does not cover the grace period.
    inst = instance(tags=warned(NOW - timedelta(hours=3), NOW - timedelta(hours=2, minutes=30)))
    d = decide(inst, judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.WARN, "warned again, with a new grace period, instead of stopped"
    assert d.stop_after == NOW + timedelta(minutes=30)


def test_warned_instance_back_at_work_has_its_warning_cleared() -> None:
    gpu = [1.0] * 35 + [88.0]
    inst = instance(tags=warned(NOW - timedelta(minutes=10), NOW + timedelta(minutes=20)))
    d = decide(inst, judge(utilization(gpu=[gpu]), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.CLEAR_WARNING
    assert "88.0%" in d.reason


def test_a_warned_machine_at_work_only_by_cpu_no_answer_has_spoken_for_yet_waits_and_is_never_stopped_so() -> None:
    """The judgement without the CPU since its check's last answer (`unanswered`) idle: the warning stands and no
    stop is made, even past its stop time, until an answer says whose that CPU was."""
    busy_core = [3.0] * 35 + [100.0]
    since = NOW - timedelta(minutes=31)
    inst = instance(tags=warned(since, NOW - timedelta(minutes=1)))
    judged = judge(utilization(core=busy_core), POLICY, NOW, since=since)
    assert judged.verdict is Verdict.BUSY
    pending = judge(utilization(core=busy_core), POLICY, NOW, since=since, excused=lambda t: t >= NOW - PERIOD)
    d = decide(inst, judged, POLICY, NOW, unanswered=pending)
    assert d.action is Action.WAIT
    assert d.stop_after == NOW - timedelta(minutes=1)
    assert d.reason.endswith("its check has not said yet whether that was the system's own services")
    assert decide(inst, judged, POLICY, NOW).action is Action.CLEAR_WARNING  # without it: withdrawn
    gpu = [1.0] * 35 + [88.0]  # a GPU at work: never waiting on an answer (no answer excuses a GPU)
    at_work = judge(utilization(gpu=[gpu], core=busy_core), POLICY, NOW, since=since, excused=lambda t: True)
    assert decide(inst, judged, POLICY, NOW, unanswered=at_work).action is Action.CLEAR_WARNING
    unwarned = instance()  # never warned: nothing to keep
    assert decide(unwarned, judged, POLICY, NOW, unanswered=pending).action is Action.NONE
    overdue = instance(tags=warned(since, NOW - timedelta(minutes=20)))  # a sweep past its stop time: no longer
    assert decide(overdue, judged, POLICY, NOW, unanswered=pending).action is Action.CLEAR_WARNING


def test_restarted_instance_with_old_warning_tags_is_not_stopped_on_them() -> None:
    old = warned(NOW - timedelta(hours=5), NOW - timedelta(hours=4, minutes=30))
    inst = instance(tags=old, launch_time=NOW - timedelta(hours=3))
    d = decide(inst, judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.WARN


def test_instance_running_less_than_the_window_is_not_idle_yet() -> None:
    d = decide(instance(launch_time=NOW - timedelta(minutes=30)), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.SKIP
    assert d.reason == "running for 30 min, less than the 120-min window"
    # Run as long as the shorter window, it is watched (its check asked) for certain idleness.
    d = decide(instance(launch_time=NOW - timedelta(minutes=90)), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.NONE
    assert d.reason == "running for 90 min, less than the 120-min window"
    off = IdlePolicy(certain_idle_minutes=0)
    d = decide(instance(launch_time=NOW - timedelta(minutes=90)), judge(utilization(), off, NOW), off, NOW)
    assert d.action is Action.SKIP


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"tags": {tags.EXEMPT: "benchmark rig"}}, "exempt: benchmark rig"),
        ({"tags": {tags.KEEP_UNTIL: "2026-11-21T18:00:00Z"}}, "kept until 2026-11-21T18:00:00Z"),
        ({"tags": {tags.KEEP_UNTIL: "friday"}}, "is not a time I can read, so it is kept"),
        ({"root_device_type": "instance-store"}, "instance-store root volume"),
        ({"lifecycle": "spot"}, "one-time Spot instance"),
        ({"tags": {"karpenter.sh/nodepool": "gpu"}}, "managed by Karpenter"),
    ],
)
def test_protected_instances_are_skipped_with_the_reason(overrides: dict[str, object], reason: str) -> None:
    d = decide(instance(**overrides), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.SKIP
    assert reason in d.reason


def test_persistent_spot_instance_can_be_stopped() -> None:
    assert protection(instance(lifecycle="spot"), NOW, spot_request_type="persistent") is None


def test_expired_keep_until_no_longer_protects() -> None:
    assert protection(instance(tags={tags.KEEP_UNTIL: "2026-11-21T13:00:00Z"}), NOW) is None


def test_keep_tag_added_after_warning_clears_the_warning() -> None:
    t = warned(NOW - timedelta(minutes=10), NOW + timedelta(minutes=20), **{tags.KEEP_UNTIL: "2026-11-22T09:00:00Z"})
    d = decide(instance(tags=t), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.CLEAR_WARNING


@pytest.mark.parametrize(
    ("gpu", "protected", "action"),
    [([90.0] * 36, False, Action.PROTECT), ([1.0] * 36, True, Action.UNPROTECT), ([90.0] * 36, True, Action.NONE)],
)
def test_auto_scaling_members_get_scale_in_protection_not_stops(
    gpu: list[float], protected: bool, action: Action
) -> None:
    inst = instance(tags={"aws:autoscaling:groupName": "inference"})
    j = judge(utilization(gpu=[gpu], cpu=[50.0 if gpu[0] > 50 else 1.0] * 36), POLICY, NOW)
    assert decide(inst, j, POLICY, NOW, protected_from_scale_in=protected).action is action


def test_without_gpu_telemetry_the_owner_is_warned_but_never_stopped_when_policy_says_so() -> None:
    policy = IdlePolicy(stop_without_gpu_telemetry=False)
    u = utilization(gpu=[])
    d = decide(instance(), judge(u, policy, NOW), policy, NOW, gpu_telemetry=False)
    assert (d.action, d.will_stop, d.stop_after) == (Action.WARN, False, None)


def test_without_gpu_telemetry_a_warning_that_stops_nothing_is_marked_for_its_owners_word() -> None:
    policy = IdlePolicy(stop_without_gpu_telemetry=False)
    u = utilization(gpu=[])
    told = decide(instance(), judge(u, policy, NOW), policy, NOW, gpu_telemetry=False)
    assert told.kept_for is KeptFor.GPUS_UNSEEN  # held for what nothing sees: its owner may be asked their word
    # The word itself is read where costguard knows no check can see its GPUs (review.confirm), not here.
    vouched = instance(tags={"Owner": "bob@example.com", tags.UNSEEN_WORK: tags.NOTHING_UNSEEN})
    assert decide(vouched, judge(u, policy, NOW), policy, NOW, gpu_telemetry=False).will_stop is False
    by_cpu = IdlePolicy(stop_without_gpu_telemetry=True)
    d = decide(instance(), judge(u, by_cpu, NOW), by_cpu, NOW, gpu_telemetry=False)
    assert (d.action, d.will_stop, d.cpu_only) == (Action.WARN, True, True)  # the account's word


def test_without_gpu_telemetry_but_with_its_own_check_the_warning_may_stop_it_once_the_check_agrees() -> None:
    u = utilization(gpu=[])
    d = decide(instance(), judge(u, POLICY, NOW), POLICY, NOW, gpu_telemetry=False, gpus_from_check=True)
    assert (d.action, d.will_stop, d.gpus_from_check) == (Action.WARN, True, True)
    assert d.stop_after == NOW + timedelta(minutes=30)  # if the review finds its answers bear it out


# ------------------------------------------------------------------ the system's own CPU, certain idleness


def test_a_busy_core_the_system_made_is_not_work_but_a_busy_gpu_always_is() -> None:
    spike = NOW - timedelta(minutes=50)
    core = [4.0] * 36
    core[26] = 100.0  # one period of apt's upgrade, 50 minutes ago
    u = utilization(core=core)
    assert judge(u, POLICY, NOW).verdict is Verdict.BUSY

    def excused(t: datetime) -> bool:
        return t == spike

    j = judge(u, POLICY, NOW, excused=excused)
    assert j.verdict is Verdict.IDLE
    assert j.reason.endswith("(not counting the system's own services' CPU)")
    assert j.idle_minutes(NOW) == 180
    gpu = [1.0] * 36
    gpu[26] = 40.0
    assert judge(utilization(gpu=[gpu], core=core), POLICY, NOW, excused=excused).verdict is Verdict.BUSY


def busy_an_hour_ago() -> Utilization:
    gpu = [80.0] * 24 + [0.5] * 12  # a run that ended an hour ago
    return utilization(gpu=[gpu], core=[100.0] * 24 + [4.0] * 12)


def test_idle_for_the_shorter_window_is_an_early_warning_for_the_machines_check_to_confirm() -> None:
    u = busy_an_hour_ago()
    full = judge(u, POLICY, NOW)
    certain = judge(u, POLICY, NOW, window_minutes=45)
    assert (full.verdict, certain.verdict) == (Verdict.BUSY, Verdict.IDLE)
    d = decide(instance(), full, POLICY, NOW, shorter=certain)
    assert (d.action, d.early, d.stop_after) == (Action.WARN, True, NOW + timedelta(minutes=30))
    assert d.reason == "idle for 45 min: GPU max 0.5% < 5%, busiest core max 4.0% < 50%, CPU max 2.0% < 10%"


@pytest.mark.parametrize(
    ("inst", "policy"),
    [
        (instance(tags={tags.EARLY_WARNING: "off"}), POLICY),  # its owner turned it off
        (instance(tags={tags.EARLY_WARNING: " OFF "}), POLICY),
        (instance(), IdlePolicy(certain_idle_minutes=0)),  # the deployment did
    ],
)
def test_early_warnings_can_be_turned_off(inst: Instance, policy: IdlePolicy) -> None:
    u = busy_an_hour_ago()
    certain = judge(u, policy, NOW, window_minutes=45)
    d = decide(inst, judge(u, policy, NOW), policy, NOW, shorter=certain)
    assert d.action is Action.NONE


def test_an_early_warned_machine_is_stopped_after_the_grace_on_the_shorter_window_since_the_warning() -> None:
    warned_at = NOW - timedelta(minutes=31)
    # Idle for 80 minutes: not the full window, but the 45 minutes before the warning and its grace.
    u = utilization(gpu=[[80.0] * 20 + [0.5] * 16], core=[100.0] * 20 + [4.0] * 16)
    inst = instance(tags=warned(warned_at, NOW - timedelta(minutes=1)))
    certain = judge(u, POLICY, NOW, since=warned_at - timedelta(minutes=45), window_minutes=45)
    d = decide(inst, judge(u, POLICY, NOW, since=warned_at), POLICY, NOW, shorter=certain)
    assert (d.action, d.early) == (Action.STOP, True)
    back = judge(utilization(core=[4.0] * 34 + [100.0, 4.0]), POLICY, NOW, window_minutes=45)
    assert decide(inst, judge(u, POLICY, NOW), POLICY, NOW, shorter=back).action is Action.CLEAR_WARNING


def test_cpu_instances_are_not_accelerators() -> None:
    d = decide(instance(instance_type="c6i.4xlarge"), judge(utilization(), POLICY, NOW), POLICY, NOW)
    assert d.action is Action.SKIP


# ------------------------------------------------------------------ properties

values = st.floats(min_value=0, max_value=100, allow_nan=False)
idle_values = st.floats(min_value=0, max_value=4.99, allow_nan=False)


@st.composite
def idle_series(draw: st.DrawFn, n: int = 36) -> list[float]:
    return draw(st.lists(idle_values, min_size=n, max_size=n))


@st.composite
def warned_instances(draw: st.DrawFn) -> Instance:
    warned_minutes_ago = draw(st.integers(min_value=0, max_value=300))
    grace = draw(st.integers(min_value=-60, max_value=60))
    at = NOW - timedelta(minutes=warned_minutes_ago)
    return instance(
        tags=warned(at, at + timedelta(minutes=30 + grace)) if draw(st.booleans()) else {"Owner": "x"},
        launch_time=NOW - timedelta(minutes=draw(st.integers(min_value=0, max_value=2000))),
        hibernation_configured=draw(st.booleans()),
    )


@settings(max_examples=300)
@given(inst=warned_instances(), gpus=st.lists(idle_series(), min_size=1, max_size=8), cpu=idle_series(), drop=st.data())
def test_property_a_gap_inside_the_window_never_leads_to_warn_or_stop(inst, gpus, cpu, drop) -> None:
    u = utilization(gpu=gpus, cpu=[v * 2 for v in cpu])
    victim = drop.draw(st.integers(min_value=0, max_value=len(u.series) - 1))
    # remove one period older than the allowed lag (10 min) but inside the 2-hour window
    hole = drop.draw(st.integers(min_value=13, max_value=33))
    series = list(u.series)
    series[victim] = Series(
        series[victim].signal, series[victim].label, series[victim].points[:hole] + series[victim].points[hole + 1 :]
    )
    gappy = Utilization("i-1", tuple(series), True, vcpus=u.vcpus)
    warned_at = formatting.parse_time(inst.tags.get(tags.IDLE_WARNED_AT))
    d = decide(inst, judge(gappy, POLICY, NOW, since=warned_at), POLICY, NOW)
    assert d.action not in (Action.STOP, Action.WARN)


@settings(max_examples=300)
@given(
    inst=warned_instances(),
    gpus=st.lists(idle_series(), min_size=1, max_size=8),
    cpu=idle_series(),
    where=st.data(),
    level=st.floats(min_value=5, max_value=100),
)
def test_property_a_busy_point_inside_the_window_never_leads_to_warn_or_stop(inst, gpus, cpu, where, level) -> None:
    gpu_index = where.draw(st.integers(min_value=0, max_value=len(gpus) - 1))
    position = where.draw(st.integers(min_value=12, max_value=35))  # any period of the last 2 hours
    gpus[gpu_index][position] = level
    warned_at = formatting.parse_time(inst.tags.get(tags.IDLE_WARNED_AT))
    d = decide(inst, judge(utilization(gpu=gpus, cpu=cpu), POLICY, NOW, since=warned_at), POLICY, NOW)
    assert d.action not in (Action.STOP, Action.WARN)


@st.composite
def ineligible(draw: st.DrawFn) -> Instance:
    kind = draw(st.sampled_from(["exempt", "kept", "store", "spot", "asg", "young", "family", "state", "orchestrated"]))
    base = draw(warned_instances())
    t = dict(base.tags)
    launch = NOW - timedelta(hours=10)
    extra: dict[str, object] = {}
    if kind == "exempt":
        t[tags.EXEMPT] = draw(st.text(max_size=20))
    elif kind == "kept":
        t[tags.KEEP_UNTIL] = draw(
            st.one_of(
                st.text(max_size=25),
                st.just(formatting.format_time(NOW + timedelta(minutes=draw(st.integers(1, 10_000))))),
            )
        )
    elif kind == "store":
        extra["root_device_type"] = "instance-store"
    elif kind == "spot":
        extra["lifecycle"] = "spot"
    elif kind == "asg":
        t["aws:autoscaling:groupName"] = "g"
    elif kind == "young":
        launch = NOW - timedelta(minutes=draw(st.integers(0, 119)))
    elif kind == "family":
        extra["instance_type"] = draw(
            st.sampled_from(["c6i.large", "m7g.xlarge", "r6i.2xlarge", "t3.micro", "x2idn.large"])
        )
    elif kind == "state":
        extra["state"] = draw(st.sampled_from(["pending", "stopping", "stopped", "shutting-down"]))
    else:
        t[draw(st.sampled_from(["karpenter.sh/nodepool", "aws:eks:cluster-name", "aws:ec2spot:fleet-request-id"]))] = (
            "x"
        )
    kept_until = formatting.parse_time(t.get(tags.KEEP_UNTIL))
    if kind == "kept" and kept_until is not None and kept_until <= NOW:
        t[tags.KEEP_UNTIL] = "not-a-time"
    return instance(tags=t, launch_time=launch, **extra)


@settings(max_examples=400)
@given(inst=ineligible(), protected=st.sampled_from([None, True, False]))
def test_property_ineligible_instances_are_never_warned_or_stopped(inst, protected) -> None:
    d = decide(
        inst,
        judge(utilization(), POLICY, NOW, since=NOW - timedelta(hours=5)),
        POLICY,
        NOW,
        protected_from_scale_in=protected,
    )
    assert d.action not in (Action.STOP, Action.WARN)


def test_a_machine_restarted_less_than_a_window_ago_and_seen_idle_by_its_check_is_warned_sooner() -> None:
    """Started again an hour ago and nothing alive on it since (its check agrees, idle/rules/review.py): warned
    on certain idleness, not after a whole window of its new run."""
    u = utilization(gpu=[[0.5] * 12], cpu=[2.0] * 12, core=[4.0] * 12)
    inst = instance(launch_time=NOW - timedelta(minutes=60))
    certain = judge(u, POLICY, NOW, window_minutes=45)
    assert certain.verdict is Verdict.IDLE
    d = decide(inst, judge(u, POLICY, NOW), POLICY, NOW, shorter=certain)
    assert (d.action, d.early) == (Action.WARN, True)
    # Not before the shorter window itself has passed since the start, nor without the check's word.
    young = instance(launch_time=NOW - timedelta(minutes=40))
    assert decide(young, judge(u, POLICY, NOW), POLICY, NOW, shorter=certain).action is Action.SKIP
    assert decide(inst, judge(u, POLICY, NOW), POLICY, NOW).action is Action.NONE  # watched: its check asked
    off = instance(launch_time=NOW - timedelta(minutes=60), tags={tags.EARLY_WARNING: "off"})
    assert decide(off, judge(u, POLICY, NOW), POLICY, NOW, shorter=certain).action is Action.SKIP
