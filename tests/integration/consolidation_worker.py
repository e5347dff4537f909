"""A REM cycle in its own process, killed with SIGKILL at its n-th journal step.

    python -m tests.integration.consolidation_worker HOME NOW N

Used by test_consolidation_crash.py. The lease on the namespace is zero seconds so the
test's rerun needn't wait for a dead holder's lease to expire (a real crashed holder's
lease runs out after `policy.maintenance.consolidation_lock_seconds`).
"""

from __future__ import annotations

import os
import signal
import sys
from datetime import datetime

from reverie.core import ManualClock, Policy
from reverie.integrations import open_engine

NAMESPACE = "crash"


def main(home: str, now: str, kill_at: int) -> int:
    engine = open_engine(
        home,
        clock=ManualClock(datetime.fromisoformat(now)),
        policy=Policy(consolidation_lock_seconds=0.0),
        namespace=NAMESPACE,
    )
    seen = 0

    def hook(step: str) -> None:
        nonlocal seen
        seen += 1
        if seen == kill_at:
            print(f"killed at step {seen}: {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    engine.consolidate(kill_hook=hook)
    print(f"finished after {seen} steps without reaching step {kill_at}", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
