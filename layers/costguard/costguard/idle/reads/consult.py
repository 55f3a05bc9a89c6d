"""What the machines say, and what their past says, before anything is done: the activity check of the
sweep's warnings and stops and of the machines it watches (their answers kept in the check log), the
review of each warning and stop with it, then the recurring work learned for those about to be stopped."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from costguard.aws.cloudwatch.series import Dimensions
from costguard.core.records import Instance
from costguard.core.settings import IdlePolicy
from costguard.idle.reads.checks import ActivityChecker
from costguard.idle.reads.fortnights import Learner
from costguard.idle.reads.plan import Plan, log_answers
from costguard.idle.report import RegionReport
from costguard.idle.rules.activity import CheckState
from costguard.idle.rules.decision import Action, Decision
from costguard.idle.rules.evidence import Answer
from costguard.idle.rules.review import reviewed
from costguard.state.checklog import CheckLog


@dataclass
class Sorted:
    watched: list[Instance] = field(default_factory=list)  # asked for their check, for the answers alone
    answers: dict[str, tuple[Answer, ...]] = field(default_factory=dict)  # kept from earlier sweeps


def sort_out(
    plan: Plan,
    report: RegionReport,
    act: Callable[[Instance, Decision], None],
    to_check: list[tuple[Instance, Decision]],
    protection_changes: dict[tuple[str, bool], list[Instance]],
) -> Sorted:
    """Each planned decision to where it goes: acted on now; warnings and stops to the activity check,
    asked all at once after the last judgement; scale-in protection, grouped. Watched machines are
    asked too, for the answers alone."""
    out = Sorted()
    for planned in plan.decisions:
        instance, decision = planned.instance, planned.decision
        if not planned.gpu_telemetry:
            report.no_gpu_telemetry.append(instance.instance_id)
        if planned.answers:
            out.answers[instance.instance_id] = planned.answers
        if decision.action in (Action.PROTECT, Action.UNPROTECT):
            protect = decision.action is Action.PROTECT
            protection_changes[(instance.auto_scaling_group, protect)].append(instance)
        elif decision.action in (Action.WARN, Action.STOP):
            to_check.append((instance, decision))
        else:
            if planned.watch:
                out.watched.append(instance)
            act(instance, decision)
    return out


class Consultation:
    def __init__(
        self,
        *,
        checker: ActivityChecker | None,
        checklog: CheckLog | None,
        learner: Learner | None,
        policy: IdlePolicy,
    ) -> None:
        self.checker, self.learner, self.policy = checker, learner, policy
        self.checklog = checklog if checker is not None else None  # no check, no answers to keep

    def decide(
        self,
        to_check: Sequence[tuple[Instance, Decision]],
        sorted_out: Sorted,
        gpu_series: Mapping[str, Sequence[Dimensions]],
        report: RegionReport,
        now: datetime,
    ) -> list[tuple[Instance, Decision]]:
        """The warnings and stops as they stand once the machines answered and their past was read."""
        asked = [i for i, _ in to_check] + sorted_out.watched
        checked = self.checker.check(asked, now) if self.checker and asked else {}
        if self.checklog is not None:
            log_answers(self.checklog, checked, sorted_out.answers, now)
        no_agent = {i for i, c in checked.items() if c.state is CheckState.NO_AGENT}
        report.no_activity_check += [i.instance_id for i, _ in to_check if i.instance_id in no_agent]
        final = reviewed(to_check, checked, self.policy, now=now, answers=sorted_out.answers)
        return self.learner.adjust(final, gpu_series, now) if self.learner is not None else final
