"""Spark adapters: the changefeed query (relay source -> storage sink), its runner, and the ticdc source."""
