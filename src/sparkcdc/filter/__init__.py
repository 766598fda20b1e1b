"""Table filter rules and event filters of a changefeed (pure: no I/O)."""

from sparkcdc.filter.event_filter import EventFilter, EventFilterRule
from sparkcdc.filter.table_filter import TableFilter, is_system_schema

__all__ = ["EventFilter", "EventFilterRule", "TableFilter", "is_system_schema"]
