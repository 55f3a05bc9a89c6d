"""Each handler's cold import in a fresh interpreter (what a Lambda cold start pays before the first event)."""

from __future__ import annotations

from typing import Any

from bench.common import ROOT, cold_import_seconds, save


def main() -> dict[str, Any]:
    functions = sorted(p.name for p in (ROOT / "functions").iterdir() if (p / "app.py").exists())
    result = {name: cold_import_seconds(name, runs=7) for name in functions}
    untraced = {name: cold_import_seconds(name, runs=7, tracing=False) for name in functions}
    path = save("cold_imports", {"handlers": result, "handlers_tracing_disabled": untraced})
    print(f"cold imports ({path.name}), 7 fresh interpreters: median wall (max), median CPU; tracing on, then off:")
    for name, on in result.items():
        off = untraced[name]
        print(
            f"  {name:<22} {on['median_s']:.3f} s ({on['max_s']:.3f} s), CPU {on['cpu_median_s']:.3f} s;   "
            f"off {off['median_s']:.3f} s ({off['max_s']:.3f} s), CPU {off['cpu_median_s']:.3f} s"
        )
    return result


if __name__ == "__main__":
    main()
