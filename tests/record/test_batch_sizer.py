"""Push batches sized by time (issue 29, point 2): toward the target, at most doubling,
halved after a batch that was not answered, within the bounds and the wire's cap."""

from __future__ import annotations

from bees_cli.cloud import wire
from bees_cli.record.sync import BatchSizer


def test_the_size_moves_toward_the_target_duration_and_stays_within_the_cap() -> None:
    sizer = BatchSizer(target=1.0, first=100)
    assert sizer.size == 100
    sizer.took(100, 0.05)  # 2,000/s: 2,000 would take 1 s, but it grows at most 2x
    assert sizer.size == 200
    sizer.took(200, 0.1)
    assert sizer.size == 400
    sizer.took(400, 0.1)
    assert sizer.size == 800
    sizer.took(800, 0.1)
    assert sizer.size == wire.MAX_BATCH  # the cap Bees Cloud takes
    sizer.took(1000, 4.0)  # 250/s: a 1 s batch is 250
    assert sizer.size == 250
    sizer.took(250, 0.5)
    assert sizer.size == 500


def test_a_batch_not_answered_halves_the_next_and_never_below_least() -> None:
    sizer = BatchSizer(first=6, least=2)
    sizer.failed()
    assert sizer.size == 3
    sizer.failed()
    assert sizer.size == 2
    sizer.failed()
    assert sizer.size == 2
    assert BatchSizer(first=5000).size == wire.MAX_BATCH
    assert BatchSizer(first=0).size == 1
