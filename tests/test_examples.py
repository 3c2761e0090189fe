"""Property tests keep their full example count in CI and in the whole suite
(tests/support/examples.py); only the fast part on a laptop tries fewer."""

from __future__ import annotations

import os

import pytest

from tests.support import examples


def test_ci_and_the_whole_suite_try_every_example(request: pytest.FixtureRequest) -> None:
    fast = "not integration" in (request.config.getoption("markexpr") or "")
    assert examples.FULL is (bool(os.environ.get("CI")) or not fast)
    if examples.FULL:
        assert examples.examples(300) == 300


def test_the_fast_part_tries_a_fifth_and_never_more_than_the_full_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(examples, "FULL", False)
    assert [examples.examples(n) for n in (300, 60, 10)] == [60, 20, 10]
