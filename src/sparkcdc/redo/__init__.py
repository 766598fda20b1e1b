"""The redo log of a MySQL-sink changefeed (``[consistent] level = "eventual"``): log files written by the executors
before the batch is applied, the meta written by the driver, and what ``cdc redo apply`` reads."""
