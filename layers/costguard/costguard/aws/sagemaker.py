"""SageMaker adapter: notebook instances, Studio apps, endpoints and their settings read into records; tags,
stops, deletions and re-creations written. Takes its clients. Writes honour the mode (dry-run sends nothing).

And the CloudWatch reads of the SageMaker sweep: the kernel activity costguard's notebook lifecycle
configuration publishes, and each endpoint variant's invocations and CPU.

Resource ARNs and their IAM condition keys (Service Authorization Reference, "Actions, resources, and
condition keys for Amazon SageMaker AI"): notebook-instance/<name>, endpoint/<name>, endpoint-config/<name>,
app/<domain>/<user profile or space>/<type>/<name>, each with aws:ResourceTag/${TagKey}.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from costguard.aws.clients import error_code
from costguard.aws.cloudwatch.reads import MetricReader
from costguard.aws.cloudwatch.series import MetricRef
from costguard.core import tags as tag_keys
from costguard.core.sagemaker import GOVERNED_APP_TYPES, IDLE_SHUTDOWN_APP_TYPES, IdleSetting, Kind, Resource, Variant
from costguard.core.series import Point, Signal
from costguard.core.settings import IdlePolicy, Mode

if TYPE_CHECKING:
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_sagemaker import SageMakerClient

# Where costguard's notebook lifecycle configuration publishes (template.yaml, NotebookActivityConfig), one
# series per notebook instance, dimension NotebookInstanceName. KernelActivity is 1 for a 5-minute period in
# which a Jupyter kernel was busy or active (or a terminal was used), 0 when the server answered and none was;
# nothing at all when the server could not be read. GPUUtilization is the busiest GPU's, from nvidia-smi;
# BusiestCoreUtilization the busiest CPU core's over the period, from /proc/stat (work outside any kernel).
NOTEBOOK_NAMESPACE = "costguard/SageMaker"
KERNEL_METRIC = "KernelActivity"
GPU_METRIC = "GPUUtilization"
CORE_METRIC = "BusiestCoreUtilization"
# AWS/SageMaker publishes Invocations per EndpointName and VariantName only for periods with requests: no
# datapoint is not "0 invocations" on its own. The instances' CPUUtilization (namespace
# /aws/sagemaker/Endpoints, same dimensions) is published every minute the variant runs: it proves the
# metrics flow while nobody calls.
INVOCATIONS_NAMESPACE = "AWS/SageMaker"
INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"
DAY = 86_400
NOT_FOUND_MARKERS = ("Could not find", "does not exist", "not found", "RecordNotFound")


def _gone(exc: ClientError) -> bool:
    """SageMaker answers a name that no longer exists with ValidationException (or ResourceNotFound)."""
    if error_code(exc) == "ResourceNotFound":
        return True
    return error_code(exc) == "ValidationException" and any(m in str(exc) for m in NOT_FOUND_MARKERS)


def _tags(raw: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in raw or []}


class _Reads:
    """Notebook instances, endpoints and Studio apps, read into records."""

    def __init__(
        self, client: SageMakerClient, region: str, mode: Mode, *, account: str = "", owner_tag_key: str = "Owner"
    ) -> None:
        self.client = client
        self.region = region
        self.mode = mode
        self.account = account
        self.owner_tag_key = owner_tag_key

    # ---------------------------------------------------------------- reads
    def tags_of(self, arn: str) -> dict[str, str]:
        found: dict[str, str] = {}
        for page in self.client.get_paginator("list_tags").paginate(ResourceArn=arn):
            found.update(_tags(page.get("Tags")))
        return found

    def notebooks(self, wanted: Callable[[str], bool], status: str = "InService") -> list[Resource]:
        """Notebook instances in `status` whose type `wanted` accepts, with their tags (one ListTags each)."""
        out = []
        for page in self.client.get_paginator("list_notebook_instances").paginate(StatusEquals=status):  # type: ignore[arg-type]
            for raw in page.get("NotebookInstances", []):
                if wanted(str(raw.get("InstanceType", ""))):
                    out.append(self._notebook(raw))
        return out

    def notebook(self, name: str) -> Resource | None:
        try:
            raw = self.client.describe_notebook_instance(NotebookInstanceName=name)
        except ClientError as exc:
            if _gone(exc):
                return None
            raise
        return self._notebook(raw)

    def _notebook(self, raw: Mapping[str, Any]) -> Resource:
        arn = str(raw["NotebookInstanceArn"])
        return Resource(
            kind=Kind.NOTEBOOK,
            name=str(raw["NotebookInstanceName"]),
            region=self.region,
            arn=arn,
            instance_type=str(raw.get("InstanceType", "")),
            status=str(raw.get("NotebookInstanceStatus", "")),
            since=raw.get("LastModifiedTime") or raw["CreationTime"],
            created=raw.get("CreationTime"),
            tags=self.tags_of(arn),
            account=self.account,
            lifecycle_config=str(raw.get("NotebookInstanceLifecycleConfigName", "")),
        )

    def endpoints(self, wanted: Callable[[str], bool]) -> list[Resource]:
        """InService endpoints with a variant on a type `wanted` accepts: DescribeEndpoint for the variants'
        counts and scaling, DescribeEndpointConfig for their instance types (DescribeEndpoint has none)."""
        out = []
        for page in self.client.get_paginator("list_endpoints").paginate(StatusEquals="InService"):
            for summary in page.get("Endpoints", []):
                found = self.endpoint(str(summary["EndpointName"]))
                if found is not None and any(wanted(v.instance_type) for v in found.variants):
                    out.append(found)
        return out

    def endpoint(self, name: str) -> Resource | None:
        try:
            raw = self.client.describe_endpoint(EndpointName=name)
            config = self.client.describe_endpoint_config(EndpointConfigName=raw["EndpointConfigName"])
        except ClientError as exc:
            if _gone(exc):
                return None
            raise
        types = {str(v["VariantName"]): v for v in config.get("ProductionVariants", [])}
        variants = []
        for summary in raw.get("ProductionVariants", []):
            variant_name = str(summary["VariantName"])
            configured: Mapping[str, Any] = types.get(variant_name, {})
            scaling: Mapping[str, Any] = summary.get("ManagedInstanceScaling") or {}
            serverless = bool(summary.get("CurrentServerlessConfig") or configured.get("ServerlessConfig"))
            minimum = scaling.get("MinInstanceCount") if scaling.get("Status") == "ENABLED" else None
            variants.append(
                Variant(
                    name=variant_name,
                    instance_type=str(configured.get("InstanceType", "")),
                    instance_count=int(summary.get("CurrentInstanceCount") or 0),
                    serverless=serverless,
                    min_instances=int(minimum) if minimum is not None else None,
                    inference_components=bool(configured) and not serverless and not configured.get("ModelName"),
                )
            )
        arn = str(raw["EndpointArn"])
        first = next((v.instance_type for v in variants if v.instance_type), "")
        return Resource(
            kind=Kind.ENDPOINT,
            name=name,
            region=self.region,
            arn=arn,
            instance_type=first,
            status=str(raw.get("EndpointStatus", "")),
            since=raw["LastModifiedTime"],
            created=raw["CreationTime"],
            tags=self.tags_of(arn),
            account=self.account,
            config_name=str(raw["EndpointConfigName"]),
            variants=tuple(variants),
            asynchronous=_asynchronous(raw, config),
        )

    def endpoint_config_exists(self, name: str) -> Mapping[str, str] | None:
        """The endpoint configuration's tags, or None when it no longer exists."""
        try:
            arn = self.client.describe_endpoint_config(EndpointConfigName=name)["EndpointConfigArn"]
        except ClientError as exc:
            if _gone(exc):
                return None
            raise
        return self.tags_of(arn)


