"""Studio's idle shutdown settings that let an idle app run on. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Sequence

from costguard.core.sagemaker import IdleSetting


def shutdown_findings(settings: Sequence[IdleSetting], window_minutes: int) -> list[IdleSetting]:
    """Settings that let an idle app run on: explicitly off, or longer than the team's window. A domain's
    default that is not set at all is off (Studio's default); a profile or space that sets nothing inherits."""
    found = []
    for setting in settings:
        off = setting.enabled is False or (setting.enabled is None and setting.scope.startswith("domain"))
        too_long = bool(setting.enabled) and (setting.timeout_minutes or 0) > window_minutes
        if off or too_long:
            found.append(setting)
    return found
