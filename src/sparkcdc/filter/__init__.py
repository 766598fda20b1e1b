"""Table filter rules and event filters of a changefeed (pure: no I/O)."""

from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.filter.system_schemas import SYSTEM_SCHEMAS, is_system_schema
from sparkcdc.filter.table_filter import TableFilter

__all__ = ["SYSTEM_SCHEMAS", "EventFilter", "EventFilterRule", "TableFilter", "is_system_schema"]
