"""Slack messages of the SageMaker sweep, its owner tagging and its part of the weekly digest. Pure: records
in, messages out. Each says what, why, what it costs an hour and a day, and how to keep it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from costguard.core import tags
from costguard.core.formatting import plural, usd
from costguard.core.records import Price
from costguard.core.sagemaker import IdleSetting, Kind, Resource
from costguard.sagemaker.rules.activity import Verdict
from costguard.sagemaker.rules.decision import Decision
from costguard.sagemaker.rules.figures import SageMakerWeek, endpoint_cost_since
from costguard.slack import live
from costguard.slack.blocks import (
    DAY,
    NOTHING,
    Block,
    Message,
    Mrkdwn,
    bullet_list,
    context,
    header,
    mrkdwn,
    on_day,
    person,
    section,
    times_in,
    when,
)
from costguard.slack.buttons import sagemaker_act_buttons, sagemaker_keep_buttons
from costguard.slack.live import Part, cost_a_day

VERB = {Kind.NOTEBOOK: "stop", Kind.ENDPOINT: "delete", Kind.APP: "delete"}
DONE = {Kind.NOTEBOOK: "stopped", Kind.ENDPOINT: "deleted", Kind.APP: "deleted"}


def hourly_cost(resource: Resource, price: Price) -> float | None:
    """What it costs an hour now: the price of its type times the instances billed."""
    return price.usd_per_hour * resource.instances if price.usd_per_hour is not None else None


def cost_text(resource: Resource, price: Price) -> str:
    hourly = hourly_cost(resource, price)
    if hourly is None:
        return "price unknown"
    many = f" × {resource.instances} instances" if resource.instances > 1 else ""
    approx = " (list price, approx.)" if price.source != "pricing-api" else ""
    return f"${hourly:,.2f}/h{many} · ${hourly * 24:,.0f}/day{approx}"


NOUN = {Kind.NOTEBOOK: "SageMaker notebook instance", Kind.ENDPOINT: "SageMaker endpoint", Kind.APP: "Studio app"}
TAGS = f"Or tag it `{tags.KEEP_UNTIL}` (a UTC time) or `{tags.EXEMPT}`."


def _what_then(resource: Resource) -> str:
    if resource.kind is Kind.NOTEBOOK:
        return "Stopping keeps its ML storage volume: *Start it again* brings it back as it was."
    if resource.kind is Kind.ENDPOINT:
        return (
            f"Deleting keeps its endpoint configuration `{resource.config_name}` and its model: "
            "*Recreate* brings it back (at the same name and price)."
        )
    return "Deleting keeps the space's storage: reopening the app from Studio starts a new one (kernels restart)."


def _daily(resource: Resource, price: Price) -> float | None:
    hourly = hourly_cost(resource, price)
    return hourly * 24 if hourly is not None else None


def _yours(who: Mrkdwn, resource: Resource) -> Mrkdwn:
    """ "<@U…>, your notebook instance research-nb", or "The notebook instance research-nb (owner unknown)"."""
    if who:
        return mrkdwn("{}, your {}", who, resource.label)
    return mrkdwn("The {} (owner unknown)", resource.label)


def warning(
    resource: Resource,
    decision: Decision,
    price: Price,
    who: Mrkdwn,
    now: datetime,
    *,
    whose: str = "your time",
    zone: str = "UTC",
) -> Part:
    """The warning: what it costs, idle for how long (or that it cannot be seen), when costguard acts (or that it
    will not), with the keeps. A resource SageMaker gives nothing to judge by (a Studio app's health checks
    only) is not called idle."""
    why = times_in(decision.activity.reason if decision.activity else decision.reason, now)
    unseen = decision.activity is not None and decision.activity.verdict is Verdict.UNSEEN
    said = " runs, and costguard cannot see its work: {}." if unseen else " has done no work: {}."
    sentence = _yours(who, resource) + mrkdwn(said, why)
    if resource.kind is Kind.ENDPOINT:
        sentence += Mrkdwn(" ") + _since(resource, decision, price, now, zone)
    if decision.will_act and decision.act_after is not None:
        status = mrkdwn("costguard will {} it *", VERB[resource.kind]) + when(decision.act_after, zone)
        status += Mrkdwn("* unless you keep it.")
    else:
        status = mrkdwn("costguard will not {} it: {}.", VERB[resource.kind], decision.why_not or "not allowed")
    cost = _daily(resource, price)
    said_more = [mrkdwn("{}.", cost_text(resource, price)), Mrkdwn(_what_then(resource)), Mrkdwn(TAGS)]
    if price.source != "pricing-api":
        said_more.append(Mrkdwn("Cost is an approximate list price: the Pricing API had no exact answer."))
    owner = "" if who.startswith("<@") else (f" · owner {who}" if who else " · owner unknown")
    return Part(
        key=resource.key,
        marker="",
        noun=NOUN[resource.kind],
        daily=cost,
        sentence=sentence,
        line=mrkdwn("*{}* · {}", cost_a_day(cost), resource.label) + Mrkdwn(owner),
        status=status,
        word="Long-running" if unseen else "",
        # Keeps only where costguard will act: a keep from nothing is a button that does nothing.
        buttons=tuple(sagemaker_keep_buttons(resource.kind, resource.name, resource.region, resource.account, whose))
        if decision.will_act and decision.act_after is not None
        else (),
        detail=Mrkdwn(" ".join(said_more)),
        settled_sentence=_yours(who, resource) + Mrkdwn("."),  # once kept or started: no idleness told
    )


def _since(resource: Resource, decision: Decision, price: Price, now: datetime, zone: str) -> Mrkdwn:
    """What an endpoint cost since its last invocation (or since it was seen, with none)."""
    last = decision.activity.last_invoked if decision.activity else None
    cost, since = endpoint_cost_since(resource, last, hourly_cost(resource, price), now)
    if last is not None:  # the UTC day CloudWatch counted it in: that day, wherever its reader is
        shown = on_day(last.astimezone(UTC).date())
        return Mrkdwn("Cost since its last invocation (") + shown + mrkdwn("): *{}*.", usd(cost))
    return Mrkdwn("Cost since ") + when(since, zone, style=DAY) + mrkdwn(" (no invocation seen): *{}*.", usd(cost))


def acted(resource: Resource, now: datetime, zone: str) -> live.Change:
    """The change a stop or a deletion makes to its warning: done by costguard, and what undoes it."""
    undo = sagemaker_act_buttons(resource.kind, resource.name, resource.region, resource.account, resource.config_name)
    word = DONE[resource.kind].title()
    return live.stopped(now, NOTHING, zone, word=word, note=Mrkdwn(_what_then(resource)), buttons=undo)


def act_notice(  # noqa: PLR0917 (a stop or a deletion is all of these)
    resource: Resource, decision: Decision, price: Price, who: Mrkdwn, now: datetime, zone: str = "UTC"
) -> Part:
    """Told before the stop or the deletion is made: what is done, why, and the button that undoes it."""
    why = times_in(decision.activity.reason if decision.activity else decision.reason, now)
    cost = _daily(resource, price)
    base = Part(
        key=resource.key,
        marker="",
        noun=NOUN[resource.kind],
        daily=cost,
        sentence=_yours(who, resource) + mrkdwn(" was still idle after the warning: {}.", why),
        line=mrkdwn("*{}* · {}", cost_a_day(cost), resource.label),
        status="",
        settled_sentence=_yours(who, resource) + Mrkdwn("."),
    )
    return live.settled(acted(resource, now, zone), base)


def told_above(part: Part) -> Part:
    """The stop or deletion told as a reply under its warning, which shows it (and its undo) once done: a reply is
    never changed, so it points to the warning, which follows what comes next."""
    return part.now(Mrkdwn(part.status) + Mrkdwn(" The warning above shows what follows."), part.phase, part.word)


def dry_run_notice(resource: Resource, decision: Decision, price: Price, owner: str, zone: str = "UTC") -> Message:
    who = person(owner) or Mrkdwn("the alerts channel")
    plan = mrkdwn("warn {}", who)
    if decision.will_act and decision.act_after is not None:
        plan += mrkdwn(" and {} it ", VERB[resource.kind]) + when(decision.act_after, zone) + Mrkdwn(" if still idle")
    cost = cost_a_day(_daily(resource, price))
    return Message(
        mrkdwn("[dry-run] would warn {} about idle {}", who, resource.label),
        (section(mrkdwn("*[dry-run]* *{}* · would {}: {}.", cost, plan, resource.label)),),
    )


def act_failed_notice(resource: Resource, error: str, owner: str) -> Message:
    return Message(
        f"Could not {VERB[resource.kind]} idle {resource.label}: {error}",
        (
            section(
                mrkdwn(
                    ":warning: costguard could not {0} idle {1} ({2}, owner {3}): `{4}`. It keeps running and "
                    "costing; someone should look.",
                    VERB[resource.kind],
                    resource.label,
                    resource.instance_type,
                    person(owner) or "unknown",
                    error,
                )
            ),
        ),
    )


def idle_settings_report(findings: Sequence[IdleSetting], window_minutes: int) -> Message:
    """Where Studio's idle shutdown is off, or longer than the team's window, with how to turn it on."""
    lines = [
        mrkdwn(
            "{0} `{1}` (domain {2}), {3}: {4}",
            s.scope,
            s.name,
            s.domain_id,
            s.app_type,
            "idle shutdown off" if not s.enabled else f"shuts down after {s.timeout_minutes} min idle",
        )
        for s in findings
    ]
    how = (
        "aws sagemaker update-domain --domain-id <id> --default-user-settings "
        '\'{"JupyterLabAppSettings":{"AppLifecycleManagement":{"IdleSettings":'
        f'{{"LifecycleManagement":"ENABLED","IdleTimeoutInMinutes":{window_minutes}}}}}}}}}\''
    )
    return Message(
        # A setting is a domain's (for its users or its spaces), a profile's or a space's, whatever app types it
        # covers: counted as the weekly digest counts it, a line an app type below.
        f"{plural(len({(s.scope, s.name) for s in findings}), 'Studio setting')} let idle GPU apps run on",
        (
            header("Studio apps without idle shutdown"),
            section(
                f"SageMaker Studio shuts a JupyterLab or Code Editor app down by itself after it sits idle, when "
                f"its idle shutdown is on. These are off, or longer than the team's {window_minutes}-min window:"
            ),
            section(bullet_list(lines)),
            section(
                mrkdwn(
                    "*To turn it on* for a domain's users (likewise `CodeEditorAppSettings`, and "
                    "`--default-space-settings` for spaces):\n```{0}```",
                    how,
                )
            ),
            context("KernelGateway (Studio Classic) apps have no idle shutdown setting: costguard warns about them."),
        ),
    )


def unattributed(resources: Sequence[tuple[str, str, str]], owner_tag_key: str) -> Message:
    """(key, region, why) of SageMaker resources costguard could not give an owner."""
    lines = [mrkdwn("`{0}` in {1}: {2}", key, region, why) for key, region, why in resources]
    count = len(lines)
    return Message(
        f"{plural(count, 'SageMaker resource')} {'has' if count == 1 else 'have'} no owner",
        (
            header(f"{plural(count, 'SageMaker resource')} {'has' if count == 1 else 'have'} no owner"),
            section(
                f"costguard could not tell who created these, so nobody can be warned about them. Tag each "
                f"with `{owner_tag_key}=<name or email>`."
            ),
            section(bullet_list(lines)),
        ),
    )


def digest_section(week: SageMakerWeek, now: datetime) -> list[Block]:
    """The weekly digest's SageMaker part: what runs on GPUs, what sat idle and cost what, what costguard
    stopped or deleted, the zombies left (the days in their reasons, each reader's: near `now`), and the
    hygiene (no activity reporting, no idle shutdown)."""
    if week.empty:
        return []
    running = [
        plural(n, noun)
        for n, noun in (
            (week.notebooks, "notebook instance"),
            (week.apps, "Studio app"),
            (week.endpoints, "real-time endpoint"),
        )
        if n
    ]
    alone = week.notebooks + week.apps + week.endpoints == 1
    together = "" if alone else " together"
    counts = f"*SageMaker on GPUs*: {_listed(running) or 'nothing running'}, {usd(week.daily_usd)}/day{together}."
    wasted = [
        text
        for n, text in (
            (round(week.idle_hours), f"*{week.idle_hours:,.0f} h* on notebook instances and Studio apps"),
            (round(week.zombie_days), f"*{week.zombie_days:,.0f} endpoint-days* without an invocation"),
        )
        if n
    ]
    idle = f"Idle this week: {_listed(wasted)}: *{usd(week.idle_usd)}*." if wasted else "Nothing sat idle this week."
    done = [
        text
        for n, text in (
            (week.warned, f"warned {plural(week.warned, 'time')}"),
            (week.stopped, f"stopped {plural(week.stopped, 'notebook instance')}"),
            (week.deleted, f"deleted {plural(week.deleted, 'endpoint or app', 'endpoints or apps')}"),
        )
        if n
    ]
    did = [f"costguard {_listed(done)}." if done else ""]
    if week.kept:
        did.append(f"{plural(week.kept, 'resource')} kept from Slack.")
    said = " ".join(d for d in did if d)
    blocks: list[Block] = [section(counts + "\n" + idle + ("\n" + said if said else ""))]
    if week.zombies:
        # What one costs a day, where the day's total above is not already theirs alone (each number once).
        lines = [
            mrkdwn("`{0}` ({1}): ", z.name, z.owner or "no owner")
            + ("" if alone else f"{usd(z.daily_usd)}/day; ")
            + times_in(z.reason, now)
            for z in week.zombies
        ]
        blocks.append(section(mrkdwn("*Zombie endpoints left*\n") + bullet_list(lines)))
    hygiene = []
    if week.unwatched:
        hygiene.append(
            mrkdwn(
                "{0} no kernel activity (never stopped on guesswork): {1}. Attach "
                "costguard's lifecycle configuration to have idle ones stopped.",
                plural(len(week.unwatched), "GPU notebook instance")
                + (" reports" if len(week.unwatched) == 1 else " report"),
                ", ".join(f"`{n}`" for n in week.unwatched[:5]),
            )
        )
    if week.idle_shutdown_off:
        hygiene.append(
            mrkdwn(
                "{0} without idle shutdown: {1}",
                plural(len(week.idle_shutdown_off), "Studio domain, profile or space setting"),
                ", ".join(f"`{n}`" for n in week.idle_shutdown_off[:5]),
            )
        )
    if hygiene:
        blocks.append(section(mrkdwn("*SageMaker hygiene*\n") + bullet_list(hygiene)))
    if week.errors:
        blocks.append(context("SageMaker not available this week: " + "; ".join(week.errors)))
    return blocks


def _listed(parts: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)
