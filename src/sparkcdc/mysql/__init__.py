"""MySQL-compatible downstreams: connection targets, idempotent statements, the transactional applier and the apply
engine over it, shared by the consumers (their MySQL target) and the MySQL sink (its writer)."""
