"""Sinks: one protocol and one registry keyed by sink URI scheme (``sparkcdc.sink.base``)."""
