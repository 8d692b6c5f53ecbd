"""A listener's write path in a process of its own, for the live tests.

Run as `python -m tests.support.writer_process DATABASE_URL`. Each line on stdin is a JSON command
(`{"kind": "batch" | "timers" | "terminated", ...fields}`); the event goes through the real
StoreWriter, and once it is stored one line `{"written_at": <epoch seconds>}` goes to stdout.
"""

import json
import sys
import time

from monitor.collect.writer import StoreWriter
from monitor.events import QueryTerminated, TimerSnapshot
from monitor.store.schema.engine import create_engine
from tests.support.progress import batch_event

KINDS = {"batch": batch_event, "timers": TimerSnapshot, "terminated": QueryTerminated}


def main(database_url):
    writer = StoreWriter(create_engine(database_url), capacity=1_000)
    for line in sys.stdin:
        command = json.loads(line)
        writer.submit(KINDS[command.pop("kind")](**command))
        if not writer.flush(timeout=30):
            sys.exit(f"writer_process: not stored within 30 s: {writer.stats()}")
        print(json.dumps({"written_at": time.time()}), flush=True)
    writer.close(timeout=30)


if __name__ == "__main__":
    main(sys.argv[1])