class _Studio(_Reads):
    """Studio apps, who they run for, and Studio's idle shutdown settings."""

    def apps(self, wanted: Callable[[str], bool]) -> list[Resource]:
        """InService JupyterLab, KernelGateway and Code Editor apps on a type `wanted` accepts (ListApps of the
        whole region), each described for the activity SageMaker reports, with its tags."""
        out = []
        for page in self.client.get_paginator("list_apps").paginate():
            for raw in page.get("Apps", []):
                instance_type = str((raw.get("ResourceSpec") or {}).get("InstanceType", ""))
                if raw.get("Status") != "InService" or raw.get("AppType") not in GOVERNED_APP_TYPES:
                    continue
                if not wanted(instance_type):
                    continue
                found = self.app(_app_name(raw))
                if found is not None:
                    out.append(found)
        return out

    def app(self, name: str) -> Resource | None:
        domain, holder, app_type, app_name = name.split("/")
        params = _holder(domain, holder, app_type, app_name)
        try:
            raw = self.client.describe_app(**params)
        except ClientError as exc:
            if _gone(exc):
                return None
            raise
        arn = str(raw.get("AppArn", ""))
        return Resource(
            kind=Kind.APP,
            name=name,
            region=self.region,
            arn=arn,
            instance_type=str((raw.get("ResourceSpec") or {}).get("InstanceType", "")),
            status=str(raw.get("Status", "")),
            since=raw["CreationTime"],
            created=raw["CreationTime"],
            tags=self.tags_of(arn) if arn else {},
            account=self.account,
            last_user_activity=raw.get("LastUserActivityTimestamp"),
            last_health_check=raw.get("LastHealthCheckTimestamp"),
        )

    def resource(self, kind: Kind, name: str) -> Resource | None:
        """A notebook instance, endpoint or Studio app by its kind and name (core.sagemaker's), or None."""
        if kind is Kind.NOTEBOOK:
            return self.notebook(name)
        if kind is Kind.ENDPOINT:
            return self.endpoint(name)
        return self.app(name)

    def holder_tags(self, domain: str, holder: str) -> dict[str, str]:
        """The tags of the user profile an app runs for, or of a private space's owner's user profile: where
        a person may be named (Owner) when the app's own create call names only SageMaker's role."""
        try:
            if holder.startswith("space."):
                space = self.client.describe_space(DomainId=domain, SpaceName=holder.removeprefix("space."))
                owner = space.get("OwnershipSettings", {}).get("OwnerUserProfileName", "")
                found = self.tags_of(str(space["SpaceArn"]))
                if self.owner_tag_key in found or not owner:
                    return found
                holder = f"user.{owner}"
            profile = self.client.describe_user_profile(DomainId=domain, UserProfileName=holder.removeprefix("user."))
        except ClientError as exc:
            if _gone(exc):
                return {}
            raise
        return self.tags_of(str(profile["UserProfileArn"]))

    def idle_settings(self) -> list[IdleSetting]:
        """Studio's idle shutdown, wherever it is set, for JupyterLab and Code Editor: each domain's defaults
        (for user profiles, and for spaces), each user profile's and each space's own setting."""
        found: list[IdleSetting] = []
        for page in self.client.get_paginator("list_domains").paginate():
            for summary in page.get("Domains", []):
                domain_id = str(summary["DomainId"])
                domain = self.client.describe_domain(DomainId=domain_id)
                name = str(domain.get("DomainName", domain_id))
                found += _settings("domain", domain_id, name, domain.get("DefaultUserSettings"))
                spaces = domain.get("DefaultSpaceSettings")
                found += _settings("domain spaces", domain_id, name, spaces, app_types=("JupyterLab",))
                found += self._profiles(domain_id)
                found += self._spaces(domain_id)
        return found

    def _profiles(self, domain_id: str) -> list[IdleSetting]:
        found: list[IdleSetting] = []
        for page in self.client.get_paginator("list_user_profiles").paginate(DomainIdEquals=domain_id):
            for summary in page.get("UserProfiles", []):
                profile = self.client.describe_user_profile(
                    DomainId=domain_id, UserProfileName=summary["UserProfileName"]
                )
                found += _settings("user profile", domain_id, summary["UserProfileName"], profile.get("UserSettings"))
        return found

    def _spaces(self, domain_id: str) -> list[IdleSetting]:
        found: list[IdleSetting] = []
        for page in self.client.get_paginator("list_spaces").paginate(DomainIdEquals=domain_id):
            for summary in page.get("Spaces", []):
                space = self.client.describe_space(DomainId=domain_id, SpaceName=summary["SpaceName"])
                found += _settings("space", domain_id, summary["SpaceName"], space.get("SpaceSettings"))
        return found


