"""MySQL-compatible downstreams: connection targets, idempotent statements and the transactional applier, shared by
the consumers and the MySQL sink."""
