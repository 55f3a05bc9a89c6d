"""SageMaker resources as costguard decides on them: notebook instances, Studio apps, real-time endpoints.
Plain records the SageMaker adapter returns and the sagemaker and buttons features read. Pure: no I/O.

A resource is named by its key: `notebook/<name>`, `endpoint/<name>`, or
`app/<domain id>/<user profile or space>/<app type>/<app name>` (the path of its ARN), which the ledger,
the Slack buttons and the logs use alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from costguard.core.errors import EventValidationError


class Kind(StrEnum):
    NOTEBOOK = "notebook"
    ENDPOINT = "endpoint"
    APP = "app"


# The Studio app types costguard governs: they run on an instance of their own (JupyterServer is "system").
GOVERNED_APP_TYPES = ("JupyterLab", "KernelGateway", "CodeEditor")
# Only these have an idle shutdown setting (AppLifecycleManagement.IdleSettings); KernelGateway has none.
IDLE_SHUTDOWN_APP_TYPES = ("JupyterLab", "CodeEditor")


def has_nvidia_gpu(instance_type: str) -> bool:
    """ml.g* and ml.p* types carry NVIDIA GPUs (nvidia-smi answers there); ml.inf*, ml.trn* (AWS Neuron) and
    ml.dl1 (Gaudi) have none for it to read."""
    return instance_type.removeprefix("ml.")[:1] in ("g", "p")


@dataclass(frozen=True)
class Variant:
    """One production variant of an endpoint: what it runs on, how many, and how it scales."""

    name: str
    instance_type: str = ""  # "" for a serverless variant
    instance_count: int = 0  # CurrentInstanceCount: what is billed now
    serverless: bool = False
    min_instances: int | None = None  # managed instance scaling's minimum (0: it scales to zero)
    # No model of its own in the endpoint configuration: the variant hosts inference components, and a call
    # names the component (InvokeEndpoint's InferenceComponentName), not the variant's Invocations alone.
    inference_components: bool = False


@dataclass(frozen=True)
class Resource:
    """One SageMaker notebook instance, Studio app or endpoint."""

    kind: Kind
    name: str  # the notebook's or endpoint's name; for an app, "<domain>/<profile or space>/<type>/<name>"
    region: str
    arn: str
    instance_type: str
    status: str
    since: datetime  # when it last became what it is now (LastModifiedTime; an app's CreationTime)
    tags: Mapping[str, str] = field(default_factory=dict)
    account: str = ""
    # notebook instances
    lifecycle_config: str = ""
    # endpoints
    config_name: str = ""
    variants: tuple[Variant, ...] = ()
    asynchronous: bool = False
    created: datetime | None = None
    # Studio apps
    last_user_activity: datetime | None = None
    last_health_check: datetime | None = None

    @property
    def key(self) -> str:
        return f"{self.kind.value}/{self.name}"

    def owner(self, owner_tag_key: str) -> str:
        return self.tags.get(owner_tag_key, "").strip()

    @property
    def instances(self) -> int:
        """Instances billed now: an endpoint's current count over its variants; a notebook or app is one."""
        if self.kind is Kind.ENDPOINT:
            return sum(v.instance_count for v in self.variants if not v.serverless)
        return 1

    @property
    def label(self) -> str:
        """How a person calls it in Slack: "notebook instance research-nb", "endpoint churn-v2"."""
        if self.kind is Kind.APP:
            domain, holder, app_type, app = self.app_parts
            return f"Studio {app_type} app {app} of {holder.replace('.', ' ', 1)} (domain {domain})"
        return f"{'notebook instance' if self.kind is Kind.NOTEBOOK else 'endpoint'} {self.name}"

    @property
    def app_parts(self) -> tuple[str, str, str, str]:
        """(domain id, user profile or space, app type, app name) of a Studio app."""
        parts = self.name.split("/")
        return (parts[0], parts[1], parts[2], parts[3]) if len(parts) == 4 else ("", "", "", "")


@dataclass(frozen=True)
class IdleSetting:
    """One place where Studio's idle shutdown is set for an app type: a domain's defaults for user profiles
    or for spaces, a user profile, or a space. `timeout_minutes` None with `enabled` False: it is off."""

    scope: str  # "domain", "domain spaces", "user profile", "space"
    domain_id: str
    name: str  # the domain's name, the user profile's or the space's
    app_type: str
    enabled: bool | None  # None: not set here (inherited)
    timeout_minutes: int | None


NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")  # notebook instance and endpoint names (AWS's pattern)
DOMAIN_ID = re.compile(r"^d-[a-z0-9]{1,63}$")
_APP_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def check_key(kind: str, name: str, where: str) -> tuple[Kind, str]:
    """A resource's kind and name as a Slack button carries them, checked: a name SageMaker could not have
    made is refused (it would otherwise reach an API call and an ARN)."""
    try:
        parsed = Kind(kind)
    except ValueError:
        raise EventValidationError(f"{where} kind {str(kind)[:20]!r} is not a SageMaker resource kind") from None
    if parsed is Kind.APP:
        parts = name.split("/")
        ok = (
            len(parts) == 4
            and bool(DOMAIN_ID.match(parts[0]))
            and all(_APP_PART.match(p) for p in parts[1:])
            and parts[2] in GOVERNED_APP_TYPES
        )
    else:
        ok = bool(NAME.match(name))
    if not ok:
        raise EventValidationError(f"{where} {name[:80]!r} is not a SageMaker {parsed.value} name")
    return parsed, name
