"""The root app imports a command's module only when that command runs (issue 16, point 4):
its table of names and help agrees with the modules, and listing imports none of them."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest
import typer
from typer.core import TyperCommand

from bees_cli.cli import main, roothelp
from tests.conftest import EXAMPLE, BeesRunner

PROBE = """
import json, os, sys
sys.argv = ["bees", *json.loads(sys.argv[1])]
hard_exit = os._exit

def leave(code):  # a command that touched Temporal leaves by os._exit (output.exit_hard)
    print("EXIT=" + str(code))
    print("MODULES=" + json.dumps(sorted(sys.modules)), flush=True)
    hard_exit(code)

os._exit = leave
from bees_cli.cli.entry import run
code = 0
try:
    run()
except SystemExit as left:
    code = left.code
print("EXIT=" + str(code))
print("MODULES=" + json.dumps(sorted(sys.modules)))
"""

HEAVY = {"pydantic", "rich", "ruamel", "httpx", "temporalio", "fastapi", "sqlalchemy", "typer"}
COMPLETE = "import sys; sys.argv = ['bees']; from bees_cli.cli.entry import run; run()"


def _holder(modules: tuple[str, ...]) -> dict[str, typer.core.TyperGroup | TyperCommand]:
    """The commands ``modules`` register on a fresh Typer, converted, in typer's order."""
    holder = main._typer()
    for module in modules:
        importlib.import_module(f"bees_cli.cli.{module}").register(holder)
    return dict(typer.main.get_group(holder).commands)


def test_the_table_names_every_root_command_in_help_order_with_its_modules() -> None:
    everything = _holder(tuple(main.COMMAND_MODULES))
    assert list(everything) == list(main.COMMANDS)
    assert {m for entry in main.COMMANDS.values() for m in entry.modules} == set(
        main.COMMAND_MODULES)
    for modules in {entry.modules for entry in main.COMMANDS.values()}:
        named = [name for name, entry in main.COMMANDS.items() if entry.modules == modules]
        assert sorted(_holder(modules)) == sorted(named), modules


def test_each_root_command_shows_the_table_summary_whole_at_80_columns() -> None:
    root = main.whole_command()
    limit = 78 - 6 - max(len(name) for name in main.COMMANDS)
    for name, entry in main.COMMANDS.items():
        assert len(entry.help) <= limit and entry.help.endswith("."), name
        stand_in = TyperCommand(name, help="long", short_help=entry.help, rich_markup_mode=None)
        assert root.commands[name].get_short_help_str(limit) == entry.help  # type: ignore[attr-defined]
        assert stand_in.get_short_help_str(limit) == entry.help


def _loaded(args: list[str], bees_home: object) -> set[str]:
    return _run(args)[1]


def _run(args: list[str]) -> tuple[str, set[str]]:
    """Run ``bees ARGS`` in a fresh interpreter; return its exit code (as text) and the
    modules it imported."""
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)],
                            capture_output=True, text=True, timeout=60, check=False)
    lines = result.stdout.splitlines()
    code = [x for x in lines if x.startswith("EXIT=")][-1].removeprefix("EXIT=")
    line = [x for x in lines if x.startswith("MODULES=")][-1]
    return code, set(json.loads(line.removeprefix("MODULES=")))


CLOUD_CLIENT = {"httpx", "bees_cli.cloud.wire", "bees_cli.cloud.blocking_client",
                "bees_cli.cloud.async_client", "bees_cli.cloud.client_base"}
"""What a command loads only when it makes a Bees Cloud client: the clients, their wire
models and httpx (``bees_cli.cloud.client`` itself names them lazily)."""


def test_the_cloud_client_module_loads_httpx_only_when_a_client_is_made() -> None:
    probe = ("import sys; import bees_cli.cloud.client as c; "
             f"loaded = lambda: sorted(m for m in sys.modules if m in {CLOUD_CLIENT!r}); "
             "print(loaded()); c.CloudClient('http://cloud.test', 'tok').close(); "
             "print(loaded())")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == ["[]", str(["bees_cli.cloud.blocking_client",
                                                   "bees_cli.cloud.client_base",
                                                   "bees_cli.cloud.wire", "httpx"])]


