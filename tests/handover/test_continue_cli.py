"""``bees continue`` usage errors through the CLI (``bees`` fixture; exit 2, nothing asked)."""

from __future__ import annotations

from tests.conftest import BeesRunner


def test_a_digest_that_is_not_sha256_exits_2(bees: BeesRunner) -> None:
    done = bees("continue", "01JH3QX5Z8KZ2W4M6N8P0R2T4V", "--digest", "nothex")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == (
        "error: --digest nothex: not a SHA-256 (64 hex characters)")


def test_repair_on_a_computer_that_never_relinquished_the_item_exits_3(
        bees: BeesRunner) -> None:
    done = bees("relinquish", "01JH3QX5Z8KZ2W4M6N8P0R2T4V", "--repair")
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.splitlines() == [
        "error: this computer has not relinquished item 01JH3QX5Z8KZ2W4M6N8P0R2T4V: only the "
        "computer that released it last can repair its release",
        "hint: run bees relinquish 01JH3QX5Z8KZ2W4M6N8P0R2T4V --repair there"]
