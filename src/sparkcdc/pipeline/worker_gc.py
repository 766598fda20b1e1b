"""Keep a reused PySpark worker's long-lived objects out of the full collection it runs after every task.

PySpark's daemon calls ``gc.collect()`` after each task of a reused Python worker. A worker that has imported
pyspark, pyarrow and our codecs and holds the schema-history cache tracks ~50k+ objects, so every collection
costs 25-50 ms, paid by every task of every micro-batch: ~0.5 s of CPU per empty batch, i.e. most of an idle
changefeed's CPU. Everything alive when a task starts has survived the daemon's last collection, so it is
long-lived (modules, caches); ``gc.freeze()`` moves it to the permanent generation that collections skip.
Reference counting still frees frozen objects; only a reference cycle among them that later becomes garbage
is not reclaimed, which our caches (replaced whole, not mutated into cycles) do not produce in bulk.
"""

from __future__ import annotations

import gc


def freeze_survivors() -> None:
    """Call at the start of an executor-side task (``read``/``write``), before it allocates anything."""
    gc.freeze()
