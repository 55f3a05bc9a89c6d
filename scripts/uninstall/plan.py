"""What an uninstall removes and keeps, as plain records: found first, shown, then carried out in order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """One removal: what it is (as the list shows it) and the call that makes it."""

    what: str
    run: Callable[[], None] = field(compare=False, repr=False)


@dataclass(frozen=True)
class Kept:
    """One thing left in place on purpose, and why (with how to remove it, where that is up to you)."""

    what: str
    why: str


@dataclass
class Plan:
    steps: list[Step] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)
    # What stops the uninstall before it changes anything (a running notebook that uses costguard's lifecycle
    # configuration: only its owner may stop it).
    blocked: list[str] = field(default_factory=list)
    # What could not be read: said, never taken for "nothing there".
    unread: list[str] = field(default_factory=list)

    def add(self, steps: Iterable[Step] = (), kept: Iterable[Kept] = ()) -> None:
        self.steps += list(steps)
        self.kept += list(kept)

    def lines(self) -> list[str]:
        out = [f"Removes ({len(self.steps)}):", *(f"  - {s.what}" for s in self.steps)]
        if not self.steps:
            out.append("  (nothing)")
        out += [f"Keeps ({len(self.kept)}):", *(f"  - {k.what}: {k.why}" for k in self.kept)]
        if self.blocked:
            out += ["Cannot go on:", *(f"  - {b}" for b in self.blocked)]
        if self.unread:
            out += ["Could not read (looked at again by the next run):", *(f"  - {u}" for u in self.unread)]
        return out


def batches(items: Sequence[str], size: int) -> list[list[str]]:
    """`items` in runs of at most `size` (an API's limit a call), in their order."""
    return [list(items[start : start + size]) for start in range(0, len(items), size)]
