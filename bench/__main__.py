"""`make bench`: every benchmark, results in bench/results/."""

from __future__ import annotations

import logging

from bench import (
    backfill,
    charts,
    cold_imports,
    commitments,
    digest,
    digest_pricing,
    digest_whole,
    faults,
    first_sweep,
    fuzz,
    holds,
    idle_sweep,
    learning,
    owner_tagger,
    scheduled,
    versus,
    week,
)
from bench.common import save


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    cold_imports.main()
    charts.main()
    owner_tagger.main()
    print("The first sweeps of 10,000 instances, 1,000 idle, 500 owners, against Slack's rate limits")
    print(f"  saved {save('first_sweep', first_sweep.main())}")
    print("The owner backfill's walk of CloudTrail over 100,000 launches, run after run")
    print(f"  saved {save('backfill', backfill.main())}")
    print("The weekly digest's fortnight of hourly metrics at 1,000 and 10,000 GPU instances")
    print(f"  saved {save('digest', digest.main())}")
    print("The digest's pricing of a region's idle machines on the bill at 2,500 to 20,000 machines")
    print(f"  saved {save('digest_pricing', digest_pricing.main())}")
    print("The whole weekly digest handler at 1,000 and 10,000 GPU machines, as Lambda runs it")
    print(f"  saved {save('digest_whole', digest_whole.main())}")
    print("The deep dive over a payer account's quarter, and the organization digest of 100 accounts, whole")
    print(f"  saved {save('scheduled', scheduled.main())}")
    print("The learning of recurring work for 1,000 machines about to be warned at once")
    print(f"  saved {save('learning', learning.main())}")
    print("A week of a realistic fleet through the real sweep, against the oracle and two baselines")
    print(f"  saved {save('week', week.main())}")
    print("What holds the harder week's idle GPU-hours, read from the sweeps' own decisions (3 seeds)")
    print(f"  saved {save('holds', holds.main())}")
    print("The week on the bill as it is paid: commitments, Capacity Blocks, short capacity, boot waits (3 seeds)")
    print(f"  saved {save('commitments', commitments.main())}")
    print("The same week under injected faults (AWS failures and storms, lost answers, kills, Slack errors)")
    print(f"  saved {save('faults', faults.main())}")
    print("Every handler fed 1,000 mutated events (tests/faults/test_fuzz_handlers.py): the counts")
    print(f"  saved {save('fuzz', fuzz.main())}")
    path = save("versus", versus.main())  # about 10 minutes: Custodian's 11,500 calls at 30 ms each
    print(f"  saved {path}")
    idle_sweep.main()  # about 5 minutes: moto is slow at 1,000 instances


if __name__ == "__main__":
    main()
