"""How many examples a property test tries: its full count in CI and in the whole suite, a
fifth of it in the fast part on a laptop (``-m "not integration and not slow"``).

``tests/conftest.py`` sets :data:`FULL` before any test module is imported; a test writes
``@settings(max_examples=examples(300))``.
"""

from __future__ import annotations

FULL = True
"""False only for the fast part outside CI (the ``CI`` variable unset)."""

FAST_SHARE = 5
"""The fast part tries one example in this many (at least :data:`FAST_LEAST`)."""

FAST_LEAST = 20


def examples(full: int) -> int:
    """Return ``full`` in CI and the whole suite, else ``max(full // 5, 20)`` (never more
    than ``full``)."""
    return full if FULL else min(full, max(full // FAST_SHARE, FAST_LEAST))
