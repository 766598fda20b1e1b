"""sparkcdc: TiCDC-compatible change data capture whose data pipeline runs on Apache Spark."""

__version__ = "0.1.0"
