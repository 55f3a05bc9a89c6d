"""The idle stopper's decision for one instance. Pure: records, the policy and `now` in; a decision out.

Never stopped: instances exempt or kept; outside the accelerator families; not running; with an
instance-store root or one-time Spot (they cannot be stopped); managed by an orchestrator that would
replace them; Auto Scaling group members (their scale-in protection is managed instead); running for
less than the window (unless certainly idle since its start: a restart is not a new window of idleness).
A stop needs a delivered warning (its tags), the grace period passed, and an idle judgement of fresh data
covering at least the window and everything since the warning.

Two decisions rest on the activity check as well (idle/rules/review.py confirms or drops them): a warning
(and its stop) after the shorter window of certain idleness, when the metrics are idle for it but not
for the full window; and a warning with a stop about a machine without GPU metrics, whose GPUs only its
own check sees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from costguard.core import formatting, tags
from costguard.core.bill import OffWorth
from costguard.core.keeping import kept_by_people
from costguard.core.money import Marginal
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.rules.judgement import Judgement, Verdict
from costguard.idle.rules.schedule import ScheduleError, parse_schedule
from costguard.idle.rules.trail import Step

# Tags of orchestrators that own their nodes' lifecycle: stopping one would only make it replace the node.
ORCHESTRATOR_TAGS = {
    "karpenter.sh/nodepool": "Karpenter",
    "karpenter.sh/provisioner-name": "Karpenter",
    "aws:eks:cluster-name": "Amazon EKS",
    "aws:ec2spot:fleet-request-id": "Spot Fleet",
    "aws:ec2:fleet-id": "EC2 Fleet",
    "aws:batch:compute-environment": "AWS Batch",
    "aws:sagemaker:domain-arn": "SageMaker",
    "parallelcluster:cluster-name": "AWS ParallelCluster",
}


class Action(StrEnum):
    NONE = "none"  # nothing to do, nothing to report
    SKIP = "skip"  # costguard will not act on this instance, and says why
    WARN = "warn"
    WAIT = "wait"  # warned, grace period running, still idle
    STOP = "stop"
    CLEAR_WARNING = "clear-warning"
    CANCEL_STOP = "cancel-stop"  # warned, but the activity check found work: warning cleared, owner told
    PROTECT = "protect"  # busy Auto Scaling group member: protect from scale-in
    UNPROTECT = "unprotect"  # idle member: let the group's scale-in remove it first


class StartFor(StrEnum):
    """What a stop's start again (`Decision.start_at`, said in `Decision.next_work`) is for."""

    RUN = "its next run"  # a job on the machine, or recurring work learned
    OWNERS_DAY = "the working day"  # a scarce machine, ready when its owner's working hours open (capacity.py)
    PERSONS_DAY = "its person's day"  # ready before its person puts it to work on a weekday (arrival.py)
    NIGHTS_RUN = "its night's run, while its owner is at work"  # a scarce machine worked only by night (capacity.py)


class KeptFor(StrEnum):
    """Why a machine costguard would otherwise warn or stop is left running, where its owner is told so (the
    outcome typed, never read from the words of the reason)."""

    UNREADABLE_SCHEDULE = "its working hours cannot be read"  # costguard:schedule: told once a day
    NOTHING_SAVED = "a stop saves nothing on the bill now"  # money.py: prepaid capacity is told once a day
    RUN_BEFORE_OWNER = "its run before its owner is back"  # capacity.py: a scarce machine's automated run
    # activity.py: idle but for its owner's keep-alive hook, which says keep (offered a keep for its runs: offers.py)
    ITS_HOOK = "its owner's keep-alive hook"
    # a machine no GPU metric and no activity check can see: warned, never stopped (its owner is offered their word)
    GPUS_UNSEEN = "nothing can see its GPUs"


