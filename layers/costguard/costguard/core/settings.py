"""Typed settings, read from the environment in this one place.

Every function builds one settings object at cold start. A missing or invalid variable raises
ConfigError naming every problem at once, so a broken deployment fails loudly on its first event.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from costguard.core.errors import ConfigError
from costguard.core.queues import sqs_queue_url


class Mode(StrEnum):
    """How far costguard may act. Every mutating call honours it."""

    ENFORCE = "enforce"
    NOTIFY_ONLY = "notify-only"
    DRY_RUN = "dry-run"

    @property
    def mutates(self) -> bool:
        """dry-run makes no mutating AWS call at all (not even tags)."""
        return self is not Mode.DRY_RUN


# The accelerated instance families costguard governs unless ACCELERATOR_FAMILIES says otherwise.
ACCELERATOR_FAMILIES = ("p*", "g*", "trn*", "inf*", "dl*")
# How long the ledger keeps a record (DynamoDB TTL): a year of digests and then some. Not a template parameter.
STATE_TTL_DAYS = 400


def is_accelerated(families: tuple[str, ...], instance_type: str) -> bool:
    """True for an EC2 type of the accelerator families."""
    return any(fnmatchcase(instance_type, family) for family in families)


def is_accelerated_ml(families: tuple[str, ...], instance_type: str) -> bool:
    """True for a SageMaker ml.* type of the accelerator families (ml.g5.xlarge is the g5.xlarge family's)."""
    return instance_type.startswith("ml.") and is_accelerated(families, instance_type.removeprefix("ml."))


class _Reader:
    """Collects every problem in the environment before raising, instead of failing on the first."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[str] = []

    def required(self, name: str) -> str:
        value = self.env.get(name, "").strip()
        if not value:
            self.problems.append(f"{name} is not set")
        return value

    def optional(self, name: str, default: str = "") -> str:
        return self.env.get(name, default).strip()

    def choice(self, name: str, enum: type[Mode], default: str) -> Mode:
        raw = self.optional(name, default)
        try:
            return enum(raw)
        except ValueError:
            allowed = ", ".join(m.value for m in enum)
            self.problems.append(f"{name}={raw!r} is not one of: {allowed}")
            return enum(default)

    def number(self, name: str, default: float, *, minimum: float = 0.0) -> float:
        raw = self.optional(name, str(default))
        try:
            value = float(raw)
        except ValueError:
            self.problems.append(f"{name}={raw!r} is not a number")
            return default
        if value < minimum:
            self.problems.append(f"{name}={raw!r} is below {minimum}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self.optional(name, "true" if default else "false").lower()
        if raw not in ("true", "false"):
            self.problems.append(f"{name}={raw!r} is not true or false")
            return default
        return raw == "true"

    def csv(self, name: str) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.optional(name).split(",") if part.strip())

    def accelerator_families(self) -> tuple[str, ...]:
        """ACCELERATOR_FAMILIES, defaulted and normalised here only: `g5` means every g5 type (`g5*`)."""
        families = self.csv("ACCELERATOR_FAMILIES") or ACCELERATOR_FAMILIES
        return tuple(f if f.endswith("*") else f"{f}*" for f in families)

    def team_timezone(self) -> str:
        """TEAM_TIMEZONE, the team's clock, checked here only."""
        zone = self.optional("TEAM_TIMEZONE", "UTC") or "UTC"
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name too long for a file's
            self.problems.append(f"TEAM_TIMEZONE={zone[:64]!r} is not an IANA time zone")
        return zone

    def team_tag_key(self) -> str:
        """TEAM_TAG_KEY: the tag that tells teams apart in the digests (Cost Explorer groups by it too)."""
        return self.optional("TEAM_TAG_KEY", "Team") or "Team"

    def check(self) -> None:
        if self.problems:
            raise ConfigError("invalid costguard configuration: " + "; ".join(self.problems))


@dataclass(frozen=True)
class Settings:
    """Settings every costguard function shares (template Globals)."""

    mode: Mode
    slack_secret_name: str
    alerts_channel: str
    digest_channel: str
    owner_tag_key: str
    email_domain: str
    governed_regions: tuple[str, ...]
    state_table: str
    state_ttl_days: int
    # Only set by the local demo and tests, to point slack-sdk at a stand-in for the Slack Web API.
    slack_api_url: str
    # The region the functions run in: EventBridge delivers CloudWatch and EC2 events only there.
    home_region: str = ""
    # In an organization's member (make org-deploy): the hub's Slack relay, through which this account posts
    # with the hub's token; "" where this account reads its own Slack secret.
    slack_relay_arn: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        read = _Reader(os.environ if env is None else env)
        home_region = read.optional("AWS_REGION") or read.optional("AWS_DEFAULT_REGION")
        regions = read.csv("GOVERNED_REGIONS") or ((home_region,) if home_region else ())
        if not regions:
            read.problems.append("GOVERNED_REGIONS is empty and AWS_REGION is not set")
        settings = cls(
            mode=read.choice("COSTGUARD_MODE", Mode, "dry-run"),
            slack_secret_name=read.required("SLACK_SECRET_NAME"),
            alerts_channel=read.required("ALERTS_CHANNEL"),
            digest_channel=read.optional("DIGEST_CHANNEL") or read.optional("ALERTS_CHANNEL"),
            owner_tag_key=read.optional("OWNER_TAG_KEY", "Owner") or "Owner",
            email_domain=read.optional("EMAIL_DOMAIN").lstrip("@"),
            governed_regions=regions,
            state_table=read.required("STATE_TABLE"),
            state_ttl_days=STATE_TTL_DAYS,
            slack_api_url=read.optional("SLACK_API_URL"),
            home_region=home_region or (regions[0] if regions else ""),
            slack_relay_arn=read.optional("SLACK_RELAY_ARN"),
        )
        read.check()
        return settings


MAX_VCPUS = 192  # the largest accelerated hosts (p5.48xlarge, g6.48xlarge)


@dataclass(frozen=True)
class IdlePolicy:
    """When a GPU instance counts as idle, and what costguard may do about it (idle_stopper)."""

    accelerator_families: tuple[str, ...] = ACCELERATOR_FAMILIES
    window_minutes: int = 120
    gpu_idle_percent: float = 5.0
    cpu_idle_percent: float = 10.0
    network_idle_bytes_per_second: float = 0.0  # 0: network is not a signal
    # The CloudWatch agent's per-core cpu_usage_active, rolled up by InstanceId: its Maximum is the
    # busiest core. One core at this level is work (tokenization, preprocessing), however many idle.
    busiest_core_percent: float = 50.0
    grace_minutes: int = 30
    period_seconds: int = 300
    # CloudWatch publishes EC2 metrics a few minutes late: the newest periods may be empty without
    # meaning anything. Gaps older than this are insufficient data.
    allowed_lag_minutes: int = 10
    stop_without_gpu_telemetry: bool = False
    idle_alarms: bool = True
    # The activity check on the machine before a warning or a stop (SSM Run Command), and how long
    # a sweep waits for its answers.
    activity_check_document: str = ""  # "": no activity check
    activity_check_seconds: int = 45
    schedule_lead_minutes: int = 15  # a machine with working hours is started this long before they open
    morning_note: bool = False  # tell the owner when their machine is started for its working hours
    # Warned after this much idleness instead of the window when the activity check saw nothing alive on
    # the machine for all of it (metrics idle too); 0: never sooner than the window.
    certain_idle_minutes: int = 45
    # Recurring work learned from a machine's last two weeks: it is started again before its next run
    # (ScheduleLeadMinutes ahead), and not stopped at all when that run is nearer than this after the stop.
    learned_starts: bool = True
    shortest_stop_minutes: int = 90
    team_timezone: str = "UTC"  # the team's clock, in which recurring work is also looked for
    # What an hour of a person's time is worth: a machine is started before its person's weekday when the cold
    # starts it saves them are worth more than the idle hours it costs (idle/rules/arrival.py); 0: never.
    person_hour_usd: float = 150.0

    def cpu_threshold(self, vcpus: int, *, busiest_core_known: bool) -> float:
        """The whole-instance CPUUtilization at which a machine is busy. Without the busiest-core metric a
        single busy core must not hide under it: at most half a core's share of the vCPUs (0.26% on a
        192-vCPU host). With EC2 silent on the vCPUs, the share of the largest hosts is assumed."""
        if busiest_core_known:
            return self.cpu_idle_percent
        share = 50.0 / (vcpus if vcpus > 0 else MAX_VCPUS)
        return min(self.cpu_idle_percent, share)

    def is_accelerated(self, instance_type: str) -> bool:
        """True for a type of the accelerator families costguard governs."""
        return is_accelerated(self.accelerator_families, instance_type)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IdlePolicy:
        read = _Reader(os.environ if env is None else env)
        window = int(read.number("IDLE_WINDOW_MINUTES", cls.window_minutes, minimum=30))
        certain = int(read.number("CERTAIN_IDLE_MINUTES", cls.certain_idle_minutes))
        if 0 < certain < 15:
            read.problems.append(f"CertainIdleMinutes (CERTAIN_IDLE_MINUTES={certain}) must be 0 (off) or at least 15")
        # A shorter wait no shorter than the window is no shorter wait: off. (The template allows a 30-minute
        # window beside the 45-minute default; the stopper then waits its window, as it would with 0.)
        certain = certain if certain < window else 0
        policy = cls(
            accelerator_families=read.accelerator_families(),
            window_minutes=window,
            gpu_idle_percent=read.number("GPU_IDLE_PERCENT", cls.gpu_idle_percent),
            cpu_idle_percent=read.number("CPU_IDLE_PERCENT", cls.cpu_idle_percent),
            busiest_core_percent=read.number("BUSIEST_CORE_PERCENT", cls.busiest_core_percent),
            network_idle_bytes_per_second=read.number("NETWORK_IDLE_BYTES_PER_SECOND", 0.0),
            grace_minutes=int(read.number("GRACE_MINUTES", cls.grace_minutes, minimum=5)),
            stop_without_gpu_telemetry=read.flag("STOP_WITHOUT_GPU_TELEMETRY", False),
            idle_alarms=read.flag("IDLE_ALARMS", True),
            activity_check_document=read.optional("ACTIVITY_CHECK_DOCUMENT"),
            activity_check_seconds=int(read.number("ACTIVITY_CHECK_SECONDS", cls.activity_check_seconds, minimum=5)),
            schedule_lead_minutes=int(read.number("SCHEDULE_LEAD_MINUTES", cls.schedule_lead_minutes, minimum=0)),
            morning_note=read.flag("MORNING_NOTE", cls.morning_note),
            certain_idle_minutes=certain,
            learned_starts=read.flag("LEARNED_STARTS", cls.learned_starts),
            shortest_stop_minutes=int(read.number("SHORTEST_STOP_MINUTES", cls.shortest_stop_minutes)),
            team_timezone=read.team_timezone(),
            person_hour_usd=read.number("PERSON_HOUR_USD", cls.person_hour_usd),
        )
        if window > 1440:
            read.problems.append("IDLE_WINDOW_MINUTES must be at most 1440 (CloudWatch alarms look back one day)")
        read.check()
        return policy


@dataclass(frozen=True)
class BudgetSettings:
    """budget_alerts: how far Cost Explorer looks when it explains a budget alert."""

    ec2_only: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BudgetSettings:
        read = _Reader(os.environ if env is None else env)
        scope = read.optional("BUDGET_SCOPE", "all")
        if scope not in ("all", "ec2"):
            read.problems.append(f"BUDGET_SCOPE={scope!r} is not one of: all, ec2")
        read.check()
        return cls(ec2_only=scope == "ec2")


@dataclass(frozen=True)
class CommitmentSettings:
    """commitment_tracker: when to remind, and what counts as under-used."""

    lead_days: tuple[int, ...] = (60, 30, 14, 7, 1)
    utilization_threshold: float = 80.0

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> CommitmentSettings:
        read = _Reader(os.environ if env is None else env)
        leads: list[int] = []
        for raw in read.csv("COMMITMENT_LEAD_DAYS") or tuple(str(d) for d in cls.lead_days):
            if not raw.isdigit() or int(raw) < 1:
                read.problems.append(f"COMMITMENT_LEAD_DAYS has {raw!r}, not a whole number of days")
            else:
                leads.append(int(raw))
        settings = cls(
            lead_days=tuple(sorted(set(leads), reverse=True)) or cls.lead_days,
            utilization_threshold=read.number("COMMITMENT_UTILIZATION_PERCENT", cls.utilization_threshold),
        )
        read.check()
        return settings


_SQS_ARN = re.compile(r"^arn:aws[a-z-]*:sqs:([a-z0-9-]+):(\d{12}):([A-Za-z0-9_-]{1,80})$")


@dataclass(frozen=True)
class ReceiverSettings:
    """slack_receiver: where a verified click is queued (its own account's click queue, or a member's)."""

    queue_url: str = ""
    members: Mapping[str, str] = field(default_factory=dict)  # member account -> its click queue's URL
    member_queue_name: str = ""  # in an organization: every member's click queue, by name (slack/routing.py)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ReceiverSettings:
        read = _Reader(os.environ if env is None else env)
        members: dict[str, str] = {}
        for arn in read.csv("MEMBER_CLICK_QUEUES"):  # the hub: where each member account's clicks go
            match = _SQS_ARN.match(arn)
            if match is None:
                read.problems.append(f"MEMBER_CLICK_QUEUES entry {arn!r} is not an SQS queue ARN")
                continue
            members[match.group(2)] = sqs_queue_url(arn)
        settings = cls(
            queue_url=read.required("CLICK_QUEUE_URL"),
            members=members,
            member_queue_name=read.optional("MEMBER_CLICK_QUEUE_NAME"),
        )
        read.check()
        return settings


@dataclass(frozen=True)
class ButtonSettings:
    """buttons: who besides the owner may press the buttons, the team's clock, and which machines the buttons
    may act on (the accelerator families; SageMaker's only when SageMakerGovernance is on)."""

    admins: tuple[str, ...] = ()
    timezone: str = "UTC"
    accelerator_families: tuple[str, ...] = ACCELERATOR_FAMILIES
    sagemaker_governed: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ButtonSettings:
        read = _Reader(os.environ if env is None else env)
        admins = read.csv("SLACK_ADMINS")
        for entry in admins:
            if entry[:1] not in ("U", "W", "S"):
                read.problems.append(f"SLACK_ADMINS entry {entry!r} is not a Slack user (U…/W…) or user group (S…) id")
        settings = cls(
            admins=admins,
            timezone=read.team_timezone(),
            accelerator_families=read.accelerator_families(),
            sagemaker_governed=read.flag("SAGEMAKER_GOVERNANCE", cls.sagemaker_governed),
        )
        read.check()
        return settings

    def is_accelerated(self, instance_type: str) -> bool:
        return is_accelerated(self.accelerator_families, instance_type)

    def is_accelerated_ml(self, instance_type: str) -> bool:
        return is_accelerated_ml(self.accelerator_families, instance_type)


@dataclass(frozen=True)
class OwnerSettings:
    """owner_tagger: which SageMaker resources it tags and backfills (none with SageMakerGovernance off)."""

    accelerator_families: tuple[str, ...] = ACCELERATOR_FAMILIES
    sagemaker_governed: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OwnerSettings:
        read = _Reader(os.environ if env is None else env)
        settings = cls(
            accelerator_families=read.accelerator_families(),
            sagemaker_governed=read.flag("SAGEMAKER_GOVERNANCE", cls.sagemaker_governed),
        )
        read.check()
        return settings

    def is_accelerated_ml(self, instance_type: str) -> bool:
        return is_accelerated_ml(self.accelerator_families, instance_type)


@dataclass(frozen=True)
class DigestSettings:
    """weekly_digest: how teams are told apart, whether each owner gets their own digest, and where the
    week is handed over for the organization's digest (the hub's figures queue, or nowhere)."""

    team_tag_key: str = "Team"
    owner_digests: bool = True
    owner_digests_always: bool = False  # also to owners whose week had nothing idle and nothing to keep in mind
    handoff_queue_arn: str = ""  # the hub's figures queue; "" when no hub collects this account's week
    account_label: str = ""  # what the organization's digest calls this account

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DigestSettings:
        read = _Reader(os.environ if env is None else env)
        queue = read.optional("HANDOFF_QUEUE_ARN")
        if queue and not _SQS_ARN.match(queue):
            read.problems.append(f"HANDOFF_QUEUE_ARN {queue!r} is not an SQS queue ARN")
        label = read.optional("ACCOUNT_LABEL")
        if len(label) > 64:
            read.problems.append("ACCOUNT_LABEL is longer than 64 characters")
        settings = cls(
            team_tag_key=read.team_tag_key(),
            owner_digests=read.flag("OWNER_DIGESTS", True),
            owner_digests_always=read.flag("OWNER_DIGESTS_ALWAYS", False),
            handoff_queue_arn=queue,
            account_label=label,
        )
        read.check()
        return settings


_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/[A-Za-z0-9+=,.@/_-]+$")


@dataclass(frozen=True)
class OrganizationSettings:
    """organization_digest (the hub): its figures queue, and the accounts whose week it expects."""

    queue_url: str
    members: tuple[str, ...]  # the member accounts, from their weekly digests' role ARNs
    reports_itself: bool = True  # the hub's own weekly digest hands its week over too
    organization_id: str = ""  # make org-deploy's hub: any account of it may report (its queue policy checks who)
    units: tuple[str, ...] = ()  # make org-deploy's units: their accounts are expected (digest/organization/units.py)
    stack_set: str = ""  # make org-deploy's StackSet: its stack instances say why a unit's account has no figures

    def expected(self, own_account: str) -> list[str]:
        accounts = ([own_account] if self.reports_itself and own_account else []) + list(self.members)
        return list(dict.fromkeys(accounts))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OrganizationSettings:
        read = _Reader(os.environ if env is None else env)
        members: list[str] = []
        for arn in read.csv("MEMBER_DIGEST_ROLES"):
            match = _ROLE_ARN.match(arn)
            if match is None:
                read.problems.append(f"MEMBER_DIGEST_ROLES entry {arn!r} is not an IAM role ARN")
                continue
            members.append(match.group(1))
        settings = cls(
            queue_url=read.required("FIGURES_QUEUE_URL"),
            members=tuple(dict.fromkeys(members)),
            reports_itself=read.flag("HUB_WEEKLY_DIGEST", True),
            organization_id=read.optional("ORGANIZATION_ID"),
            units=read.csv("ORGANIZATION_UNITS"),
            stack_set=read.optional("MEMBERS_STACK_SET"),
        )
        read.check()
        return settings


@dataclass(frozen=True)
class DeepDiveSettings:
    """deep_dive: teams, and what counts as a jump or a region move worth saying."""

    team_tag_key: str = "Team"
    jump_percent: float = 50.0  # a month-over-month rise above this share is a jump (without Cost Anomaly Detection)
    jump_usd: float = 100.0  # ... and at least this much
    region_move_usd: float = 100.0  # a region move is named when it would have saved this much in the quarter

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DeepDiveSettings:
        read = _Reader(os.environ if env is None else env)
        settings = cls(
            team_tag_key=read.team_tag_key(),
            jump_percent=read.number("DEEP_DIVE_JUMP_PERCENT", cls.jump_percent),
            jump_usd=read.number("DEEP_DIVE_JUMP_USD", cls.jump_usd),
            region_move_usd=read.number("REGION_MOVE_USD", cls.region_move_usd),
        )
        read.check()
        return settings


LAST_INVOCATION_DAYS = 90  # how far back an endpoint's last invocation is looked for


@dataclass(frozen=True)
class SageMakerPolicy:
    """sagemaker_stopper: when a SageMaker notebook instance, Studio app or endpoint counts as idle, and what
    costguard may do about it. Deletions are off unless the admin turns them on."""

    accelerator_families: tuple[str, ...] = ACCELERATOR_FAMILIES
    notebook_window_minutes: int = 120  # kernels and GPUs quiet this long: the notebook instance is idle
    gpu_idle_percent: float = 5.0
    busiest_core_percent: float = 50.0  # a notebook instance's busiest CPU core at or over this is at work
    grace_minutes: int = 30  # notebook instances and Studio apps: from the warning to the stop or deletion
    endpoint_idle_days: int = 7  # no invocation for this many days: a zombie endpoint
    endpoint_grace_hours: int = 24
    endpoints_delete: bool = False
    studio_app_max_hours: int = 12  # running this long with no activity SageMaker reports: warned
    studio_apps_delete: bool = False
    studio_idle_minutes: int = 120  # the team's window: idle shutdown off or longer than this is reported
    governed: bool = True  # SageMakerGovernance: owner tagging and the backfill cover SageMaker too
    team_timezone: str = "UTC"  # TeamTimezone: a time's fallback text where Slack cannot show it in its reader's

    def is_accelerated(self, instance_type: str) -> bool:
        """True for an ml.* type of the accelerator families (ml.g5.xlarge is the g5.xlarge family's)."""
        return is_accelerated_ml(self.accelerator_families, instance_type)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SageMakerPolicy:
        read = _Reader(os.environ if env is None else env)
        window = int(read.number("IDLE_WINDOW_MINUTES", cls.notebook_window_minutes, minimum=30))
        policy = cls(
            accelerator_families=read.accelerator_families(),
            notebook_window_minutes=window,
            gpu_idle_percent=read.number("GPU_IDLE_PERCENT", cls.gpu_idle_percent),
            busiest_core_percent=read.number("BUSIEST_CORE_PERCENT", cls.busiest_core_percent),
            grace_minutes=int(read.number("GRACE_MINUTES", cls.grace_minutes, minimum=5)),
            endpoint_idle_days=int(read.number("ENDPOINT_IDLE_DAYS", cls.endpoint_idle_days, minimum=1)),
            endpoint_grace_hours=int(read.number("ENDPOINT_GRACE_HOURS", cls.endpoint_grace_hours, minimum=1)),
            endpoints_delete=read.flag("ENDPOINTS_DELETE", cls.endpoints_delete),
            studio_app_max_hours=int(read.number("STUDIO_APP_MAX_HOURS", cls.studio_app_max_hours, minimum=1)),
            studio_apps_delete=read.flag("STUDIO_APPS_DELETE", cls.studio_apps_delete),
            studio_idle_minutes=window,
            governed=read.flag("SAGEMAKER_GOVERNANCE", cls.governed),
            team_timezone=read.team_timezone(),
        )
        if policy.endpoint_idle_days > LAST_INVOCATION_DAYS:
            # The last invocation is looked for this far back (CloudWatch keeps hourly data 455 days).
            read.problems.append(f"ENDPOINT_IDLE_DAYS must be at most {LAST_INVOCATION_DAYS}")
        read.check()
        return policy
