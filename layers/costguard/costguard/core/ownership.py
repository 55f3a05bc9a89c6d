"""Who owns a machine: decided from the CloudTrail identity of its launch (or create call). Pure, no I/O.

Shared by owner tagging of EC2 instances (owners/) and of SageMaker resources (sagemaker/).

The owner is what a person would call the launcher: an IAM user's name, the session name of an
assumed role or IAM Identity Center login (usually an email), `root` for the root user. Launches
by AWS services (Auto Scaling, Spot Fleet, EC2 Fleet, SageMaker, Batch...) have no person in the
event: the owner then comes from the tag the service propagated, else from the group's own tags,
else it is left unset and the source is marked `service`. Code that SageMaker runs (notebooks, Studio, jobs)
calls with its execution role under SageMaker's own session name, `SageMaker`: the role owns what it creates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from costguard.core import shapes, tags
from costguard.core.errors import EventValidationError


class OwnerSource(StrEnum):
    """Where an owner came from; written to the `costguard:owner-source` tag."""

    LAUNCH_TAG = "launch-tag"
    IAM_USER = "iam-user"
    ASSUMED_ROLE = "assumed-role"
    IDENTITY_CENTER = "identity-center"
    FEDERATED_USER = "federated-user"
    ROOT = "root"
    INSTANCE_ROLE = "instance-role"
    # Code running in SageMaker (a notebook instance, Studio, a job) under its execution role: SageMaker names
    # the role's session `SageMaker`, which is no person.
    EXECUTION_ROLE = "execution-role"
    AUTOMATION_ROLE = "automation-role"  # a deployment or CI session (CloudFormation, CDK, GitHub Actions)
    SERVICE_PROPAGATED = "service-propagated"
    GROUP_TAG = "group-tag"
    SERVICE = "service"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Identity:
    """The parts of a CloudTrail `userIdentity` that say who launched something."""

    type: str
    arn: str = ""
    user_name: str = ""
    session_issuer_arn: str = ""
    session_issuer_name: str = ""
    invoked_by: str = ""
    web_identity_provider: str = ""  # sessionContext.webIdFederationData.federatedProvider (OIDC: CI)
    # sessionContext.sourceIdentity: SageMaker Studio sets the user profile's name here when the domain
    # propagates it (ExecutionRoleIdentityConfig=USER_PROFILE_NAME).
    source_identity: str = ""

    @property
    def session_name(self) -> str:
        # arn:aws:sts::123456789012:assumed-role/RoleName/session-name
        if ":assumed-role/" in self.arn:
            return self.arn.split(":assumed-role/", 1)[1].partition("/")[2]
        if ":federated-user/" in self.arn:
            return self.arn.split(":federated-user/", 1)[1]
        return ""

    @property
    def role_name(self) -> str:
        if self.session_issuer_name:
            return self.session_issuer_name
        if ":assumed-role/" in self.arn:
            return self.arn.split(":assumed-role/", 1)[1].split("/", 1)[0]
        return ""

    @property
    def sagemaker_session(self) -> bool:
        """The session SageMaker opens with an execution role for the code it runs (notebooks, Studio, jobs): its
        name is SageMaker's own, the same for every person, so it names nobody."""
        return self.session_name.casefold() == _SAGEMAKER_SESSION

    @property
    def automation(self) -> bool:
        """A deployment or CI session rather than a person: CloudFormation (and the CDK) name the
        session of a service role themselves, CI roles are assumed through OIDC or with a tool's name."""
        if self.type == "WebIdentityUser" or self.web_identity_provider:
            return True
        return bool(_AUTOMATION_SESSION.match(self.session_name))

    @property
    def launching_service(self) -> str:
        """The AWS service that launched on its own behalf, or "" for a person or workload.

        A service-linked role (path /aws-service-role/<service>/) or an AWSService identity is a
        service. `invokedBy` alone is not: CloudFormation and the console set it on calls they make
        for a person, whose session name is still the owner.
        """
        if self.type == "AWSService":
            return self.invoked_by or "aws-service"
        if self.type == "Root" and self.invoked_by in _LAUNCHING_SERVICES:
            return self.invoked_by  # an Auto Scaling group of the old kind, before service-linked roles
        match = _SERVICE_LINKED_ROLE.search(self.session_issuer_arn or "")
        if match:
            return match.group(1)
        return ""


