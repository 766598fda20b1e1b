"""Run a puller until interrupted: ``python -m sparkcdc.capture --data-dir D --host H --port P --user U``.

The password is read from the ``SPARKCDC_UPSTREAM_PASSWORD`` environment variable (never from argv, where
``ps`` would show it). SIGINT/SIGTERM stop the puller after flushing what is complete.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from sparkcdc.capture.position import BinlogPosition, StartPoint
from sparkcdc.capture.puller import Puller, PullerConfig
from sparkcdc.errors import SparkcdcError
from sparkcdc.model import tso


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sparkcdc.capture", description="Pull a binlog into a relay log.")
    ap.add_argument("--data-dir", required=True, help="relay log directory (resumes when it already has one)")
    ap.add_argument("--host", default="127.0.0.1", help="upstream host")
    ap.add_argument("--port", type=int, default=3306, help="upstream port")
    ap.add_argument("--user", default="root", help="upstream user with REPLICATION SLAVE and SELECT")
    ap.add_argument("--server-id", type=int, default=1001, help="replica server id (unique per upstream)")
    ap.add_argument("--start-position", help="start at FILE:POS (fresh data dir only)")
    ap.add_argument("--start-gtid", help="start after this MariaDB GTID list (fresh data dir only)")
    ap.add_argument("--start-ts", help="start after this TSO, scanning from the oldest binlog (fresh data dir only)")
    ap.add_argument("--log-level", default="info", help="debug, info, warning or error")
    args = ap.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    start = StartPoint.now()
    try:
        if args.start_position:
            file, _, pos = args.start_position.rpartition(":")
            start = StartPoint.at(BinlogPosition(file, int(pos)))
        elif args.start_gtid:
            start = StartPoint.from_gtid(args.start_gtid)
        elif args.start_ts:
            start = StartPoint.from_tso(tso.parse(args.start_ts))
        config = PullerConfig(host=args.host, port=args.port, user=args.user,
                              password=os.environ.get("SPARKCDC_UPSTREAM_PASSWORD", ""), data_dir=args.data_dir,
                              server_id=args.server_id)
        stop = threading.Event()

        def _stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGTERM, _stop)
        puller = Puller(config, start)
        try:
            puller.run(stop)
        finally:
            puller.close()
    except (SparkcdcError, ValueError) as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
