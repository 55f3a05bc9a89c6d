"""Each handler's cold import in a fresh interpreter (what a Lambda cold start pays before the first event)."""

from __future__ import annotations

from typing import Any

from bench.common import ROOT, cold_import_seconds, save


def main() -> dict[str, Any]:
    functions = sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "app.py").exists())
    result = {name: cold_import_seconds(name, runs=7) for name in functions}
    path = save("cold_imports", {"handlers": result})
    print(f"cold imports ({path.name}), median and max of 7 fresh interpreters:")
    for name, timing in result.items():
        print(f"  {name:<22} {timing['median_s']:.3f} s  (max {timing['max_s']:.3f} s)")
    return result


if __name__ == "__main__":
    main()