@dataclass(frozen=True)
class OwnerDecision:
    """The tags to write for one instance, and why. `owner` is None when costguard must not set it.
    `replaces` is an owner costguard itself wrote wrongly (an automation session's name), corrected."""

    owner: str | None
    source: OwnerSource
    created_by: str
    reason: str
    replaces: str = ""

    def tags_to_write(self, owner_tag_key: str, existing: Mapping[str, str]) -> dict[str, str]:
        """Never overwrites an owner tag that is already there, nor how an owner was first decided: a
        launch event delivered twice finds its own tags and writes nothing."""
        out: dict[str, str] = {}
        if self.owner and self.replaces and existing.get(owner_tag_key) == self.replaces:
            return {owner_tag_key: tags.clip(self.owner), tags.OWNER_SOURCE: self.source.value}
        if self.owner and owner_tag_key not in existing:
            out[owner_tag_key] = tags.clip(self.owner)
        if self.created_by and tags.CREATED_BY not in existing:
            out[tags.CREATED_BY] = tags.clip(self.created_by)
        if tags.OWNER_SOURCE not in existing:
            out[tags.OWNER_SOURCE] = self.source.value
        return out


_SERVICE_LINKED_ROLE = re.compile(r":role/aws-service-role/([^/]+)/")
# Session names that SDKs and tools make up: they name no person, so the role is the better owner.
_GENERATED_SESSION = re.compile(r"^(botocore-session-\d+|aws-go-sdk-\d+|\d{10,}|[0-9a-f-]{32,})$")
# What SageMaker calls the session of an execution role it assumes (CloudTrail's assumed-role ARN ends in it).
_SAGEMAKER_SESSION = "sagemaker"
_IDENTITY_CENTER_ROLE = "AWSReservedSSO_"
_IDENTITY_CENTER_PATH = ":role/aws-reserved/sso.amazonaws.com/"
# Session names that deployment and CI tools set: CloudFormation and the CDK ("AWSCloudFormation"),
# GitHub's and GitLab's OIDC examples, Terraform, CodeBuild/CodePipeline, common CI servers.
_AUTOMATION_SESSION = re.compile(
    r"^(AWSCloudFormation|GitHubActions|github[-_]?actions.*|gha[-_].*|gitlab.*|terraform.*|tf[-_].*"
    r"|atlantis.*|spacelift.*|AWSCodeBuild.*|codebuild.*|AWSCodePipeline.*|codepipeline.*|jenkins.*"
    r"|circleci.*|buildkite.*|argo(cd)?[-_].*|cdk[-_].*)$",
    re.IGNORECASE,
)
# Services that launch instances themselves; an old-style Auto Scaling group launched as the account (Root).
_LAUNCHING_SERVICES = {
    "autoscaling.amazonaws.com",
    "spotfleet.amazonaws.com",
    "ec2fleet.amazonaws.com",
    "batch.amazonaws.com",
    "elasticmapreduce.amazonaws.com",
}


def decide_owner(
    identity: Identity | None,
    *,
    existing_tags: Mapping[str, str],
    owner_tag_key: str,
    group_tags: Mapping[str, str] | None = None,
    group_name: str = "",
) -> OwnerDecision:
    """Decide the owner of one instance from its launch identity and the tags it already carries.

    `existing_tags` are the instance's tags now (launch tags and any a service propagated);
    `group_tags` are the tags of the Auto Scaling group it belongs to, when it belongs to one.
    """
    created_by = identity.arn if identity and identity.arn else (identity.invoked_by if identity else "")
    present = existing_tags.get(owner_tag_key, "").strip()
    service = identity.launching_service if identity else ""

    stale = _written_automation_owner(existing_tags, owner_tag_key)
    if stale is not None:
        return replace(stale, replaces=present)
    if present:
        source = OwnerSource.SERVICE_PROPAGATED if service else OwnerSource.LAUNCH_TAG
        return OwnerDecision(None, source, created_by, f"{owner_tag_key} tag already set to {present!r} at launch")

    if identity is None:
        return OwnerDecision(None, OwnerSource.UNKNOWN, "", "no launch event found in CloudTrail (90 days)")

    if service:
        group_owner = (group_tags or {}).get(owner_tag_key, "").strip()
        if group_owner:
            return OwnerDecision(
                group_owner,
                OwnerSource.GROUP_TAG,
                created_by,
                f"launched by {service}; owner taken from group {group_name!r}",
            )
        return OwnerDecision(
            None, OwnerSource.SERVICE, created_by, f"launched by {service} and no {owner_tag_key} tag to inherit"
        )

    return _person_or_role(identity, created_by)


