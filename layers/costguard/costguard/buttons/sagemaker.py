"""What a click on a SageMaker message does: keep a notebook instance, endpoint or Studio app (its
`costguard:keep-until` tag), start a stopped notebook instance again, or recreate a deleted endpoint from its
kept configuration. Who may act, once-only and the answer are the EC2 clicks' own (ClickWorker)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from botocore.exceptions import ClientError

from costguard.aws.clients import error_code
from costguard.aws.sagemaker import SageMaker
from costguard.buttons import words
from costguard.buttons.rules import keep_until
from costguard.buttons.worker import ClickWorker, Reply, click_time
from costguard.core import formatting, tags
from costguard.core.observability import logger
from costguard.core.sagemaker import Kind, Resource
from costguard.core.settings import Mode
from costguard.slack.blocks import mrkdwn
from costguard.slack.buttons import KEEPS, Button, sagemaker_act_buttons
from costguard.slack.interactions import Click
from costguard.state.claims import ClaimHeld, ClaimState
from costguard.state.entries import Entry, EntryKind


@dataclass
class SageMakerClicks:
    sagemaker_for: Callable[[str], SageMaker]
    accelerated: Callable[[str], bool]  # an ml.* type of the accelerator families costguard governs

    def __call__(self, worker: ClickWorker, click: Click, now: datetime) -> Reply:
        api = self.sagemaker_for(click.region)
        kind = Kind(click.kind)
        if click.button is Button.RECREATE:
            return self._recreate(worker, api, click, now)
        found = api.resource(kind, click.instance_id)
        if found is None or not self.accelerated(found.instance_type):
            text = f"The {kind.value} `{click.instance_id}` is gone, or not on a GPU type costguard governs."
            worker.show(
                click, click.key, words.gone(f"the {kind.value} is gone, or not on a GPU type costguard governs")
            )
            return worker._tell(click, Reply("gone", text))
        owner = found.owner(worker.owner_tag_key)
        if not worker._may_act(click.user_id, owner):
            return worker._tell(
                click, Reply("refused", f"Only the owner ({owner or 'unknown'}) or a costguard admin can do that.")
            )
        return self._once(
            worker, click, now, lambda: self._apply(worker, api, found, click, now), resource=found, owner=owner
        )

    def _once(
        self,
        worker: ClickWorker,
        click: Click,
        now: datetime,
        act: Callable[[], Reply],
        *,
        resource: Resource | None,
        owner: str,
    ) -> Reply:
        """The effect, its record, the done mark and the answer: the EC2 clicks' order and once-only."""
        key = f"slack-action:{click.kind}/{click.instance_id}:{click.message_ts}:{click.button.value}"
        claim = worker.claims.claim(key, now, ttl=timedelta(days=7))
        if claim.state is ClaimState.DONE:
            return worker._tell(click, Reply("duplicate", "That was done already."))
        if claim.state is ClaimState.HELD:
            raise ClaimHeld(f"{key} is being done by another delivery of the click")
        reply = act()
        if reply.status == "done":
            kind = {
                Button.START: EntryKind.SAGEMAKER_START,
                Button.RECREATE: EntryKind.SAGEMAKER_RECREATE,
                Button.STOP_NOW: EntryKind.SAGEMAKER_STOP
                if click.kind == Kind.NOTEBOOK
                else EntryKind.SAGEMAKER_DELETE,
            }.get(click.button, EntryKind.SAGEMAKER_KEEP)
            worker.ledger.record(
                Entry(
                    at=click_time(click, now),
                    kind=kind,
                    instance_id=f"{click.kind}/{click.instance_id}",
                    region=click.region,
                    mode=worker.mode.value,
                    owner=owner,
                    instance_type=resource.instance_type if resource else "",
                    reason=f"{click.button.value} by {click.user_name}",
                    until=formatting.format_time(keep_until(click.button, now, worker.owner_zone(owner)))
                    if click.button in KEEPS
                    else "",
                )
            )
        worker.claims.done(claim)
        if reply.done is not None:
            worker._update_original(click, reply.done)
        else:
            worker._tell(click, reply)
        return reply

    def _apply(self, worker: ClickWorker, api: SageMaker, resource: Resource, click: Click, now: datetime) -> Reply:
        zone = worker.owner_zone(resource.owner(worker.owner_tag_key))
        if click.button in KEEPS:
            until = keep_until(click.button, now, zone)
            applied = api.add_tags(
                resource.arn,
                {tags.KEEP_UNTIL: formatting.format_time(until), tags.KEPT_BY: click.user_name},
            )
            if applied:
                api.delete_tags(resource.arn, [k for k in tags.WARNING_TAGS if k in resource.tags])
            done = words.kept(click, until, zone.key)
        elif click.button is Button.STOP_NOW:
            return self._now(worker, api, resource, click, now, zone.key)
        elif click.button is Button.START and resource.kind is Kind.NOTEBOOK:
            if resource.status not in ("Stopped", "Failed"):
                return Reply(
                    "refused", f"{resource.name} is {resource.status}: only a stopped notebook instance starts."
                )
            try:
                applied = api.start_notebook(resource.name)
            except ClientError as exc:
                return Reply("refused", f"AWS would not start it: {error_code(exc)}.")
            done = words.started(click, now, zone.key)
        else:
            return Reply("refused", "That button does nothing for this resource.")
        if not applied:
            return Reply("dry-run", "dry-run: costguard changed nothing. It would have done this: " + done.text)
        logger.info("sagemaker click done", resource=resource.key, button=click.button.value, user=click.user_id)
        return Reply("done", done.text, done)

    def _now(  # noqa: PLR0917 (what the act needs, as _apply has it)
        self, worker: ClickWorker, api: SageMaker, resource: Resource, click: Click, now: datetime, zone: str
    ) -> Reply:
        """ "Stop now" (a notebook instance) or "Delete now" (an endpoint, a Studio app): what costguard would do
        at the warning's time, done now, and what undoes it (Start it again, Recreate), as the sweep does it."""
        if worker.mode is Mode.NOTIFY_ONLY:
            return Reply("refused", "costguard is in notify-only mode and changes nothing; act from the console.")
        if resource.kind is Kind.NOTEBOOK and resource.status != "InService":
            return Reply("refused", f"{resource.name} is {resource.status}: only a running notebook instance stops.")
        owner = resource.owner(worker.owner_tag_key)
        try:
            if resource.kind is Kind.NOTEBOOK:
                applied = api.stop_notebook(resource.name)
                if applied:
                    api.add_tags(
                        resource.arn,
                        {
                            tags.STOPPED_AT: formatting.format_time(now),
                            tags.STOP_REASON: tags.clip(f"stopped from Slack by {click.user_name}"),
                        },
                    )
            elif resource.kind is Kind.ENDPOINT:
                # The configuration says which endpoint was deleted from it, and whose: Recreate needs both.
                api.tag_endpoint_config(resource.config_name, {tags.deleted_endpoint(resource.name): owner})
                applied = api.delete_endpoint(resource.name)
            else:
                applied = api.delete_app(resource.name)
        except ClientError as exc:
            return Reply("refused", f"AWS refused it: {error_code(exc)}.")
        undo = sagemaker_act_buttons(
            resource.kind.value, resource.name, resource.region, resource.account, resource.config_name
        )
        done = words.acted_now(click, now, zone, resource.kind is Kind.NOTEBOOK, undo)
        if not applied:
            return Reply("dry-run", "dry-run: costguard changed nothing. It would have done this: " + done.text)
        logger.info("sagemaker click done", resource=resource.key, button=click.button.value, user=click.user_id)
        return Reply("done", done.text, done)

    def _recreate(self, worker: ClickWorker, api: SageMaker, click: Click, now: datetime) -> Reply:
        """The endpoint again, from the configuration kept when costguard deleted it, with its owner."""
        name, config = click.instance_id, click.config
        config_tags = api.endpoint_config_exists(config) if config else None
        if config_tags is None:
            text = f"The endpoint configuration `{config or '?'}` is gone: `{name}` cannot be recreated from it."
            return worker._tell(click, Reply("gone", text))
        if tags.deleted_endpoint(name) not in config_tags:
            text = f"costguard did not delete `{name}` from `{config}`: recreate it yourself."
            return worker._tell(click, Reply("refused", text))
        owner = config_tags[tags.deleted_endpoint(name)]
        if not worker._may_act(click.user_id, owner):
            return worker._tell(
                click, Reply("refused", f"Only the owner ({owner or 'unknown'}) or a costguard admin can do that.")
            )

        def act() -> Reply:
            if api.endpoint(name) is not None:
                return Reply("refused", f"`{name}` exists already.")
            if worker.mode is Mode.NOTIFY_ONLY:
                return Reply(
                    "refused", "costguard is in notify-only mode and changes nothing; recreate it from the console."
                )
            recreated = {tags.RECREATED_BY: click.user_name}
            if owner:
                recreated[worker.owner_tag_key] = owner
            try:
                applied = api.create_endpoint(name, config, recreated)
            except ClientError as exc:
                # Answered, never retried: a model deleted since, a quota, a refusal will not pass on a second
                # delivery (as the EC2 Start answers). The person may press again once it is fixed.
                said = exc.response.get("Error", {}).get("Message", "")
                return Reply("refused", mrkdwn("AWS refused to create it ({0}: {1}).", error_code(exc), said[:300]))
            said = mrkdwn("from `{}`: in service in a few minutes.", config)
            done = words.started(click, now, worker.zone.key, word="Recreated", what=said)
            if not applied:
                return Reply("dry-run", "dry-run: costguard changed nothing. " + done.text)
            return Reply("done", done.text, done)

        return self._once(worker, click, now, act, resource=None, owner=owner)
