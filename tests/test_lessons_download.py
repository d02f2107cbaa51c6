"""Every lesson, downloaded from the built site, runs unchanged in a fresh environment
outside any clone (issue 25: "Runs unchanged, for real").

The test does what the lessons' index tells a reader to do: it puts each notebook the
site serves (learn/NAME/NAME.ipynb) in one empty folder beside the files the index lists
(tinylm.py, the corpus, the trained weights, the picture's code, the memory probe, the
calculators' zip), makes a new virtual environment, installs the index's packages
(torch pinned to the suite's CPU build, numpy) plus the Jupyter kernel and the runner
(ipykernel, nbclient, which `jupyterlab` brings for a reader), and executes every cell.
Nothing of the repository is on the path: a lesson that imported from it would fail here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from tests import site_build

TORCH = os.environ.get("TORCH", "torch==2.13.0")  # the Makefile's pin (a CPU wheel)
PACKAGES = [TORCH, "numpy", "ipykernel", "nbclient", "nbformat"]
# What the index's table tells a reader to put beside the notebooks (paths in learn/).
BESIDE = [
    "tinylm.py",
    "tinylm-weights.json",
    "tinylm_diagram.py",
    "lesson_charts.py",
    "calculators.zip",
    "corpus/train.txt",
    "corpus/eval.txt",
    "probes/memory.py",
]
RUNNER = """
import sys, time
import nbformat
from nbclient import NotebookClient

path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
NotebookClient(nb, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
print(f"{path}: {time.perf_counter() - start:.1f} s")
"""


@pytest.fixture(scope="module")
def site_dir() -> Path:
    """The site built once for the whole run (tests/site_build.py)."""
    return site_build.wait(site_build.shared_dir())


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with only the lessons' packages."""
    env_dir = tmp_path_factory.mktemp("lessons-venv")
    venv.create(env_dir, with_pip=True, clear=True)
    python = env_dir / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *PACKAGES],
        env=_clean_env(env_dir),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return python


def _clean_env(env_dir: Path) -> dict[str, str]:
    """This process's environment without anything pointing at the repository or its venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    return env


def test_every_downloaded_lesson_runs_unchanged(
    site_dir: Path, fresh_python: Path, tmp_path: Path
) -> None:
    learn = site_dir / "learn"
    notebooks = sorted(learn.glob("*/*.ipynb"))
    indexed = sorted(p.name for p in (Path(__file__).parents[1] / "docs" / "learn").glob("*.ipynb"))
    assert [p.name for p in notebooks] == indexed  # every lesson is served for download
    folder = tmp_path / "my-lessons"  # outside the repository: tmp_path is under /tmp
    folder.mkdir()
    for nb in notebooks:
        shutil.copy(nb, folder / nb.name)
    for name in BESIDE:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(learn / name, folder / name)
    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER, encoding="utf-8")
    env = _clean_env(fresh_python.parents[1])
    failures, times = [], []
    for nb in notebooks:
        start = time.perf_counter()
        proc = subprocess.run(
            [str(fresh_python), str(runner), nb.name, str(folder)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        times.append(f"{nb.name} {time.perf_counter() - start:.0f} s")
        if proc.returncode != 0:
            failures.append(f"{nb.name}:\n{proc.stderr[-3000:]}")
    assert not failures, "\n\n".join(failures)
    # the repository was never importable: the runner's interpreter is the fresh one
    check = subprocess.run(
        [str(fresh_python), "-c", "import calculators"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert check.returncode != 0, "the fresh environment sees the repository"
    print("\n".join(times), file=sys.stderr)
