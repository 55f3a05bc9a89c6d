"""Studio's idle shutdown settings worth reporting (sagemaker/rules/shutdown)."""

from __future__ import annotations

from costguard.core.sagemaker import IdleSetting
from costguard.sagemaker.rules.shutdown import shutdown_findings


def test_studio_settings_report_what_is_off_or_longer_than_the_window() -> None:
    found = shutdown_findings(
        [
            IdleSetting("domain", "d-1", "research", "JupyterLab", None, None),
            IdleSetting("domain", "d-1", "research", "CodeEditor", True, 60),
            IdleSetting("user profile", "d-1", "bob", "JupyterLab", None, None),  # inherits: not reported
            IdleSetting("space", "d-1", "team", "JupyterLab", True, 600),
            IdleSetting("user profile", "d-1", "carol", "CodeEditor", False, None),
        ],
        120,
    )
    assert [(f.scope, f.name, f.app_type) for f in found] == [
        ("domain", "research", "JupyterLab"),
        ("space", "team", "JupyterLab"),
        ("user profile", "carol", "CodeEditor"),
    ]
