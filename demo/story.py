"""The demo's scene log: what each scene promises, and whether it happened.

Every scene says what must come of it (`expect`): the decisions its sweep must make, the click's status,
the message it must post. `make demo` prints the log after the story and fails if any scene did not happen
as told, and writes it to demo-output/scenes.json, which tests/demo reads to run the story at any hour.
A scene that could not run at all (its message never came) is in the log too, as not happened, instead of
a traceback half-way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Scene:
    title: str
    expected: dict[str, Any]
    got: dict[str, Any]

    @property
    def happened(self) -> bool:
        return not self.missing()

    def missing(self) -> dict[str, tuple[Any, Any]]:
        """What was expected and did not come: {what: (expected, got)}."""
        return {k: (v, self.got.get(k)) for k, v in self.expected.items() if self.got.get(k) != v}


@dataclass
class SceneLog:
    scenes: list[Scene] = field(default_factory=list)

    def expect(self, title: str, expected: Mapping[str, Any], got: Mapping[str, Any]) -> bool:
        """Record the scene; whether it happened (every expected item got its value)."""
        scene = Scene(title, dict(expected), {k: got.get(k) for k in expected})
        self.scenes.append(scene)
        return scene.happened

    def not_happened(self) -> list[Scene]:
        return [s for s in self.scenes if not s.happened]

    def lines(self) -> list[str]:
        out = []
        for scene in self.scenes:
            missing = scene.missing()
            if not missing:
                out.append(f"   happened      {scene.title}")
                continue
            told = "; ".join(f"{k}: expected {want!r}, got {got!r}" for k, (want, got) in missing.items())
            out.append(f"   DID NOT HAPPEN {scene.title}: {told}")
        return out

    def write(self, path: Path) -> None:
        rows = [{**asdict(s), "happened": s.happened} for s in self.scenes]
        path.write_text(json.dumps(rows, indent=1, default=str))


def read(path: Path) -> list[dict[str, Any]]:
    """demo-output/scenes.json, as written by `SceneLog.write`."""
    return list(json.loads(path.read_text()))
