"""docs/add-ons.md says what works: each of its YAML blocks is a valid add-on file, and its
local MCP add-on is the one ``examples/tracker-mcp`` ships."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

from bees_cli.workspace.loader import check_folder
from tests.docs.test_docs_commands import DOCS, REPO, fenced_blocks

PAGE = DOCS / "add-ons.md"


def yaml_blocks() -> list[str]:
    return [body for lang, body in fenced_blocks(PAGE.read_text("utf-8")) if lang == "yaml"]


def test_every_yaml_block_of_the_page_is_a_valid_addon(tmp_path: Path) -> None:
    blocks = yaml_blocks()
    assert len(blocks) == 3
    (tmp_path / "bees.yaml").write_text("name: docs\n")
    (tmp_path / "addons").mkdir()
    for index, body in enumerate(blocks):
        (tmp_path / "addons" / f"a{index}.yaml").write_text(body + "\n")
    checked = check_folder(tmp_path)
    assert [p.format() for p in checked.problems] == []
    assert sorted(checked.loaded.objects["addons"]) == ["a0", "a1", "a2"]


def test_the_pages_local_mcp_addon_is_the_examples() -> None:
    yaml = YAML(typ="safe")
    shown = yaml.load(yaml_blocks()[1])
    shipped = yaml.load((REPO / "examples" / "tracker-mcp" / "addons" / "tracker.yaml")
                        .read_text("utf-8"))
    assert (shown["mcp"], shown["kinds"]) == (shipped["mcp"], shipped["kinds"])
