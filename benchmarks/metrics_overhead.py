"""What exporting metrics costs the changefeed: ``benchmarks/changefeed.py`` on this tree and on a baseline tree
without the metrics (a git revision, checked out into a temporary worktree), alternated in one run.

    .venv/bin/python benchmarks/metrics_overhead.py --baseline REV [--rows 300000] [--rounds 3]

Each round runs ``changefeed.py --rounds 1 --skip-latency --idle-seconds 0`` once per tree (which goes first
alternates between rounds) and reads its live and catch-up rows/s for ``local[2]``; the medians are printed with
the ratio this tree / baseline (1.00 = no cost). The pipeline's share of the metrics (each batch's row, byte and
duration figures, written with its checkpoint) is inside these runs; the server's share (one update per changefeed
per status poll, and the rendering of a scrape) is not, as ``changefeed.py`` runs the query without a server.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINE = re.compile(r"round 1 local\[2\]: live ([\d,]+) rows/s, catch-up ([\d,]+) rows/s")


def run(tree: Path, rows: int) -> tuple[float, float]:
    """changefeed.py of this repository against ``tree``'s package; (live, catch-up) rows/s of local[2]."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "changefeed.py"), "--rows", str(rows),
                          "--rounds", "1", "--skip-latency", "--idle-seconds", "0"],
                         capture_output=True, text=True, env=env, check=True).stdout  # fmt: skip
    found = _LINE.search(out)
    if found is None:
        raise SystemExit(f"no local[2] figures in the output of changefeed.py:\n{out}")
    live, catch_up = (float(g.replace(",", "")) for g in found.groups())
    return live, catch_up


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--baseline", required=True, help="git revision without the metrics")
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sparkcdc-metrics-base-") as tmp:
        base = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.baseline],
                       check=True, capture_output=True)  # fmt: skip
        try:
            results: dict[str, list[tuple[float, float]]] = {"metrics": [], "baseline": []}
            trees = {"metrics": ROOT, "baseline": base}
            for r in range(args.rounds):
                order = ["metrics", "baseline"] if r % 2 == 0 else ["baseline", "metrics"]
                for name in order:
                    results[name].append(run(trees[name], args.rows))
                    print(f"round {r + 1} {name}: live {results[name][-1][0]:,.0f} rows/s, catch-up "
                          f"{results[name][-1][1]:,.0f} rows/s", flush=True)  # fmt: skip
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False)
    print(f"{args.rows} rows, local[2], median of {args.rounds} rounds (baseline {args.baseline})")
    for i, mode in enumerate(("live", "catch-up")):
        with_m, without = (statistics.median(v[i] for v in results[k]) for k in ("metrics", "baseline"))
        print(f"{mode}: with metrics {with_m:,.0f} rows/s, without {without:,.0f} rows/s, "
              f"ratio {with_m / without:.3f}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
