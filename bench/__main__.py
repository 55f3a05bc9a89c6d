"""`make bench`: every benchmark, results in bench/results/."""

from __future__ import annotations

import logging

from bench import idle_sweep, owner_tagger


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    owner_tagger.main()
    idle_sweep.main()  # about 7 minutes: moto is slow at 1,000 instances


if __name__ == "__main__":
    main()
