"""TiCDC's ``csv`` protocol for storage sinks: ``CsvConfig``, ``CsvEncoder``, ``CsvDecoder``."""
