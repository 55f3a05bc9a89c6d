"""A keep that ends: an exemption its owner added right after costguard's stop interrupted the machine's work,
offered back the next morning as "Keep it for its runs"; and a machine its owner's keep-alive hook holds while it
idles, offered the same in place of the hook. Pure: the machine's tags, its runs as the rules say them, the
team's clock and `now` in.

An owner whose nightly job found its box stopped starts it again and tags it `costguard:exempt`: the box then
idles between its runs for good. Once costguard knows those runs (a scheduled job, recurring work learned, its
own night work), one click replaces the exemption with a keep for its runs: held for each run, started before
it, stopped between. Asked on a weekday morning, and never about a machine whose runs costguard does not know
(nothing would hold it for them). An offer left without an answer (neither button: its owner did not see it, or
had no time for it that morning) is asked again on the next weekday mornings within ASKED_FOR, at most once a
morning; its owner's "No" stands for good (`costguard:keep-for-runs=off`, written by that click), as their "Yes".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from costguard.core import formatting, tags
from costguard.core.records import Instance
from costguard.idle.rules.activity import HOOK_SAYS
from costguard.idle.rules.decision import Action, Decision, KeptFor

RIGHT_AFTER = timedelta(days=2)  # started again by its owner this soon after costguard's stop: its answer to it
MORNING = time(9, 0)  # the offer's time, on the team's clock
MORNING_LOOK = timedelta(minutes=30)  # the sweeps of a morning that look (one or two): its runs read once a day
ASKED_FOR = timedelta(days=7)  # mornings on which the offer may still be made: its runs unknown, or no answer
FROM_SLACK = "stopped from Slack"  # a person's own stop (Stop now) interrupted nothing of costguard's doing


@dataclass(frozen=True)
class KeepOffer:
    """An exemption offered back as a keep for the machine's runs."""

    instance_id: str
    stopped_at: datetime  # costguard's stop that its owner answered with the exemption
    restarted_at: datetime  # when its owner started it again
    runs: str  # its runs, as the rules say them after "it": "runs `nightly.sh` at 22:00 UTC (its crontab)"

    asked_on: str = ""  # the morning it is asked on (YYYY-MM-DD, the team's clock)

    @property
    def key(self) -> str:
        """Once a morning for each such stop (an answer, "Yes" or "No", ends the asking: its tag)."""
        return f"keep-offer:{self.instance_id}:{formatting.format_time(self.stopped_at)}:{self.asked_on}"


def exempt_after_interruption(instance: Instance) -> datetime | None:
    """When costguard stopped the machine, if its owner answered that stop by starting it again within RIGHT_AFTER
    and exempting it (`costguard:exempt`), and has not answered the offer yet (`costguard:keep-for-runs` with any
    value: `on`, kept for its runs already; `off`, their "No"); else None."""
    if tags.EXEMPT not in instance.tags or tags.KEEP_FOR_RUNS in instance.tags:
        return None
    stopped = formatting.parse_time(instance.tags.get(tags.STOPPED_AT))
    if stopped is None or instance.tags.get(tags.STOP_REASON, "").startswith(FROM_SLACK):
        return None
    return stopped if stopped < instance.launch_time <= stopped + RIGHT_AFTER else None


def next_morning(after: datetime, zone: str) -> datetime:
    """09:00 (the team's clock) of the first weekday after the day of `after`."""
    local = after.astimezone(ZoneInfo(zone))
    day = local.date() + timedelta(days=1)
    while day.weekday() >= 5:
        day += timedelta(days=1)
    return datetime.combine(day, MORNING, tzinfo=ZoneInfo(zone)).astimezone(after.tzinfo)


def looks_now(instance: Instance, now: datetime, zone: str) -> bool:
    """Whether this sweep looks for an offer to make about the machine: exempted right after costguard's stop,
    a weekday morning after its owner started it again (the first sweeps of it), within ASKED_FOR."""
    if exempt_after_interruption(instance) is None:
        return False
    first = next_morning(instance.launch_time, zone)
    if not first <= now < first + ASKED_FOR:
        return False
    local = now.astimezone(ZoneInfo(zone))
    morning = datetime.combine(local.date(), MORNING, tzinfo=ZoneInfo(zone))
    return local.weekday() < 5 and morning <= local < morning + MORNING_LOOK


def keep_offer(instance: Instance, runs: str, now: datetime, zone: str) -> KeepOffer | None:
    """The offer to make now about this machine, `runs` its known runs ("": none known, and no offer)."""
    stopped = exempt_after_interruption(instance)
    if stopped is None or not runs.strip() or not looks_now(instance, now, zone):
        return None
    day = now.astimezone(ZoneInfo(zone)).date().isoformat()
    return KeepOffer(instance.instance_id, stopped, instance.launch_time, runs, asked_on=day)


# A keep-alive hook that says keep while nothing else on the machine is at work holds it idle: between its runs,
# a nightly box's hook ("kept for its 01:00 run") keeps it up all day. Its owner is asked, during the team's
# weekday, once a day, whether costguard should keep it for its runs instead: held for each run, started before
# each, stopped between them, its hook no longer asked (`costguard:keep-for-runs=ignore-hook`). Their "No"
# (`costguard:keep-for-runs=off`) ends the asking, as their "Yes" does; an offer left without an answer is asked
# again on the weekdays of a week from the first (and for a week each month after). Never about a machine whose
# runs costguard does not know.
HOOK_DAY = (time(9, 0), time(18, 0))  # the team's weekday hours in which the hook's offer is made
HOOK_ASKED_AGAIN = timedelta(days=30)  # unanswered a week: asked again this long after its first asking


