"""Bidirectional replication (``bdr-mode = true``): how a changefeed's own writes are told from a user's.

TiCDC marks what its MySQL sink writes to TiDB with the session's ``tidb_cdc_write_source`` and drops marked changes
in bdr-mode. A MariaDB binlog event carries the server_id of the session that wrote it, and MariaDB lets a session
set its own ``server_id``: the MySQL sink of a bdr-mode changefeed writes with :data:`BDR_SERVER_ID`, and the capture
side of a bdr-mode changefeed drops every transaction whose events carry it. So with changefeeds A->B and B->A, a
change made on A reaches B once and never comes back. The id must be no server's own ``server_id``.
"""

from __future__ import annotations

from typing import Final

BDR_SERVER_ID: Final = 0xCDC0_BDB0  # 3451960752: a fixed id, outside the small ids servers are usually given
