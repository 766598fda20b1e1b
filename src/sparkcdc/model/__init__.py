"""Pure data model: TSOs, column types, table definitions and change events. No I/O."""

from sparkcdc.model.ddl_action import DDLAction
from sparkcdc.model.events import BootstrapEvent, DDLEvent, Event, ResolvedEvent, Row, RowChange, RowOp, RowsEvent
from sparkcdc.model.table import ColumnInfo, IndexInfo, PartitionInfo, TableInfo

__all__ = [
    "BootstrapEvent",
    "ColumnInfo",
    "DDLAction",
    "DDLEvent",
    "Event",
    "IndexInfo",
    "PartitionInfo",
    "ResolvedEvent",
    "Row",
    "RowChange",
    "RowOp",
    "RowsEvent",
    "TableInfo",
]