@dataclass(frozen=True)
class Decision:
    instance_id: str
    action: Action
    reason: str
    stop_after: datetime | None = None
    hibernate: bool = False
    will_stop: bool = True  # False for a warning about a machine costguard will not stop by itself
    judgement: Judgement | None = None
    activity: str = ""  # what the activity check on the machine found, when it ran
    early: bool = False  # sooner than the window: stands only if the check saw nothing alive for all of it
    gpus_from_check: bool = False  # no GPU metrics: stops only if the check saw every GPU at 0 % throughout
    blind: bool = False  # its own check cannot answer (no SSM agent online): judged on its metrics alone
    cpu_only: bool = False  # no GPU metrics, and judged by its CPU (its owner's word, or the account's)
    unwatched: bool = False  # held, or started again, for weekday nights costguard has not watched (automation.py)
    told: bool = False  # warned already (without a stop): nothing more to say unless it will now stop
    next_work: str = ""  # the work a stop is held for or started again for (learned, a job, a day), as said
    # its known runs (a scheduled job, recurring work learned), as the messages say them, whether or not costguard
    # starts it for them: where "Keep it for its runs" means something
    runs: str = ""
    start_at: datetime | None = None  # a stop: when costguard starts the machine again for that work
    start_for: StartFor = StartFor.RUN  # what that start is for
    # a start made before its run's own (`StartFor.NIGHTS_RUN`): the run's start, until which it is tried again
    run_at: datetime | None = None
    bill: Marginal | None = None  # what a stop saves on the bill this hour, and why (None: not priced)
    worth: OffWorth | None = None  # what it saves over the hours it keeps the machine off (None: not priced)
    scarce: str = ""  # not stopped while its owner works: the evidence that it might not start again
    kept_for: KeptFor | None = None  # left running for this, and told (None: not such a machine)
    trail: tuple[Step, ...] = ()  # each rule's mark on the decision, in the pipeline's order (trail.py)

    def stop_time(self, now: datetime) -> datetime:
        """When its stop would be made: a warning's at the end of its grace, anything else's now."""
        return self.stop_after if self.action is Action.WARN and self.stop_after else now


UNREADABLE_SCHEDULE = f"{tags.SCHEDULE} cannot be read"


def tells_schedule(decision: Decision) -> bool:
    """A machine kept because its working hours cannot be read: its owner is told (once a day)."""
    return decision.action is Action.SKIP and decision.kept_for is KeptFor.UNREADABLE_SCHEDULE


def protection(instance: Instance, now: datetime, spot_request_type: str = "") -> str | None:
    """Why costguard must never stop this instance now, or None. (Auto Scaling membership is apart.)"""
    return protected(instance, now, spot_request_type)[0]


def protected(instance: Instance, now: datetime, spot_request_type: str = "") -> tuple[str | None, KeptFor | None]:
    """Why costguard must never stop this instance now (or None), and whether that is a kept-for its owner is
    told about (working hours it cannot read)."""
    kept = kept_by_people(instance.tags, now)
    if kept is not None:
        return kept, None
    schedule = instance.tags.get(tags.SCHEDULE)
    if schedule is not None:
        try:
            if parse_schedule(schedule).inside(now):
                return f"inside its working hours ({schedule})", None
        except ScheduleError as exc:
            return f"{UNREADABLE_SCHEDULE}: {exc}; it is kept", KeptFor.UNREADABLE_SCHEDULE
    return _cannot_stop(instance, spot_request_type), None


def _cannot_stop(instance: Instance, spot_request_type: str) -> str | None:
    if instance.root_device_type == "instance-store":
        return "instance-store root volume: it cannot be stopped"
    if instance.lifecycle == "spot" and spot_request_type != "persistent":
        return "one-time Spot instance: it cannot be stopped"
    for key, orchestrator in ORCHESTRATOR_TAGS.items():
        if key in instance.tags:
            return f"managed by {orchestrator}, which would replace it"
    return None