class SageMaker(_Studio):
    """The reads, and the writes, none of which is sent in dry-run."""

    def add_tags(self, arn: str, tags: Mapping[str, str]) -> bool:
        if not tags:
            return True
        if not self.mode.mutates:
            return False
        tag_list: list[Any] = [{"Key": k, "Value": tag_keys.sagemaker_value(v)} for k, v in sorted(tags.items())]
        self.client.add_tags(ResourceArn=arn, Tags=tag_list)
        return True

    def delete_tags(self, arn: str, keys: Sequence[str]) -> bool:
        if not keys:
            return True
        if not self.mode.mutates:
            return False
        self.client.delete_tags(ResourceArn=arn, TagKeys=list(keys))
        return True

    def stop_notebook(self, name: str) -> bool:
        if not self.mode.mutates:
            return False
        self.client.stop_notebook_instance(NotebookInstanceName=name)
        return True

    def start_notebook(self, name: str) -> bool:
        if not self.mode.mutates:
            return False
        self.client.start_notebook_instance(NotebookInstanceName=name)
        return True

    def tag_endpoint_config(self, name: str, tags: Mapping[str, str]) -> bool:
        arn = self.client.describe_endpoint_config(EndpointConfigName=name)["EndpointConfigArn"]
        return self.add_tags(arn, tags)

    def delete_endpoint(self, name: str) -> bool:
        """The endpoint only: its configuration and model stay, so that it can be created again."""
        if not self.mode.mutates:
            return False
        self.client.delete_endpoint(EndpointName=name)
        return True

    def create_endpoint(self, name: str, config_name: str, tags: Mapping[str, str]) -> bool:
        if not self.mode.mutates:
            return False
        tag_list: list[Any] = [{"Key": k, "Value": tag_keys.sagemaker_value(v)} for k, v in sorted(tags.items())]
        self.client.create_endpoint(EndpointName=name, EndpointConfigName=config_name, Tags=tag_list)
        return True

    def delete_app(self, name: str) -> bool:
        """DeleteApp: the app's instance goes; the user's or space's storage stays."""
        if not self.mode.mutates:
            return False
        domain, holder, app_type, app_name = name.split("/")
        self.client.delete_app(**_holder(domain, holder, app_type, app_name))
        return True


