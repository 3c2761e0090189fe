"""Start-up time of `bees --help`, `validate`, `status`, `item show` and `checkpoint verify`.

Run: ``.venv/bin/python benchmarks/cli_startup.py [--rounds N] [--venv PATH]`` (``--quick``:
one round in this interpreter's environment, editable or not, a smoke run). The floor is
``python -c pass`` in a virtual environment where Bees is installed as users get it (``pip
install .``, not editable: an editable install puts a path finder in ``site`` that every
interpreter imports, which inflates the floor). The script builds that environment in a
temporary folder (about a minute; ``--venv PATH`` reuses one built with ``python -m venv PATH
&& PATH/bin/pip install .``) and runs each command there as a fresh process, one warm-up
each, then N rounds (default 15, at least 5) interleaved so machine noise hits all alike.
The commands that read run against a computer (a temporary ``BEES_HOME``) with one item
of ``examples/weekly-report`` (``bees item create``, by the measured environment's
``bees``): ``bees status``, ``bees item show ID``, and ``bees checkpoint verify`` of a
small run folder (10 files of 10 kB: start-up, not hashing; benchmarks/checkpoint.py
times the hashing). Prints each command's median and spread (min–max) and its ratio to
the floor, in wall time and in CPU time (user + system, which other load moves less;
issue 29's goal: each ≤ 3×), and the load. ``--base-venv PATH`` (another non-editable
environment, e.g. main's) adds its commands to the same rounds, as ``base: …``, for
before/after figures from one run. It measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "weekly-report"
FLOOR = "python -c pass"
GOALS = {"bees --help": 3.0, "bees validate examples/weekly-report": 3.0,
         "bees status": 3.0, "bees item show ID": 3.0, "bees checkpoint verify DIR": 3.0}


def build_venv(where: Path) -> Path:
    """Create a virtual environment at ``where`` with Bees installed from REPO, not editable.

    Returns:
        Its ``bin`` folder.
    """
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    pip = subprocess.run([str(where / "bin" / "pip"), "install", "-q", str(REPO)],
                         capture_output=True, text=True, check=False)
    if pip.returncode != 0:
        raise SystemExit(f"pip install . failed:\n{pip.stderr}")
    return where / "bin"


def check_not_editable(bin_dir: Path) -> None:
    """Refuse an environment where ``bees_cli`` is imported from the repository (editable)."""
    found = subprocess.run(
        [str(bin_dir / "python"), "-c", "import bees_cli, sys; print(bees_cli.__file__)"],
        check=True, capture_output=True, text=True, cwd="/",
    ).stdout.strip()
    if Path(found).resolve().is_relative_to(REPO):
        raise SystemExit(f"bees_cli is imported from the repository ({found}): an editable "
                         "install; build one with `pip install .` or leave out --venv")


def prepare(home: Path, bin_dir: Path) -> tuple[str, Path, str]:
    """Make the computer at ``home`` hold one item of the example (created by the ``bees``
    in ``bin_dir``) and write a run folder with a checkpoint; return the item's id, the
    folder and its checkpoint's SHA-256."""
    import sqlite3
    from datetime import UTC, datetime

    sys.path.insert(0, str(REPO))
    from bees_cli.handover.checkpoint import write_checkpoint

    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "BEES_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    subprocess.run([str(bin_dir / "bees"), "item", "create", "weekly-report", "-w",
                    str(EXAMPLE)], env=env, check=True, capture_output=True, cwd=home)
    db = sqlite3.connect(home / "data" / "record.db")
    (item,) = db.execute("SELECT id FROM items").fetchone()
    db.close()
    folder = home / "run"
    for n in range(10):
        (folder / f"stage{n % 2}").mkdir(parents=True, exist_ok=True)
        (folder / f"stage{n % 2}" / f"file{n}.bin").write_bytes(os.urandom(10_000))
    info = write_checkpoint(
        folder, item_id="bench", workspace="bench", process_digest="bench",
        restart_stages={"main": "Draft"}, computer="bench", machine_id="0" * 32,
        journal=[], now=datetime.now(UTC))
    return item, folder, info.sha256


