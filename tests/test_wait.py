"""The tests' one poller (tests/support/wait.py): it returns the first true value and, when
its cap runs out, fails naming the state, never a time."""

from __future__ import annotations

import pytest

from tests.support.wait import until, until_sync


def test_until_sync_returns_the_first_true_value() -> None:
    looks = iter([0, [], "ready"])
    assert until_sync(lambda: next(looks), every=0) == "ready"


async def test_until_awaits_an_async_check_and_returns_its_value() -> None:
    looks = iter([None, 3])

    async def look() -> int | None:
        return next(looks)

    assert await until(look, every=0) == 3


def test_a_wait_that_gives_up_names_the_check_or_the_state() -> None:
    with pytest.raises(AssertionError, match=r"^not reached: .*lambda: False"):
        until_sync(lambda: False, cap=0)
    with pytest.raises(AssertionError, match="^item stayed waiting$"):
        until_sync(lambda: None, lambda: "item stayed waiting", cap=0)
