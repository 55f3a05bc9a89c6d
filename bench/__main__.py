"""`make bench`: every benchmark, results in bench/results/."""

from __future__ import annotations

import logging

from bench import cold_imports, idle_sweep, owner_tagger


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    cold_imports.main()
    owner_tagger.main()
    idle_sweep.main()  # about 7 minutes: moto is slow at 1,000 instances


if __name__ == "__main__":
    main()
