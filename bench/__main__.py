"""`make bench`: every benchmark, results in bench/results/."""

from __future__ import annotations

import logging

from bench import owner_tagger


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    owner_tagger.main()


if __name__ == "__main__":
    main()
