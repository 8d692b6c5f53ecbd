"""Alert scenarios: a query's partition that stalls and moves again, and the rules around it."""

import os

from monitor.alerts.rulefile import RuleSet, load_rules
from tests.support.progress import EPOCH, write

# partition_stalled alone, firing at once and resolving as soon as the stall is over.
ONLY_STALLED = load_rules("""\
queries:
  - match: "*"
    rules:
      no_progress: {enabled: false}
      watermark_age: {enabled: false}
      partition_stalled: {for: 0, keep_firing_for: 0}
""")


def healthy(engine):
    """Two partitions moving along, watermark advancing: nothing to say."""
    for batch_id in range(3):
        ends = [10 * (batch_id + 1)] * 2
        write(engine, batch_id, 5 * batch_id, ends=ends, latests=ends, watermark_s=5 * batch_id)


def stalled(engine, epoch=EPOCH):
    """t/1 has a backlog and stays at offset 10 from 0 s to 25 s: stalled in batch 2."""
    write(engine, 0, 0, ends=[10, 10], latests=[10, 50], watermark_s=0, epoch=epoch)
    write(engine, 1, 10, ends=[20, 10], latests=[20, 50], watermark_s=10, epoch=epoch)
    write(engine, 2, 25, ends=[30, 10], latests=[30, 50], watermark_s=25, epoch=epoch)


def moves_again(engine, epoch=EPOCH):
    """t/1 reads again at 30 s: the stall is over."""
    write(engine, 3, 30, ends=[40, 20], latests=[40, 50], watermark_s=30, epoch=epoch)


def at(seconds):
    """Epoch milliseconds `seconds` after EPOCH."""
    return EPOCH + seconds * 1000


def rules_with(*receivers):
    """ONLY_STALLED's rules, notifying `receivers`."""
    return RuleSet(ONLY_STALLED.everywhere, ONLY_STALLED.per_query, tuple(receivers))


RULES = "rules:\n  partition_stalled: {for: 1h}\n"


def rewrite(path, text, seconds_later):
    """Write the file and move its time on, as a later edit would."""
    before = path.stat().st_mtime
    path.write_text(text)
    os.utime(path, (before + seconds_later, before + seconds_later))