def _asynchronous(endpoint: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    return bool(endpoint.get("AsyncInferenceConfig") or config.get("AsyncInferenceConfig"))


def _app_name(raw: Mapping[str, Any]) -> str:
    holder = f"space.{raw['SpaceName']}" if raw.get("SpaceName") else f"user.{raw.get('UserProfileName', '')}"
    return f"{raw['DomainId']}/{holder}/{raw['AppType']}/{raw['AppName']}"


def _holder(domain: str, holder: str, app_type: str, app_name: str) -> dict[str, Any]:
    params: dict[str, Any] = {"DomainId": domain, "AppType": app_type, "AppName": app_name}
    if holder.startswith("space."):
        params["SpaceName"] = holder.removeprefix("space.")
    else:
        params["UserProfileName"] = holder.removeprefix("user.")
    return params


def _settings(
    scope: str,
    domain_id: str,
    name: str,
    settings: Mapping[str, Any] | None,
    app_types: Sequence[str] = IDLE_SHUTDOWN_APP_TYPES,
) -> list[IdleSetting]:
    """The idle shutdown of each app type that has one, as set in these settings (None where not set). A
    domain's defaults for spaces have JupyterLab settings only (DefaultSpaceSettings has no Code Editor)."""
    found = []
    for app_type in app_types:
        app = (settings or {}).get(f"{app_type}AppSettings") or {}
        idle = (app.get("AppLifecycleManagement") or {}).get("IdleSettings") or {}
        state = idle.get("LifecycleManagement")
        enabled = None if state is None else state == "ENABLED"
        timeout = idle.get("IdleTimeoutInMinutes")
        if scope == "space" and timeout is not None:
            enabled = True  # a space's idle settings have a timeout only: set is on
        found.append(IdleSetting(scope, domain_id, name, app_type, enabled, int(timeout) if timeout else None))
    return found


class SageMakerMetrics:
    """The sweep's CloudWatch reads, a few GetMetricData calls for the region (500 series a call)."""

    def __init__(self, client: CloudWatchClient) -> None:
        self.client = client
        self.reader = MetricReader(client, IdlePolicy())

    def watched_notebooks(self) -> set[str]:
        """Notebook instances that published kernel activity in the last two weeks (ListMetrics' horizon)."""
        names: set[str] = set()
        pages = self.client.get_paginator("list_metrics").paginate(
            Namespace=NOTEBOOK_NAMESPACE, MetricName=KERNEL_METRIC
        )
        for page in pages:
            for metric in page.get("Metrics", []):
                for dim in metric.get("Dimensions", []):
                    if dim["Name"] == "NotebookInstanceName":
                        names.add(dim["Value"])
        return names

    def notebook_series(
        self, names: Sequence[str], start: datetime, end: datetime, period: int = 300
    ) -> tuple[dict[str, dict[Signal, list[Point]]], dict[str, str]]:
        """Kernel activity, busiest core and GPU use of each notebook over [start, end); and those CloudWatch
        failed on."""
        refs = []
        for name in names:
            dims = (("NotebookInstanceName", name),)
            refs.append(
                MetricRef(name, Signal.KERNEL_ACTIVITY, "kernels", NOTEBOOK_NAMESPACE, KERNEL_METRIC, dims, "Maximum")
            )
            refs.append(MetricRef(name, Signal.GPU, "GPU", NOTEBOOK_NAMESPACE, GPU_METRIC, dims, "Maximum"))
            refs.append(
                MetricRef(name, Signal.BUSIEST_CORE, "busiest core", NOTEBOOK_NAMESPACE, CORE_METRIC, dims, "Maximum")
            )
        return self._read(refs, start, end, period)

    def endpoint_series(
        self, endpoints: Sequence[Resource], start: datetime, window_start: datetime, end: datetime
    ) -> tuple[dict[str, dict[Signal, list[Point]]], dict[str, str]]:
        """Per "<endpoint>/<variant>", a day at a time: Invocations (Sum) since `start` (the last invocation is
        looked for that far back) and the instances' CPUUtilization (Maximum) over the window."""
        refs = []
        for endpoint in endpoints:
            for variant in endpoint.variants:
                if variant.serverless:
                    continue
                key = f"{endpoint.name}/{variant.name}"
                dims = (("EndpointName", endpoint.name), ("VariantName", variant.name))
                refs.append(
                    MetricRef(key, Signal.INVOCATIONS, "invocations", INVOCATIONS_NAMESPACE, "Invocations", dims, "Sum")
                )
                refs.append(MetricRef(key, Signal.CPU, "CPU", INSTANCE_NAMESPACE, "CPUUtilization", dims, "Maximum"))
        invocations = [r for r in refs if r.signal is Signal.INVOCATIONS]
        cpu = [r for r in refs if r.signal is Signal.CPU]
        found, failed = self._read(invocations, start, end, DAY)
        more, more_failed = self._read(cpu, window_start, end, DAY)
        for key, series in more.items():
            found.setdefault(key, {}).update(series)
        return found, {**failed, **more_failed}

    def _read(
        self, refs: Sequence[MetricRef], start: datetime, end: datetime, period: int
    ) -> tuple[dict[str, dict[Signal, list[Point]]], dict[str, str]]:
        if not refs:
            return {}, {}
        points, failed = self.reader.fetch(refs, start, end, period=period)
        out: dict[str, dict[Signal, list[Point]]] = {}
        for ref in refs:
            # Sum statistics come back per second from the shared reader (network): back to a count.
            scale = period if ref.stat == "Sum" else 1
            out.setdefault(ref.instance_id, {})[ref.signal] = [(t, v * scale) for t, v in points[ref]]
        return out, {ref.instance_id: why for ref, why in failed.items()}
