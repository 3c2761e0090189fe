"""Build hook: the wheel carries the model example, so ``bees demo`` works from any install.

Everything else is in ``pyproject.toml``. Why a hook: package data must live inside the
package, and the example stays in ``examples/`` where the docs and tests name it; the wheel
gets a copy at ``bees_cli/examples/weekly-report-model`` (an editable install reads
``examples/`` itself, :func:`bees_cli.usecases.demo.example_folder`).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("weekly-report-model",)
"""The examples the wheel carries (``bees demo`` copies the first)."""


class BuildWithExamples(build_py):
    """``build_py``, then a copy of each shipped example into the built package."""

    def run(self) -> None:
        super().run()
        for name in SHIPPED:
            source = Path(__file__).parent / "examples" / name
            target = Path(self.build_lib) / "bees_cli" / "examples" / name
            if self.dry_run or not source.is_dir():
                continue
            shutil.copytree(source, target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("*.eml", "__pycache__"))


setup(cmdclass={"build_py": BuildWithExamples})
