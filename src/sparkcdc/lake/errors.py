"""The lake's refusal of a table definition it cannot keep: its own module, because the DDL rules
(:mod:`~sparkcdc.lake.ddl`) and the table layouts (:mod:`~sparkcdc.lake.keyless`) both raise it, and ``ddl``
imports the tables that import ``keyless``."""

from __future__ import annotations

from sparkcdc.errors import SparkcdcError

ERR_LAKE_DDL = "CDC:ErrLakeDDLUnsupported"


class LakeDDLError(SparkcdcError):
    """A DDL or table definition the lake table cannot follow: the changefeed fails (a retry would meet it again)."""

    default_code = ERR_LAKE_DDL
    default_retryable = False