def _person_or_role(identity: Identity, created_by: str) -> OwnerDecision:
    """The owner a person-or-workload identity names: the person where there is one, else the role."""
    kind = identity.type
    if kind == "Root":
        return OwnerDecision("root", OwnerSource.ROOT, created_by, "launched by the account's root user")
    if kind == "IAMUser" and identity.user_name:
        return OwnerDecision(identity.user_name, OwnerSource.IAM_USER, created_by, "launched by IAM user")
    if kind == "FederatedUser" and identity.session_name:
        return OwnerDecision(identity.session_name, OwnerSource.FEDERATED_USER, created_by, "federated user")
    session, role = identity.session_name, identity.role_name
    if kind not in ("AssumedRole", "WebIdentityUser") or not (session or role):
        return OwnerDecision(None, OwnerSource.UNKNOWN, created_by, f"identity type {kind!r} names no owner")
    if session and (role.startswith(_IDENTITY_CENTER_ROLE) or _IDENTITY_CENTER_PATH in identity.session_issuer_arn):
        return OwnerDecision(session, OwnerSource.IDENTITY_CENTER, created_by, "IAM Identity Center user")
    if identity.automation and role:
        reason = f"deployment or CI session {session!r} of role {role}"
        return OwnerDecision(role, OwnerSource.AUTOMATION_ROLE, created_by, reason)
    if identity.sagemaker_session:
        if not role:
            return OwnerDecision(None, OwnerSource.UNKNOWN, created_by, "SageMaker's session names no role")
        reason = f"created from SageMaker with its execution role {role}"
        return OwnerDecision(role, OwnerSource.EXECUTION_ROLE, created_by, reason)
    if shapes.INSTANCE_ID.match(session) and role:
        reason = f"launched from instance {session} with role {role}"
        return OwnerDecision(role, OwnerSource.INSTANCE_ROLE, created_by, reason)
    if session and not _GENERATED_SESSION.match(session):
        return OwnerDecision(session, OwnerSource.ASSUMED_ROLE, created_by, f"session of role {role}")
    if role:
        return OwnerDecision(role, OwnerSource.ASSUMED_ROLE, created_by, "role with a generated session name")
    return OwnerDecision(None, OwnerSource.UNKNOWN, created_by, f"session {session!r} names no owner")


def owner_needs_correction(existing: Mapping[str, str], owner_tag_key: str) -> bool:
    """costguard wrote this resource's owner from the name of a session that names no person (a deployment's,
    SageMaker's): the backfill corrects it."""
    return _written_automation_owner(existing, owner_tag_key) is not None


def _written_automation_owner(existing: Mapping[str, str], owner_tag_key: str) -> OwnerDecision | None:
    """An owner costguard wrote from an automation session's name, or SageMaker's (before it knew better): the
    role from the launch's own ARN (the created-by tag) instead. A person's own tag is never touched."""
    present = existing.get(owner_tag_key, "")
    if existing.get(tags.OWNER_SOURCE) != OwnerSource.ASSUMED_ROLE.value:
        return None
    launcher = Identity(type="AssumedRole", arn=existing.get(tags.CREATED_BY, ""))
    if not present or launcher.session_name != present or not launcher.role_name:
        return None
    if launcher.sagemaker_session:
        reason = f"{present!r} was SageMaker's session of execution role {launcher.role_name}"
        return OwnerDecision(launcher.role_name, OwnerSource.EXECUTION_ROLE, launcher.arn, reason)
    if not _AUTOMATION_SESSION.match(present):
        return None
    reason = f"{present!r} was a deployment session of role {launcher.role_name}"
    return OwnerDecision(launcher.role_name, OwnerSource.AUTOMATION_ROLE, launcher.arn, reason)


def parse_identity(raw: Any) -> Identity:
    """userIdentity, every field its documented type: a list where a name should be is refused, never
    written as an owner."""
    where = "userIdentity"
    identity = shapes.obj(raw, where)
    context = shapes.optional_obj(identity, "sessionContext", where)
    issuer = shapes.optional_obj(context, "sessionIssuer", f"{where}.sessionContext")
    return Identity(
        type=shapes.text(identity, "type", where, limit=40),
        arn=shapes.optional_text(identity, "arn", where),
        user_name=shapes.optional_text(identity, "userName", where, limit=256),
        session_issuer_arn=shapes.optional_text(issuer, "arn", f"{where}.sessionContext.sessionIssuer"),
        session_issuer_name=shapes.optional_text(issuer, "userName", f"{where}.sessionContext.sessionIssuer"),
        invoked_by=shapes.optional_text(identity, "invokedBy", where, limit=256),
        web_identity_provider=shapes.optional_text(
            shapes.optional_obj(context, "webIdFederationData", f"{where}.sessionContext"),
            "federatedProvider",
            f"{where}.sessionContext.webIdFederationData",
        ),
        source_identity=shapes.optional_text(context, "sourceIdentity", f"{where}.sessionContext", limit=256),
    )


def lookup_record(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """The CloudTrail record inside one entry of LookupEvents' `Events` (its CloudTrailEvent, a JSON string):
    the same record an EventBridge "AWS API Call via CloudTrail" event carries as its detail."""
    raw = result.get("CloudTrailEvent")
    try:
        record = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError as exc:
        raise EventValidationError(f"CloudTrailEvent is not JSON: {exc}") from exc
    if not isinstance(record, Mapping):
        raise EventValidationError("LookupEvents result has no CloudTrailEvent record")
    return record
