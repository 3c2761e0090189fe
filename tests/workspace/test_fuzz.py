"""Whatever a workspace file holds, checking it gives problems, never an exception."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bees_cli.workspace.loader import check_folder
from tests.support.examples import examples
from tests.workspace.corpus_cases import BASE

YAMLISH = st.lists(
    st.sampled_from(
        [
            "a: 1\n",
            "runner:\n",
            "  command: [x]\n",
            "- x\n",
            "  - y\n",
            "\t",
            " ",
            "&a ",
            "*a",
            "{",
            "}",
            "[",
            "]",
            ": ",
            "'",
            '"',
            "no",
            "9:00",
            "!!python/object:os.system",
            "\n",
            "<<: *a\n",
            "? ",
            "%YAML 1.1\n",
            "---\n",
            "...\n",
            "#",
            "enabled: yes\n",
            "\x00",
            "é",
        ]
    ),
    max_size=30,
).map("".join)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the corpus base; each example overwrites the two agent files."""
    target = tmp_path_factory.mktemp("fuzz") / "w"
    shutil.copytree(BASE, target)
    return target


@settings(max_examples=examples(60), deadline=None)
@given(text=YAMLISH, data=st.binary(max_size=64))
def test_any_agent_file_gives_problems_not_exceptions(root: Path, text: str, data: bytes) -> None:
    (root / "agents" / "writer.yaml").write_text(text, "utf-8")
    (root / "agents" / "reviewer.yaml").write_bytes(data)
    problems = check_folder(root).problems
    assert all(p.file and p.line >= 1 and p.column >= 1 and p.message for p in problems)