def commands(bin_dir: Path, home: Path, base: Path | None = None) -> dict[str, list[str]]:
    """Label -> argv of each measured command in the environment at ``bin_dir`` (and, as
    ``base: …``, the ``bees`` commands of the one at ``base``), the reading ones against
    the computer at ``home`` (:func:`prepare` makes it)."""
    item, folder, digest = prepare(home, bin_dir)

    def bees(where: Path) -> dict[str, list[str]]:
        return {
            "bees --help": [str(where / "bees"), "--help"],
            "bees validate examples/weekly-report": [str(where / "bees"), "validate",
                                                     str(EXAMPLE)],
            "bees status": [str(where / "bees"), "status"],
            "bees item show ID": [str(where / "bees"), "item", "show", item],
            "bees checkpoint verify DIR": [str(where / "bees"), "checkpoint", "verify",
                                           str(folder), "--digest", digest],
        }

    found = {FLOOR: [str(bin_dir / "python"), "-c", "pass"], **bees(bin_dir)}
    if base is not None:
        found.update({f"base: {label}": argv for label, argv in bees(base).items()})
    return found


def _time_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds of wall time and of CPU time (user + system) of one run of ``argv``; raises
    if it fails."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, argv)
    return wall, usage.ru_utime + usage.ru_stime


def measure(argvs: dict[str, list[str]], rounds: int,
            home: Path) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Return label -> seconds of wall time, and label -> seconds of CPU time, of each of
    ``rounds`` interleaved rounds (after one warm-up), on the computer at ``home``."""
    env = {**os.environ, "BEES_HOME": str(home), "COLUMNS": "80"}
    env.pop("PYTHONPATH", None)
    samples: dict[str, list[float]] = {label: [] for label in argvs}
    cpu: dict[str, list[float]] = {label: [] for label in argvs}
    for argv in argvs.values():
        _time_once(argv, env)
    for _ in range(rounds):
        for label, argv in argvs.items():
            wall, used = _time_once(argv, env)
            samples[label].append(wall)
            cpu[label].append(used)
    return samples, cpu


def report(samples: dict[str, list[float]], rounds: int, what: str = "wall",
           install: str = "non-editable install") -> None:
    """Print median (min–max) per command and its ratio to the floor (per-round spread)."""
    floor = samples[FLOOR]
    width = max(len(label) for label in samples)
    print(f"{what}: {rounds} interleaved rounds, {install}; median (min–max)")
    for label, times in samples.items():
        line = (f"{label:<{width}}  {statistics.median(times) * 1e3:6.1f} ms "
                f"({min(times) * 1e3:.1f}–{max(times) * 1e3:.1f})")
        if label != FLOOR:
            ratios = [t / f for t, f in zip(times, floor, strict=True)]
            line += (f"  {statistics.median(times) / statistics.median(floor):4.1f}× floor "
                     f"(per round {min(ratios):.1f}–{max(ratios):.1f}; "
                     f"goal ≤ {GOALS[label.removeprefix('base: ')]:.0f}×)")
        print(line)


def main() -> int:
    """Parse the options, build or check the environment, measure, print; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds (default 15, >= 5)")
    parser.add_argument("--venv", type=Path, help="a non-editable environment to reuse")
    parser.add_argument("--base-venv", type=Path,
                        help="another non-editable environment measured in the same rounds")
    parser.add_argument("--quick", action="store_true",
                        help="one round in this interpreter's environment, editable or not "
                        "(a smoke run: the figures mean little)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    elif args.rounds < 5:
        parser.error("--rounds must be at least 5")
    with tempfile.TemporaryDirectory(prefix="bees-startup-") as tmp:
        if args.quick:
            bin_dir = Path(sys.executable).parent
        elif args.venv is not None:
            bin_dir = args.venv / "bin"
        else:
            print("building a non-editable environment (pip install .) ...", file=sys.stderr)
            bin_dir = build_venv(Path(tmp) / "venv")
        if not args.quick:
            check_not_editable(bin_dir)
        base = None if args.base_venv is None else args.base_venv / "bin"
        if base is not None:
            check_not_editable(base)
        home = Path(tmp) / "home"
        load = os.getloadavg()[0]
        samples, cpu = measure(commands(bin_dir, home, base), args.rounds, home)
    print(f"load {load:.1f} before, {os.getloadavg()[0]:.1f} after on {os.cpu_count()} cores")
    install = "this environment (--quick)" if args.quick else "non-editable install"
    report(samples, args.rounds, install=install)
    report(cpu, args.rounds, "CPU time (user + system; steadier on a loaded machine)", install)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