def decide(
    instance: Instance,
    judgement: Judgement,
    policy: IdlePolicy,
    now: datetime,
    *,
    spot_request_type: str = "",
    protected_from_scale_in: bool | None = None,
    gpu_telemetry: bool = True,
    shorter: Judgement | None = None,
    gpus_from_check: bool = False,
    unanswered: Judgement | None = None,
) -> Decision:
    """`shorter`: the judgement over the shorter window of certain idleness (since the warning, for a
    machine warned so), when the full window's is not idle; `gpus_from_check`: a machine without GPU
    metrics whose own check can be asked about its GPUs; `unanswered`: for a warned machine whose check
    answers, the judgement with the CPU points since its last answer set aside (no answer can say yet whether
    they were the system's services')."""
    iid = instance.instance_id
    warned_at = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    warned = warned_at is not None and warned_at >= instance.launch_time  # a restart resets the story
    has_warning_tags = any(k in instance.tags for k in tags.WARNING_TAGS)

    def clear_or(action: Action, reason: str, kept_for: KeptFor | None = None) -> Decision:
        if has_warning_tags:
            return Decision(iid, Action.CLEAR_WARNING, reason, judgement=judgement, kept_for=kept_for)
        return Decision(iid, action, reason, judgement=judgement, kept_for=kept_for)

    if not policy.is_accelerated(instance.instance_type):
        return Decision(iid, Action.SKIP, f"{instance.instance_type} is not an accelerator family")
    if instance.state != "running":
        return Decision(iid, Action.SKIP, f"{instance.state}, not running")
    blocked, kept_for = protected(instance, now, spot_request_type)
    blocked = blocked or _kept_while_busy(instance, judgement)
    if blocked:
        return clear_or(Action.SKIP, blocked, kept_for)

    if instance.auto_scaling_group:
        change = _scale_in_protection(instance, judgement, protected_from_scale_in)
        return change or clear_or(
            Action.NONE, f"member of Auto Scaling group {instance.auto_scaling_group}: never stopped, only protected"
        )

    running_for = now - instance.launch_time
    if running_for < timedelta(minutes=policy.window_minutes) and not _shorter_since_start(
        instance, running_for, shorter, policy
    ):
        minutes = int(running_for.total_seconds() // 60)
        # Run as long as the shorter window: watched (its check asked), for certain idleness to cut the wait.
        watched = early_warnings(instance, policy) and running_for >= timedelta(minutes=policy.certain_idle_minutes)
        why = f"running for {minutes} min, less than the {policy.window_minutes}-min window"
        return clear_or(Action.NONE if watched else Action.SKIP, why)

    early = False
    if judgement.verdict is not Verdict.IDLE:
        if warned and unanswered is not None and unanswered.verdict is Verdict.IDLE:
            awaiting = _awaiting_answer(instance, judgement, now)
            if awaiting is not None:
                return awaiting
        if shorter is None or shorter.verdict is not Verdict.IDLE or not early_warnings(instance, policy):
            return clear_or(Action.NONE, judgement.reason)
        judgement, early = shorter, True  # idle for the shorter window: if the machine's check agrees

    by_cpu = not gpu_telemetry and policy.stop_without_gpu_telemetry  # the account's word (its owner's: review.py)
    unseen = not (gpu_telemetry or by_cpu)  # only its own check sees its GPUs
    if unseen and not gpus_from_check:
        if warned:
            return Decision(iid, Action.NONE, NOT_STOPPED_UNSEEN, kept_for=KeptFor.GPUS_UNSEEN)
        return Decision(
            iid, Action.WARN, judgement.reason, will_stop=False, judgement=judgement, kept_for=KeptFor.GPUS_UNSEEN
        )
    decided = _warn_wait_or_stop(instance, judgement, policy, now, early=early, unseen=unseen)
    return replace(decided, cpu_only=True) if by_cpu else decided


NOT_STOPPED_UNSEEN = "warned; no GPU telemetry, so it is not stopped automatically"
AWAITING_ANSWER = "its check has not said yet whether that was the system's own services"


AWAITED_PAST_STOP = timedelta(minutes=20)  # a sweep past its stop time, at most: then its warning is withdrawn


def _awaiting_answer(instance: Instance, judgement: Judgement, now: datetime) -> Decision | None:
    """A warned machine at work only by CPU its check's answers cannot speak for yet (since the last of them): its
    warning stands and nothing is stopped until the next answer says whose that CPU was. The system's timers (apt,
    snapd) are a few minutes of one core: withdrawn at once, its warning was given again a sweep or two later.
    None once past its stop time by more than a sweep (a service busy right after every answer would keep a stop
    promised for a time long gone)."""
    stop_after = formatting.parse_time(instance.tags.get(tags.STOP_AFTER))
    if stop_after is not None and now >= stop_after + AWAITED_PAST_STOP:
        return None
    reason = f"{judgement.reason}: {AWAITING_ANSWER}"
    return Decision(instance.instance_id, Action.WAIT, reason, stop_after=stop_after, judgement=judgement)


def _warn_wait_or_stop(
    instance: Instance, judgement: Judgement, policy: IdlePolicy, now: datetime, *, early: bool, unseen: bool
) -> Decision:
    """An idle machine costguard may stop: warned (its grace from now), waiting out its grace, warned again
    (the data read does not cover its warning), or stopped. `early`: judged on certain idleness; `unseen`: its
    GPUs seen by its own check alone."""
    iid = instance.instance_id
    warned_at = formatting.parse_time(instance.tags.get(tags.IDLE_WARNED_AT))
    stop_after = formatting.parse_time(instance.tags.get(tags.STOP_AFTER))
    warned = warned_at is not None and warned_at >= instance.launch_time  # a restart resets the story
    if not warned or stop_after is None:
        return Decision(
            iid,
            Action.WARN,
            judgement.reason,
            stop_after=now + timedelta(minutes=policy.grace_minutes),
            judgement=judgement,
            told=warned,
            early=early,
            gpus_from_check=unseen,
        )
    if now < stop_after:
        return Decision(
            iid,
            Action.WAIT,
            judgement.reason,
            stop_after=stop_after,
            judgement=judgement,
            early=early,
            gpus_from_check=unseen,
        )
    if judgement.judged_from is None or warned_at is None or judgement.judged_from > warned_at:
        # The fresh data must cover the whole grace period, or a burst of work in it could be missed.
        # A warning older than the data read (sweeps failed for a day, notify-only) is given again.
        return Decision(
            iid,
            Action.WARN,
            f"still {judgement.reason}; the earlier warning is older than the data read",
            stop_after=now + timedelta(minutes=policy.grace_minutes),
            judgement=judgement,
            early=early,
            gpus_from_check=unseen,
        )
    return Decision(
        iid,
        Action.STOP,
        judgement.reason,
        stop_after=stop_after,
        hibernate=instance.hibernation_configured,
        judgement=judgement,
        early=early,
        gpus_from_check=unseen,
    )


def _shorter_since_start(
    instance: Instance, running_for: timedelta, shorter: Judgement | None, policy: IdlePolicy
) -> bool:
    """A machine (re)started less than a window ago is judged on certain idleness once it has run the shorter
    window with nothing alive on it (its check confirms): a start is not a new full window of idleness."""
    return (
        shorter is not None
        and shorter.verdict is Verdict.IDLE
        and running_for >= timedelta(minutes=policy.certain_idle_minutes)
        and early_warnings(instance, policy)
    )


def early_warnings(instance: Instance, policy: IdlePolicy) -> bool:
    """Whether certain idleness may shorten this machine's wait: on for the deployment, and not turned
    off by its owner."""
    shorter = 0 < policy.certain_idle_minutes < policy.window_minutes
    return shorter and instance.tags.get(tags.EARLY_WARNING, "").strip().lower() != tags.OFF


def _kept_while_busy(instance: Instance, judgement: Judgement) -> str | None:
    """Kept while it works: until it has been idle for a whole window that began after the keep."""
    if tags.KEEP_WHILE_BUSY not in instance.tags:
        return None
    since = formatting.parse_time(instance.tags[tags.KEEP_WHILE_BUSY])
    if since is None:
        return f"{tags.KEEP_WHILE_BUSY}={instance.tags[tags.KEEP_WHILE_BUSY]!r} is not a time I can read, so it is kept"
    if judgement.verdict is Verdict.IDLE and judgement.judged_from is not None and judgement.judged_from >= since:
        return None
    return f"kept while it works (since {formatting.format_time(since)}): {judgement.reason}"


def _scale_in_protection(instance: Instance, judgement: Judgement, protected: bool | None) -> Decision | None:
    """Busy members are protected from scale-in, idle ones released, so the group removes idle ones first."""
    group = instance.auto_scaling_group
    if judgement.verdict is Verdict.BUSY and protected is False:
        reason = f"busy member of {group}: {judgement.reason}"
        return Decision(instance.instance_id, Action.PROTECT, reason, judgement=judgement)
    if judgement.verdict is Verdict.IDLE and protected is True:
        reason = f"idle member of {group}: {judgement.reason}"
        return Decision(instance.instance_id, Action.UNPROTECT, reason, judgement=judgement)
    return None
