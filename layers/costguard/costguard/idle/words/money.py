"""What a stop is worth, in the idle stopper's messages: the saving on the bill and why, and the notice
about a machine that idles on capacity paid whether it runs or not. Pure."""

from __future__ import annotations

from costguard.core.bill import OffWorth
from costguard.core.money import Marginal
from costguard.core.records import Instance
from costguard.slack.blocks import Message, Mrkdwn, actions, context, header, mrkdwn, section, when
from costguard.slack.buttons import stop_anyway_buttons


def saving_line(marginal: Marginal, worth: OffWorth | None = None) -> str:
    """ "Saves $21.96/h on the bill (on demand: 5 p4d run, 3 Reserved Instances)"; with what the stop saves over
    the hours it keeps the machine off: "Saves about $130 by Tue 09:00 UTC on the bill: the Savings Plan spills
    from 08:00 UTC ($0.00/h now: covered: ...)"."""
    if worth is not None and worth.usd and marginal.usd_per_hour is not None:
        text = worth.text()
        caveat = f"; {marginal.caveat}" if marginal.caveat else ""
        return f"{text[:1].upper()}{text[1:]} ({marginal.text()} now: {marginal.why}{caveat})"
    if marginal.usd_per_hour is None:
        return "Saving unknown: no price could be had" + (f" ({marginal.caveat})" if marginal.caveat else "")
    list_price = (
        f"; ${marginal.on_demand:,.2f}/h on demand"
        if marginal.on_demand and abs(marginal.on_demand - marginal.usd_per_hour) > 0.005
        else ""
    )
    caveat = f"; {marginal.caveat}" if marginal.caveat else ""
    return f"Saves ${marginal.usd_per_hour:,.2f}/h on the bill ({marginal.why}{list_price}{caveat})"


def prepaid_idle_notice(
    instance: Instance,
    marginal: Marginal,
    who: Mrkdwn,
    idle_for: str,
    *,
    account: str = "",
    zone: str = "UTC",
    start_at: str = "",
) -> Message:
    """Once a day, to the owner and the alerts channel: a machine idles on capacity paid whether it runs or
    not, so costguard leaves it running; a person may still stop it to free the slot (`start_at`: the start
    promised for its run, which that stop keeps)."""
    iid, kind = instance.instance_id, instance.instance_type
    hold = marginal.hold
    where = hold.label if hold is not None else marginal.basis.value
    until = (
        Mrkdwn(" until ") + when(marginal.until, zone)
        if marginal.until is not None
        else Mrkdwn(" until it is cancelled" if hold is not None and not hold.block else "")
    )
    paid = "prepaid" if marginal.basis.value == "Capacity Block" else "billed whether it runs or not"
    idle_hour = (
        f"An idle hour costs about ${marginal.on_demand:,.2f} of capacity nobody uses"
        if marginal.on_demand
        else "Its idle hours are paid for and unused"
    )
    whose = mrkdwn("{}'s", who) if who else Mrkdwn("An unowned")
    return Message(
        f"{kind} {iid} idles on {where}: a stop saves nothing, so it keeps running",
        (
            header(f"Idle on prepaid capacity: {kind}"),
            section(
                mrkdwn(
                    "{} `{}` ({}) has done no work for {}. It runs in {} ({}{}), so stopping it saves nothing "
                    "on the bill, and costguard leaves it running.",
                    whose,
                    iid,
                    kind,
                    idle_for,
                    where,
                    paid,
                    until,
                )
            ),
            context(
                mrkdwn(
                    "{}. Stop it anyway to free the slot for someone else's work; costguard says this once a day.",
                    idle_hour,
                )
            ),
            actions(f"cg-prepaid-{iid}"[:255], stop_anyway_buttons(iid, instance.region, account, start_at=start_at)),
        ),
    )
