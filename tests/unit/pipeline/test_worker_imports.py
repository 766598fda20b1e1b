"""What the Python processes Spark starts for a changefeed import: fresh interpreters, not forks of its daemon,
for each query (the data source's creation, the source's runner, the sink's commit runner), so every module they
load is paid again by each changefeed at each server start and restart, where the CPU is the bound (issue 26
item 4). sqlglot (expression filters only) cost ~0.07 CPU-s of each."""

from __future__ import annotations

import subprocess
import sys

WORKER_MODULES = ("sparkcdc.pipeline.relay_source", "sparkcdc.pipeline.sink_writer", "sparkcdc.pipeline.transform")


def test_the_worker_modules_do_not_load_sqlglot() -> None:
    code = f"import sys, {', '.join(WORKER_MODULES)}; print(sorted(m for m in sys.modules if m.startswith('sqlglot')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout[:300]

