"""TiDB DDL action types (the ``Type`` member of schema files) and their protocol names."""

from __future__ import annotations

from enum import IntEnum


class DDLAction(IntEnum):
    NONE = 0
    CREATE_SCHEMA = 1
    DROP_SCHEMA = 2
    CREATE_TABLE = 3
    DROP_TABLE = 4
    ADD_COLUMN = 5
    DROP_COLUMN = 6
    ADD_INDEX = 7
    DROP_INDEX = 8
    ADD_FOREIGN_KEY = 9
    DROP_FOREIGN_KEY = 10
    TRUNCATE_TABLE = 11
    MODIFY_COLUMN = 12
    REBASE_AUTO_ID = 13
    RENAME_TABLE = 14
    SET_DEFAULT_VALUE = 15
    SHARD_ROW_ID = 16
    MODIFY_TABLE_COMMENT = 17
    RENAME_INDEX = 18
    ADD_TABLE_PARTITION = 19
    DROP_TABLE_PARTITION = 20
    CREATE_VIEW = 21
    MODIFY_TABLE_CHARSET_AND_COLLATE = 22
    TRUNCATE_TABLE_PARTITION = 23
    DROP_VIEW = 24
    RECOVER_TABLE = 25
    MODIFY_SCHEMA_CHARSET_AND_COLLATE = 26
    LOCK_TABLE = 27
    UNLOCK_TABLE = 28
    REPAIR_TABLE = 29
    SET_TIFLASH_REPLICA = 30
    UPDATE_TIFLASH_REPLICA_STATUS = 31
    ADD_PRIMARY_KEY = 32
    DROP_PRIMARY_KEY = 33
    CREATE_SEQUENCE = 34
    ALTER_SEQUENCE = 35
    DROP_SEQUENCE = 36
    ADD_COLUMNS = 37
    DROP_COLUMNS = 38
    MODIFY_TABLE_AUTO_ID_CACHE = 39
    REBASE_AUTO_RANDOM_BASE = 40
    ALTER_INDEX_VISIBILITY = 41
    EXCHANGE_TABLE_PARTITION = 42
    ADD_CHECK_CONSTRAINT = 43
    DROP_CHECK_CONSTRAINT = 44
    ALTER_CHECK_CONSTRAINT = 45
    RENAME_TABLES = 47
    CREATE_TABLES = 60
    MULTI_SCHEMA_CHANGE = 61
    RECOVER_SCHEMA = 63
    REORGANIZE_PARTITION = 64
    ALTER_TABLE_PARTITIONING = 71
    REMOVE_PARTITIONING = 72


_CANAL_SPECIAL = {
    DDLAction.CREATE_TABLE: "CREATE",
    DDLAction.DROP_TABLE: "ERASE",
    DDLAction.RENAME_TABLE: "RENAME",
    DDLAction.RENAME_TABLES: "RENAME",
    DDLAction.ADD_INDEX: "CINDEX",
    DDLAction.ADD_FOREIGN_KEY: "CINDEX",
    DDLAction.ADD_PRIMARY_KEY: "CINDEX",
    DDLAction.DROP_INDEX: "DINDEX",
    DDLAction.DROP_FOREIGN_KEY: "DINDEX",
    DDLAction.DROP_PRIMARY_KEY: "DINDEX",
    DDLAction.TRUNCATE_TABLE: "TRUNCATE",
}

_ALTER = frozenset(
    {
        DDLAction.ADD_COLUMN,
        DDLAction.DROP_COLUMN,
        DDLAction.MODIFY_COLUMN,
        DDLAction.REBASE_AUTO_ID,
        DDLAction.SET_DEFAULT_VALUE,
        DDLAction.MODIFY_TABLE_COMMENT,
        DDLAction.RENAME_INDEX,
        DDLAction.ADD_TABLE_PARTITION,
        DDLAction.DROP_TABLE_PARTITION,
        DDLAction.TRUNCATE_TABLE_PARTITION,
        DDLAction.MODIFY_TABLE_CHARSET_AND_COLLATE,
        DDLAction.ALTER_INDEX_VISIBILITY,
        DDLAction.MULTI_SCHEMA_CHANGE,
        DDLAction.REORGANIZE_PARTITION,
        DDLAction.ALTER_TABLE_PARTITIONING,
        DDLAction.REMOVE_PARTITIONING,
    }
)


def protocol_ddl_type(action: int, *, canal: bool) -> str:
    """The DDL ``type`` string of canal-json (``canal=True``) or simple messages.

    The two protocols agree except for the deprecated AddColumns/DropColumns (37/38): canal-json calls them
    ALTER, simple calls them QUERY.
    """
    if action in _CANAL_SPECIAL:
        return _CANAL_SPECIAL[DDLAction(action)]
    if action in _ALTER:
        return "ALTER"
    if canal and action in (DDLAction.ADD_COLUMNS, DDLAction.DROP_COLUMNS):
        return "ALTER"
    return "QUERY"
