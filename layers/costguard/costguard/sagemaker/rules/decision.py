"""The SageMaker sweep's decision for one resource. Pure: the resource, what it did, the policy and `now` in;
a decision with its reason out.

Never acted on: resources exempt or kept; not on an accelerated ml.* type; not InService; serverless
endpoints and variants that scale to zero (they are not zombies: they cost nothing idle); asynchronous
endpoints and endpoints of inference components (their calls are counted elsewhere than Invocations);
resources that became what they are less than a window ago. An act (a notebook instance stopped, an endpoint
or a Studio app deleted) needs a delivered warning (its tags), the grace period passed, a fresh judgement
covering the window and everything since the warning, the `enforce` mode, and for deletions their switch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from costguard.core import formatting, tags
from costguard.core.keeping import kept_by_people
from costguard.core.sagemaker import Kind, Resource
from costguard.core.settings import Mode, SageMakerPolicy
from costguard.sagemaker.rules.activity import Activity, Verdict


class Action(StrEnum):
    NONE = "none"
    SKIP = "skip"
    WARN = "warn"
    WAIT = "wait"
    ACT = "act"  # stop the notebook instance, delete the endpoint or the app
    CLEAR_WARNING = "clear-warning"


@dataclass(frozen=True)
class Decision:
    key: str
    action: Action
    reason: str
    act_after: datetime | None = None
    will_act: bool = True  # False: a warning about something costguard will not stop or delete by itself
    activity: Activity | None = None
    why_not: str = ""  # with will_act False: why costguard will not act on it by itself


def window(resource: Resource, policy: SageMakerPolicy) -> timedelta:
    if resource.kind is Kind.NOTEBOOK:
        return timedelta(minutes=policy.notebook_window_minutes)
    if resource.kind is Kind.ENDPOINT:
        return timedelta(days=policy.endpoint_idle_days)
    return timedelta(hours=policy.studio_app_max_hours)


def grace(resource: Resource, policy: SageMakerPolicy) -> timedelta:
    if resource.kind is Kind.ENDPOINT:
        return timedelta(hours=policy.endpoint_grace_hours)
    return timedelta(minutes=policy.grace_minutes)


def judged_from(resource: Resource, policy: SageMakerPolicy, now: datetime) -> datetime:
    """The window ending now, or from the warning if that is earlier: the data must cover the grace period. A
    warning older than the window and the grace together (the resource was exempt for a while, the sweeps
    failed for a day) is stale: the data read is the window's, later than it, and the decision warns again
    rather than acting on a warning its owner read long ago (as the EC2 sweep does)."""
    start = now - window(resource, policy)
    warned = formatting.parse_time(resource.tags.get(tags.IDLE_WARNED_AT))
    if warned is None or warned < resource.since or warned < start - grace(resource, policy):
        return start
    return min(start, warned)


def may_act(resource: Resource, policy: SageMakerPolicy, mode: Mode) -> tuple[bool, str]:
    """Whether costguard will stop or delete it after the grace period, and if not, why not."""
    if resource.kind is Kind.ENDPOINT and not policy.endpoints_delete:
        return False, "endpoint deletion is off (EndpointsDelete)"
    if resource.kind is Kind.APP and not policy.studio_apps_delete:
        return False, "Studio app deletion is off (StudioAppsDelete)"
    if mode is not Mode.ENFORCE:
        return False, f"costguard is in {mode.value} mode"
    return True, ""


def protection(resource: Resource, now: datetime) -> str | None:
    """Why costguard must never act on this resource now, or None."""
    return kept_by_people(resource.tags, now) or unjudged(resource)


def unjudged(resource: Resource) -> str | None:
    """Why an endpoint is never a zombie whatever its Invocations say, or None: what costs nothing idle, and
    what SageMaker counts elsewhere than Invocations (the sweep and the digest alike)."""
    if resource.kind is not Kind.ENDPOINT:
        return None
    if resource.asynchronous:
        # "Any metric not listed below is not published if the endpoint is enabled for asynchronous
        # inference. Such metrics include ... Invocations" (SageMaker's asynchronous inference monitoring).
        return (
            "asynchronous endpoint: SageMaker publishes no Invocations for it (InvocationsProcessed "
            "instead), which costguard does not read yet, so it is not judged"
        )
    if any(v.inference_components for v in resource.variants):
        return (
            "hosts inference components: its calls name a component, whose invocations costguard does "
            "not read yet, so it is not judged"
        )
    billed = [v for v in resource.variants if not v.serverless and v.instance_count > 0]
    if not billed:
        return "serverless or scaled to zero: idle, it costs nothing"
    if any(v.min_instances == 0 for v in resource.variants):
        return "a variant scales to zero instances: idle, it costs nothing"
    return None


def decide(
    resource: Resource, activity: Activity, policy: SageMakerPolicy, now: datetime, *, mode: Mode = Mode.ENFORCE
) -> Decision:
    key = resource.key
    warned_at = formatting.parse_time(resource.tags.get(tags.IDLE_WARNED_AT))
    act_after = formatting.parse_time(resource.tags.get(tags.STOP_AFTER))
    warned = warned_at is not None and warned_at >= resource.since  # restarted since: a new story
    has_warning = any(k in resource.tags for k in tags.WARNING_TAGS)

    def clear_or(action: Action, reason: str) -> Decision:
        return Decision(key, Action.CLEAR_WARNING if has_warning else action, reason, activity=activity)

    if not policy.is_accelerated(resource.instance_type):
        return Decision(key, Action.SKIP, f"{resource.instance_type or 'no instance type'} is not an accelerated type")
    if resource.status != "InService":
        return Decision(key, Action.SKIP, f"{resource.status}, not InService")
    blocked = protection(resource, now)
    if blocked and tags.EXEMPT in resource.tags:
        # IAM lets costguard write no tag on an exempt resource: an old warning stays there, inert (a stop or a
        # deletion is refused on it too), and stale by the time the exemption is lifted (sweep.judged_from).
        return Decision(key, Action.SKIP, blocked)
    if blocked:
        return clear_or(Action.SKIP, blocked)
    span = window(resource, policy)
    if now - resource.since < span:
        hours = (now - resource.since).total_seconds() / 3600
        return clear_or(
            Action.SKIP, f"InService for {hours:.1f} h, less than its {span.total_seconds() / 3600:g}-h window"
        )
    allowed, why_not = may_act(resource, policy, mode)
    if activity.verdict is Verdict.UNSEEN:
        # Running on a GPU with nothing to judge it by: its owner is told once, and nothing is deleted on it.
        allowed, why_not = False, "SageMaker does not report whether anyone works in it, so costguard cannot tell"
    elif not activity.idle:
        return clear_or(Action.NONE, activity.reason)
    if not allowed:
        if warned:
            return Decision(key, Action.NONE, f"warned; {why_not}", activity=activity)
        return Decision(key, Action.WARN, activity.reason, will_act=False, activity=activity, why_not=why_not)
    if not warned or act_after is None:
        return Decision(key, Action.WARN, activity.reason, act_after=now + grace(resource, policy), activity=activity)
    if now < act_after:
        return Decision(key, Action.WAIT, activity.reason, act_after=act_after, activity=activity)
    if activity.judged_from is None or warned_at is None or activity.judged_from > warned_at:
        # The data read must cover the whole grace period, or work in it could be missed.
        return Decision(
            key,
            Action.WARN,
            f"still {activity.reason}; the earlier warning is older than the data read",
            act_after=now + grace(resource, policy),
            activity=activity,
        )
    return Decision(key, Action.ACT, activity.reason, act_after=act_after, activity=activity)
