"""``bees continue`` usage errors through a real subprocess (exit 2, nothing asked)."""

from __future__ import annotations

from tests.conftest import BeesRunner


def test_a_digest_that_is_not_sha256_exits_2(bees: BeesRunner) -> None:
    done = bees("continue", "01JH3QX5Z8KZ2W4M6N8P0R2T4V", "--digest", "nothex")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[0] == (
        "error: --digest nothex: not a SHA-256 (64 hex characters)")
