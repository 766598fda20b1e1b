"""Writer routes of topic partitions: a topic's partitions spread over the writer tasks."""

from __future__ import annotations

import random
import string

from sparkcdc.sink.kafka.encoder import pack, route_of, unpack


def test_consecutive_partitions_go_to_different_writers() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        topic = "".join(rng.choices(string.ascii_letters + "_-.", k=rng.randint(1, 40)))
        for writers in (2, 3, 4, 8):
            tasks = {route_of(topic, p) % writers for p in range(writers)}
            assert len(tasks) == writers, (topic, writers)
    assert all(route_of("t", p) >= 0 for p in range(100))


def test_payload_round_trip() -> None:
    assert unpack(pack("db_t", 2, [b"a", b"", b"\x00\xff"])) == ("db_t", 2, (b"a", b"", b"\x00\xff"), None)
    # avro: keys ride along (a tombstone is a key with an empty value); all-None keys are left out
    assert unpack(pack("t", 0, [b"v", b""], [b"k1", b"k2"])) == ("t", 0, (b"v", b""), (b"k1", b"k2"))
    assert unpack(pack("t", 0, [b"v"], [None])) == ("t", 0, (b"v",), None)