@pytest.mark.parametrize(("args", "code"), [
    (["schedules", "-w", str(EXAMPLE)], "0"),
    (["schedules", "-w", str(EXAMPLE), "--json"], "0"),
    (["item", "create", "weekly-report", "-w", str(EXAMPLE)], "0"),
    (["doctor", "-w", str(EXAMPLE)], "1"),  # no engine running here; no model agent to probe
])
def test_without_a_sign_in_no_cloud_client_is_loaded(args: list[str], code: str,
                                                     bees_home: object) -> None:
    """No sign-in: ``sync_cloud_for``, ``cloud_for`` and ``ask_owner`` return None, and
    the command imports neither the clients nor httpx."""
    ran, loaded = _run(args)
    assert ran == code
    assert "bees_cli.cloud.client" in loaded  # the command asked for a client: None
    assert loaded & CLOUD_CLIENT == set()


@pytest.mark.parametrize(("args", "modules", "heavy"), [
    (["--help"], set(), set()),
    ([], set(), {"typer"}),  # the usage screen is typer's
    (["--version"], set(), set()),
    # the usual lines of validate and status are parsed without typer (bees_cli.cli.quick)
    (["validate", str(EXAMPLE)], set(), {"pydantic", "ruamel"}),
    (["validate", "-w", str(EXAMPLE), "--json"], set(), {"pydantic", "ruamel"}),
    (["status"], set(), {"pydantic"}),
    (["status", "--mine", "--all", "--wide"], set(), {"pydantic"}),
    # typer 0.29 builds a pydantic TypeAdapter for each parameter it shows or parses
    (["validate", "--help"], {"bees_cli.cli.workspace"}, {"pydantic", "typer"}),
    (["validate", str(EXAMPLE), "--nope"], {"bees_cli.cli.workspace"}, {"pydantic", "typer"}),
    (["status", "-h"], {"bees_cli.cli.engine", "bees_cli.cli.control"}, {"pydantic", "typer"}),
    (["item", "--help"], {"bees_cli.cli.engine", "bees_cli.cli.control"}, {"pydantic", "typer"}),
    (["checkpoint", "verify", "--help"], {"bees_cli.cli.checkpoint"}, {"pydantic", "typer"}),
])
def test_only_the_asked_command_module_is_imported(args: list[str], modules: set[str],
                                                   heavy: set[str], bees_home: object) -> None:
    loaded = _loaded(args, bees_home)
    command_modules = {f"bees_cli.cli.{m}" for m in main.COMMAND_MODULES}
    assert loaded & command_modules == modules
    assert {m.split(".")[0] for m in loaded} & HEAVY == heavy


def test_root_help_lists_the_table_and_a_typo_gets_close_names(bees: BeesRunner) -> None:
    shown = bees("--help")
    assert shown.returncode == 0
    listed = [line for line in shown.stdout.split("Work items:\n")[1].splitlines()
              if line.startswith("  ")]
    assert sorted(line.split()[0] for line in listed) == sorted(main.COMMANDS)
    assert listed[1] == "  item        Work items: create, show, watch, accept, cancel."
    assert listed[15] == "  schedules   List the schedules, their next times and last fires here."
    typo = bees("statu")
    assert typo.returncode == 2
    assert typo.stderr.splitlines()[-1] == "Error: No such command 'statu'. Did you mean 'status'?"


def test_completion_lists_root_commands_from_the_table(bees_home: object) -> None:
    env = {**os.environ, "_BEES_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "bees i"}
    done = subprocess.run([sys.executable, "-c", COMPLETE], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0
    assert done.stdout == ('_arguments \'*: :(("init":"Create a starter workspace (draft → '
                           'review → done)."\n"item":"Work items\\\\: create, show, watch, '
                           'accept, cancel."))\'\n')


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--version"]])
def test_root_help_and_version_do_not_import_typer(args: list[str], bees_home: object) -> None:
    loaded = _loaded(args, bees_home)
    assert {m.split(".")[0] for m in loaded} & {"typer", "click", "pydantic"} == set()


def test_the_typer_free_root_help_is_typer_own_at_every_width(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    command = typer.main.get_command(main.app)  # built once; the width is read at each help
    for columns in range(30, 130):
        monkeypatch.setenv("COLUMNS", str(columns))
        with pytest.raises(SystemExit) as left:
            command.main(["--help"], prog_name="bees")
        assert left.value.code == 0
        assert capsys.readouterr().out == roothelp.render() + "\n", columns


def test_help_and_version_through_the_entry_point(bees: BeesRunner) -> None:
    from bees_cli import __version__

    shown = bees("-h", env={"COLUMNS": "80"})
    assert (shown.returncode, shown.stdout) == (0, roothelp.render(78) + "\n")
    version = bees("--version")
    assert (version.returncode, version.stdout) == (0, f"bees {__version__}\n")
