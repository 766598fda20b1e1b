"""Which heartbeat reservation a transaction applies: the largest made since the previous transaction ended."""

from __future__ import annotations

from sparkcdc.capture.reservations import Reservations, position_key


def test_a_transaction_applies_the_largest_reservation_since_the_previous_one_ended() -> None:
    r = Reservations({("bin.000001", 500): 10, ("bin.000001", 900): 30})
    r.add("bin.000001", 700, 20)
    r.add("bin.000002", 4, 40)  # a heartbeat between a rotate and the events after it: no transaction starts here
    assert r.largest_in(position_key("bin.000001", 400), position_key("bin.000001", 800)) == 20
    assert r.largest_in(position_key("bin.000001", 500), position_key("bin.000001", 500)) == 10  # both ends count
    assert r.largest_in(position_key("bin.000001", 901), position_key("bin.000002", 390)) == 40
    assert r.largest_in(position_key("bin.000002", 5), position_key("bin.000002", 900)) == 0
    assert len(r) == 4


def test_a_repeated_reservation_at_one_position_keeps_the_larger_tso() -> None:
    r = Reservations()
    r.add("bin.000003", 120, 50)
    r.add("bin.000003", 120, 70)
    r.merge({("bin.000003", 120): 60})
    assert len(r) == 1
    assert r.largest_in(position_key("bin.000003", 0), position_key("bin.000003", 120)) == 70


def test_a_puller_without_a_file_name_yet_sorts_before_every_file() -> None:
    assert position_key("", 4) < position_key("bin.000001", 4)