def still_asking(first: datetime | None, now: datetime) -> bool:
    """Whether an unanswered hook's offer, first made at `first` (None: not known, not asked), is made again now:
    on the weekdays of ASKED_FOR from the first (then a week again each HOOK_ASKED_AGAIN or so: its claim's life,
    ended by DynamoDB's TTL sweep, which may lag by days)."""
    return first is not None and first <= now < first + ASKED_FOR


@dataclass(frozen=True)
class HookOffer:
    """A keep-alive hook that holds an idle machine, offered to be replaced by a keep for its runs."""

    instance_id: str
    hook: str  # the line the hook said keep with, as the check reported it ("": none)
    idle_since: datetime | None  # idle but for the hook since then, by its metrics (None: not known)
    runs: str  # its runs, as the rules say them after "it"
    asked_on: str  # the day it is asked on (YYYY-MM-DD, the team's clock)

    @property
    def key(self) -> str:
        """Once a day (an answer, "Yes" or "No", ends the asking: its tag)."""
        return f"hook-offer:{self.instance_id}:{self.asked_on}"


def hook_offer_due(instance: Instance, decision: Decision, now: datetime, zone: str) -> bool:
    """Whether the hook's offer is made about this machine now: held idle by its hook alone where costguard would
    otherwise warn it for a stop, not exempt, without `costguard:keep-for-runs` (any value: kept for its runs
    already, or its owner's answer to an offer), in the team's weekday hours."""
    if decision.kept_for is not KeptFor.ITS_HOOK or not decision.will_stop:  # a machine costguard would not stop
        return False
    if tags.EXEMPT in instance.tags or tags.KEEP_FOR_RUNS in instance.tags:
        return False
    local = now.astimezone(ZoneInfo(zone))
    return local.weekday() < 5 and HOOK_DAY[0] <= local.time() < HOOK_DAY[1]


def hook_offer(instance: Instance, decision: Decision, runs: str, now: datetime, zone: str) -> HookOffer | None:
    """The offer to make now about this machine's hook, `runs` its known runs ("": none known, and no offer)."""
    if not runs.strip() or not hook_offer_due(instance, decision, now, zone):
        return None
    since = decision.judgement.idle_since if decision.judgement is not None else None
    day = now.astimezone(ZoneInfo(zone)).date().isoformat()
    said = decision.activity.removeprefix(HOOK_SAYS).removeprefix(":").strip()
    return HookOffer(instance.instance_id, said, since, runs, asked_on=day)


# A machine costguard cannot look inside (no SSM agent answers its activity check) is held where it cannot see:
# warned but never stopped without GPU metrics, and held through each weekday night it has not watched yet, in case
# work of its own begins there by waiting. Its owner knows what runs on it: asked during the team's weekday, once a
# day, whether nothing runs on it unless a person starts it (`costguard:unseen-work=none`: then stopped when idle
# like the others, judged by its CPU where it sends no GPU metrics, outside its owner's working day). Their "No"
# (`costguard:unseen-work=maybe`) ends the asking, as their "Yes" does; unanswered, it is asked again on the
# weekdays of a week from the first (and for a week each month after), as the hook's offer is.


@dataclass(frozen=True)
class UnseenOffer:
    """A machine held because costguard cannot see into it, offered its owner's word in place of the hold."""

    instance_id: str
    no_gpu_metrics: bool  # it sends no GPU metrics: warned, never stopped (else: held through unwatched nights)
    idle_since: datetime | None  # idle by its metrics since then (None: not known)
    asked_on: str  # the day it is asked on (YYYY-MM-DD, the team's clock)

    @property
    def key(self) -> str:
        """Once a day (an answer, "Yes" or "No", ends the asking: its tag)."""
        return f"unseen-offer:{self.instance_id}:{self.asked_on}"


def unseen_offer(instance: Instance, decision: Decision, now: datetime, zone: str) -> UnseenOffer | None:
    """The offer to make now about a machine held only because costguard cannot look inside it: its check cannot
    answer, and it idles where costguard would stop it but for what it cannot see (no GPU metrics, or a weekday
    night not watched yet); not exempt, without `costguard:unseen-work` (any value: its owner's answer), in the
    team's weekday hours. None otherwise, and where a yes would change nothing now: a machine being stopped (it is
    asked on a later sweep), or one the bill or scarce capacity keeps running."""
    held = decision.kept_for is KeptFor.GPUS_UNSEEN or (decision.unwatched and decision.kept_for is None)
    if not decision.blind or not held or decision.scarce or decision.action is Action.STOP:
        return None
    if tags.EXEMPT in instance.tags or tags.UNSEEN_WORK in instance.tags:
        return None
    local = now.astimezone(ZoneInfo(zone))
    if local.weekday() >= 5 or not HOOK_DAY[0] <= local.time() < HOOK_DAY[1]:
        return None
    since = decision.judgement.idle_since if decision.judgement is not None else None
    no_gpu_metrics = decision.kept_for is KeptFor.GPUS_UNSEEN
    return UnseenOffer(instance.instance_id, no_gpu_metrics, since, asked_on=local.date().isoformat())
