"""Slack messages of the SageMaker sweep, its owner tagging and its part of the weekly digest. Pure: records
in, messages out. Each says what, why, what it costs an hour and a day, and how to keep it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from costguard.core import tags
from costguard.core.formatting import duration, usd
from costguard.core.records import Price
from costguard.core.sagemaker import IdleSetting, Kind, Resource
from costguard.sagemaker.rules.activity import Verdict
from costguard.sagemaker.rules.decision import Decision
from costguard.sagemaker.rules.figures import SageMakerWeek, endpoint_cost_since
from costguard.slack.blocks import (
    Block,
    Message,
    actions,
    bullet_list,
    context,
    fields_section,
    header,
    mrkdwn,
    section,
)
from costguard.slack.buttons import sagemaker_act_buttons, sagemaker_keep_buttons

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


def _subject(owner: str, resource: Resource) -> str:
    return f"{owner}, your {resource.label}" if owner else f"the {resource.label}, whose owner is unknown,"


def _keep_cli(resource: Resource, until: datetime) -> str:
    return (
        f"aws sagemaker add-tags --region {resource.region} --resource-arn {resource.arn} "
        f"--tags Key={tags.KEEP_UNTIL},Value={until:%Y-%m-%dT%H:%M:%SZ}"
    )


def _what_then(resource: Resource) -> str:
    if resource.kind is Kind.NOTEBOOK:
        return "Stopping keeps its ML storage volume: *Start it again* brings it back as it was."
    if resource.kind is Kind.ENDPOINT:
        return (
            f"Deleting keeps its endpoint configuration `{resource.config_name}` and its model: "
            "*Recreate* brings it back (at the same name and price)."
        )
    return "Deleting keeps the space's storage: reopening the app from Studio starts a new one (kernels restart)."


def warning(resource: Resource, decision: Decision, price: Price, owner: str, now: datetime) -> Message:
    """The warning: idle for how long, what it costs, when costguard acts (or that it will not), how to keep.
    A resource SageMaker gives nothing to judge by (a Studio app's health checks only) is not called idle."""
    why = decision.activity.reason if decision.activity else decision.reason
    unseen = decision.activity is not None and decision.activity.verdict is Verdict.UNSEEN
    adjective = "Long-running" if unseen else "Idle"
    kind = {Kind.NOTEBOOK: "notebook instance", Kind.ENDPOINT: "zombie endpoint", Kind.APP: "Studio app"}[resource.kind]
    if decision.will_act and decision.act_after is not None:
        at = decision.act_after
        minutes = int((at - now).total_seconds() // 60)
        title = f"Idle SageMaker {kind}: costguard will {VERB[resource.kind]} it at {at:%a %H:%M} UTC"
        when = f"*{VERB[resource.kind].title()}s at*\n{at:%a %d %b %H:%M} UTC (in {duration(minutes)})"
    else:
        title = f"{adjective} SageMaker {kind}"
        when = f"*{VERB[resource.kind].title()}s at*\nnever automatically: {decision.why_not or 'not allowed'}"
    said = "{0} runs, and costguard cannot see its work: {1}." if unseen else "{0} has done no work: {1}."
    blocks: list[Block] = [
        header(title),
        section(mrkdwn(said, _subject(owner, resource), why)),
        fields_section(
            [
                mrkdwn("*Type*\n{0} in {1}", resource.instance_type, resource.region),
                f"*Cost*\n{cost_text(resource, price)}",
                *([_since_line(resource, decision, price, now)] if resource.kind is Kind.ENDPOINT else []),
                when,
            ]
        ),
        section(
            "*To keep it*, press a button below, or tag it:\n"
            f"• `{tags.KEEP_UNTIL}=<time>` keeps it until then (ISO 8601, UTC)\n"
            f"• `{tags.EXEMPT}=<reason>` keeps it for good\n"
            + mrkdwn("```{0}```", _keep_cli(resource, now + timedelta(days=1)))
        ),
        context(_what_then(resource)),
        actions(
            f"costguard:{resource.key}"[:255],
            sagemaker_keep_buttons(resource.kind, resource.name, resource.region, resource.account),
        ),
    ]
    if price.source != "pricing-api":
        blocks.append(context("Cost is an approximate list price: the Pricing API had no exact answer."))
    text = f"{adjective} {resource.label} ({resource.instance_type}): {cost_text(resource, price)}"
    return Message(text, tuple(blocks))


def _since_line(resource: Resource, decision: Decision, price: Price, now: datetime) -> str:
    last = decision.activity.last_invoked if decision.activity else None
    cost, since = endpoint_cost_since(resource, last, hourly_cost(resource, price), now)
    what = f"since its last invocation ({last:%a %d %b})" if last else f"since {since:%a %d %b} (no invocation seen)"
    return f"*Cost {what}*\n{usd(cost)}"


def act_notice(resource: Resource, decision: Decision, price: Price, owner: str) -> Message:
    """Told before the stop or the deletion is made: what is done, why, and the button that undoes it."""
    verb = DONE[resource.kind]
    hourly = hourly_cost(resource, price)
    saving = f"${hourly:,.2f}/h" if hourly is not None else "its hourly cost"
    undo = sagemaker_act_buttons(resource.kind, resource.name, resource.region, resource.account, resource.config_name)
    blocks: list[Block] = [
        header(f"SageMaker {resource.label} {verb}"[:150]),
        section(
            mrkdwn("{0} was still idle after the warning, so costguard {1} it. ", _subject(owner, resource), verb)
            + _what_then(resource)
        ),
        fields_section(
            [
                mrkdwn("*Type*\n{0} in {1}", resource.instance_type, resource.region),
                f"*Saves*\n{saving}",
                mrkdwn("*Why*\n{0}", decision.activity.reason if decision.activity else decision.reason),
            ]
        ),
    ]
    if undo:
        blocks.append(actions(f"costguard:{resource.key}"[:255], undo))
    return Message(f"costguard {verb} idle {resource.label}", tuple(blocks))


def dry_run_notice(resource: Resource, decision: Decision, price: Price, owner: str) -> Message:
    plan = f"warn {owner or 'the alerts channel'}"
    if decision.will_act and decision.act_after is not None:
        plan += f" and {VERB[resource.kind]} it at {decision.act_after:%a %H:%M} UTC if still idle"
    return Message(
        f"[dry-run] would {plan.split(' and ', maxsplit=1)[0]} about idle {resource.label}",
        (
            section(
                mrkdwn(
                    "*[dry-run]* Would {0}: {1}, {2}.\n{3}",
                    plan,
                    resource.label,
                    cost_text(resource, price),
                    decision.reason,
                )
            ),
        ),
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
                    owner or "unknown",
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
        f"{len(findings)} Studio setting(s) let idle GPU apps run on",
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
        f"{count} SageMaker resource(s) have no owner",
        (
            header(f"{count} SageMaker resource(s) have no owner"),
            section(
                f"costguard could not tell who created these, so nobody can be warned about them. Tag each "
                f"with `{owner_tag_key}=<name or email>`."
            ),
            section(bullet_list(lines)),
        ),
    )


def digest_section(week: SageMakerWeek) -> list[Block]:
    """The weekly digest's SageMaker part: what runs on GPUs, what sat idle and cost what, what costguard
    stopped or deleted, the zombies left, and the hygiene (no activity reporting, no idle shutdown)."""
    if week.empty:
        return []
    counts = (
        f"*SageMaker on GPUs*: {week.notebooks} notebook instance(s), {week.apps} Studio app(s), "
        f"{week.endpoints} real-time endpoint(s) InService, {usd(week.daily_usd)}/day together."
    )
    idle = (
        f"Idle this week: *{week.idle_hours:,.0f} h* on notebook instances and Studio apps, *{week.zombie_days:,.0f} "
        f"endpoint-days* without an invocation: *{usd(week.idle_usd)}*."
    )
    did = (
        f"costguard warned {week.warned} time(s), stopped {week.stopped} notebook instance(s), deleted "
        f"{week.deleted} endpoint(s) or app(s); {week.kept} kept from Slack."
    )
    blocks: list[Block] = [section(counts + "\n" + idle + "\n" + did)]
    if week.zombies:
        lines = [
            mrkdwn("`{0}` ({1}): {2}/day; {3}", z.name, z.owner or "no owner", usd(z.daily_usd), z.reason)
            for z in week.zombies
        ]
        blocks.append(section(mrkdwn("*Zombie endpoints left*\n") + bullet_list(lines)))
    hygiene = []
    if week.unwatched:
        hygiene.append(
            mrkdwn(
                "{0} GPU notebook instance(s) report no kernel activity (never stopped on guesswork): {1}. Attach "
                "costguard's lifecycle configuration to have idle ones stopped.",
                len(week.unwatched),
                ", ".join(f"`{n}`" for n in week.unwatched[:5]),
            )
        )
    if week.idle_shutdown_off:
        hygiene.append(
            mrkdwn(
                "{0} Studio domain, profile or space setting(s) without idle shutdown: {1}",
                len(week.idle_shutdown_off),
                ", ".join(f"`{n}`" for n in week.idle_shutdown_off[:5]),
            )
        )
    if hygiene:
        blocks.append(section(mrkdwn("*SageMaker hygiene*\n") + bullet_list(hygiene)))
    if week.errors:
        blocks.append(context("SageMaker not available this week: " + "; ".join(week.errors)))
    return blocks
