"""Every lesson, downloaded from the built site as its own page says, runs unchanged in a
fresh environment outside any clone (issue 25: "Runs unchanged, for real").

Each lesson's first cell holds its "Run it yourself" paragraph, which this module reads as
a reader does, and holds to one form:

- `<a href="NAME.ipynb?download" download>`: the notebook itself. The link is relative to
  the built page (learn/NAME/), beside which mkdocs-jupyter copies NAME.ipynb
  (`include_source`); the query keeps docs/hooks/kernodeck.py's `notebook_links` from
  reading it as a link to the page;
- `<a href="PATH" download>` for every file the notebook reads or imports, PATH relative
  to learn/ (where the site serves it);
- one line `pip install PACKAGE ...` in a fenced block: everything the notebook needs.

The fast tests hold the page to the notebook without running it: its imports and the files
it names, and those of the bundled modules it imports, are covered by the page's list
and install line, and nothing else is on them. The slow test does what the page says: it
copies each notebook the site serves into a folder of its own under /tmp with only the
files its page links, makes a new virtual environment per install line with only those
packages, and executes every cell. Two substitutions, both what a reader's install gives
too: torch is pinned to the suite's CPU build (the Makefile's TORCH), and `jupyterlab` is
replaced by the part of it that executes a notebook (ipykernel, nbclient, nbformat), not
its web application. Nothing of the repository is on the path: a lesson that imported from
it, or read a file its page does not list, fails here.
"""

from __future__ import annotations

import ast
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import page_blocks, site_build

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "docs" / "learn"
LESSONS = sorted(LEARN.glob("[0-9][0-9]-*.ipynb"))

TORCH = os.environ.get("TORCH", "torch==2.13.0")  # the Makefile's pin (a CPU wheel)
# What runs a notebook without a browser: what `jupyterlab` brings for that.
RUNNER_PACKAGES = ["ipykernel", "nbclient", "nbformat"]
# The distribution that provides each third-party module a lesson may import, and what a
# module needs installed beside it: torch prints "Failed to initialize NumPy" when it
# starts without numpy. IPython comes with jupyterlab (its kernel).
PROVIDED_BY = {"torch": "torch", "numpy": "numpy", "IPython": "jupyterlab"}
ALSO_NEEDS = {"torch": {"numpy"}}
ALWAYS = {"jupyterlab"}  # opens and runs the notebook
# The bundled archive a lesson imports a package from (sys.path takes a zip).
ZIPPED = {"calculators": "calculators.zip"}

_DOWNLOAD = re.compile(r'<a href="([^"]+)" download>')
_INSTALL = re.compile(r"^pip install (.+)$", re.M)
_MISSING = re.compile(r"No module named|Failed to initialize NumPy")

RUNNER = """
import sys, time
import nbformat
from nbclient import NotebookClient

path, folder, out = sys.argv[1:4]
nb = nbformat.read(path, as_version=4)
start = time.perf_counter()
NotebookClient(nb, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": folder}}).execute()
nbformat.write(nb, out)
print(f"{path}: {time.perf_counter() - start:.1f} s")
"""


@dataclass(frozen=True)
class RunItYourself:
    """What a lesson's first cell tells a reader to download and install."""

    notebook: str  # the href of the lesson's own download link
    files: tuple[str, ...]  # paths under learn/, as linked
    packages: tuple[str, ...]  # the install line's names, in its order


def run_it_yourself(path: Path) -> RunItYourself:
    first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
    text = "".join(first["source"])
    links = _DOWNLOAD.findall(text)
    own = [link for link in links if link.split("?")[0].endswith(".ipynb")]
    assert own == [f"{path.stem}.ipynb?download"], f"{path.name}: its own download link"
    lines = _INSTALL.findall(text)
    assert len(lines) == 1, f"{path.name}: one `pip install` line, found {lines}"
    files = tuple(link for link in links if link not in own)
    assert len(set(files)) == len(files), f"{path.name}: a file linked twice"
    return RunItYourself(own[0], files, tuple(lines[0].split()))


def _code(path: Path) -> str:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _imports_and_strings(source: str) -> tuple[set[str], set[str]]:
    """Top-level module names imported (absolute imports, at any depth of the code, and in
    any string that is itself a Python script with imports, such as one a lesson writes
    out for torchrun), and every string constant."""
    modules: set[str] = set()
    strings: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
            if re.search(r"^\s*(import|from) \w", node.value, re.M):
                try:
                    inner, _ = _imports_and_strings(node.value)
                except SyntaxError:
                    continue
                modules |= inner
    return modules, strings


def _served() -> dict[str, Path]:
    """Every file the site serves beside the lessons (its path under learn/) and where it
    comes from: docs/learn itself, the files docs/hooks/kernodeck.py adds from elsewhere
    in the repository (LESSON_FILES), and the calculators' zip it writes (`on_files`)."""
    served = {
        p.relative_to(LEARN).as_posix(): p
        for p in LEARN.iterdir()
        if p.is_file() and p.suffix in (".py", ".json", ".txt")
    }
    hook = page_blocks.hook()
    for site, repo in hook.LESSON_FILES.items():
        served[site.removeprefix("learn/")] = ROOT / repo
    assert '"learn/calculators.zip"' in Path(hook.__file__).read_text(encoding="utf-8")
    served["calculators.zip"] = ROOT / "calculators"  # a zip of the package's sources
    return served


def _module_file(name: str, served: dict[str, Path]) -> str | None:
    """The served file that provides module `name` (a dotted name), if any."""
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        candidate = "/".join(parts[:n]) + ".py"
        if candidate in served:
            return candidate
    return ZIPPED.get(parts[0]) if ZIPPED.get(parts[0]) in served else None


def needs(path: Path) -> tuple[set[str], set[str]]:
    """(files, packages) the notebook needs: the modules it imports, followed into the
    bundled modules' own imports, and every served file named in its code or theirs (by
    its path or by its last part: `CORPUS / "train.txt"`)."""
    served = _served()
    by_name: dict[str, set[str]] = {}
    for f in served:
        by_name.setdefault(f, set()).add(f)
        by_name.setdefault(posixpath.basename(f), set()).add(f)
    files: set[str] = set()
    packages = set(ALWAYS)
    sources = [(path.name, _code(path))]
    seen: set[str] = set()
    while sources:
        where, source = sources.pop()
        modules, strings = _imports_and_strings(source)
        for s in strings:
            files |= by_name.get(s, set())
        for module in sorted(modules):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names:
                continue
            if top in PROVIDED_BY:
                packages.add(PROVIDED_BY[top])
                packages |= ALSO_NEEDS.get(top, set())
                continue
            file = _module_file(module, served)
            assert file is not None, (
                f"{where} imports {module}, which neither the standard library, a package "
                "the lessons install, nor a file the site serves beside them provides"
            )
            files.add(file)
            if file.endswith(".py") and file not in seen:
                seen.add(file)
                sources.append((file, served[file].read_text(encoding="utf-8")))
    return files, packages


# ---- fast: the page against the notebook, nothing run ----------------------------------


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_page_lists_exactly_the_files_and_packages_the_notebook_uses(path: Path) -> None:
    page = run_it_yourself(path)
    files, packages = needs(path)
    assert set(page.files) == files, (
        f"{path.name}: the page lists {sorted(page.files)}, the notebook uses {sorted(files)}"
    )
    assert set(page.packages) == packages, (
        f"{path.name}: `pip install {' '.join(page.packages)}`, the notebook needs "
        f"{sorted(packages)}"
    )
    for f in page.files:  # every listed file is one the site serves
        assert f in _served(), f"{path.name} links {f}, which the site does not serve"


def test_the_check_sees_an_unlisted_import_and_an_unlisted_file(tmp_path: Path) -> None:
    # the rule above on a lesson that imports the diagram and reads the weights
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# x"},
            {
                "cell_type": "code",
                "metadata": {},
                "source": "import json\nfrom tinylm_diagram import tinylm_svg\n"
                'open("tinylm-weights.json")\nSCRIPT = """import numpy\n"""',
            },
        ]
    }
    path = tmp_path / "99-probe.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    files, packages = needs(path)
    assert files == {"tinylm_diagram.py", "tinylm-weights.json"}
    assert packages == {"numpy", "jupyterlab"}
    nb["cells"][1]["source"] = "import pandas"
    path.write_text(json.dumps(nb), encoding="utf-8")
    with pytest.raises(AssertionError, match="imports pandas"):
        needs(path)


def test_the_index_lists_every_file_and_install_line_the_lesson_pages_give() -> None:
    index = (LEARN / "index.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\[`([^`]+)`\]\(\1\)", index))  # [`tinylm.py`](tinylm.py)
    pages = {f for path in LESSONS for f in run_it_yourself(path).files}
    assert listed == pages
    lines = {" ".join(run_it_yourself(path).packages) for path in LESSONS}
    assert set(_INSTALL.findall(index)) == lines


# ---- slow: the built site, and each lesson run as its page says -------------------------


@pytest.fixture(scope="module")
def site_dir() -> Path:
    """The site built once for the whole run (tests/site_build.py)."""
    return site_build.wait(site_build.shared_dir())


def test_each_lesson_page_links_its_own_notebook_and_its_files(site_dir: Path) -> None:
    for path in LESSONS:
        page = site_dir / "learn" / path.stem / "index.html"
        html = page.read_text(encoding="utf-8")
        first = html[: html.index("jp-Cell jp-CodeCell")]  # the first cell comes first
        hrefs = re.findall(r'<a download="" href="([^"]+)">', first)
        targets = {posixpath.normpath(posixpath.join(f"learn/{path.stem}", h)) for h in hrefs}
        targets = {t.split("?")[0] for t in targets}
        expected = {f"learn/{path.stem}/{path.name}"}
        expected |= {f"learn/{f}" for f in run_it_yourself(path).files}
        assert targets == expected, f"{path.stem}: {sorted(targets ^ expected)}"
        for target in targets:
            assert (site_dir / target).is_file(), f"{path.stem} links {target}: not built"
        served = (site_dir / "learn" / path.stem / path.name).read_bytes()
        assert served == path.read_bytes(), f"{path.stem}: the download is the notebook"


def _packages(line: tuple[str, ...]) -> list[str]:
    """The install line as the test installs it: torch pinned, jupyterlab's runner."""
    out = []
    for name in line:
        if name == "torch":
            out.append(TORCH)
        elif name == "jupyterlab":
            out += RUNNER_PACKAGES
        else:
            out.append(name)
    return out


def _clean_env(env_dir: Path) -> dict[str, str]:
    """This process's environment without anything pointing at the repository or its venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(env_dir)
    return env


def _fresh_python(env_dir: Path, packages: list[str]) -> Path:
    """A new virtual environment with only `packages`."""
    venv.create(env_dir, with_pip=True, clear=True)
    python = env_dir / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *packages],
        env=_clean_env(env_dir),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return python


def test_every_downloaded_lesson_runs_unchanged(site_dir: Path, tmp_path: Path) -> None:
    learn = site_dir / "learn"
    notebooks = sorted(learn.glob("*/*.ipynb"))
    assert [p.name for p in notebooks] == [p.name for p in LESSONS]  # each is served
    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER, encoding="utf-8")
    pythons: dict[tuple[str, ...], Path] = {}  # one environment per install line
    failures, times = [], []
    for nb in notebooks:
        page = run_it_yourself(LEARN / nb.name)
        if page.packages not in pythons:
            env_dir = tmp_path / f"venv-{len(pythons)}"
            pythons[page.packages] = _fresh_python(env_dir, _packages(page.packages))
        python = pythons[page.packages]
        folder = tmp_path / nb.stem  # outside the repository: tmp_path is under /tmp
        folder.mkdir()
        shutil.copy(nb, folder / nb.name)
        for name in page.files:  # only what the page links
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(learn / name, folder / name)
        out = tmp_path / f"{nb.stem}.out.ipynb"
        start = time.perf_counter()
        proc = subprocess.run(
            [str(python), str(runner), nb.name, str(folder), str(out)],
            cwd=folder,
            env=_clean_env(python.parents[1]),
            capture_output=True,
            text=True,
            timeout=900,
        )
        times.append(f"{nb.name} {time.perf_counter() - start:.0f} s")
        if proc.returncode != 0:
            failures.append(f"{nb.name}:\n{proc.stderr[-3000:]}")
            continue
        # a missing package that only warns (torch without numpy) fails here too
        for cell in json.loads(out.read_text(encoding="utf-8"))["cells"]:
            for output in cell.get("outputs", []):
                if output.get("name") == "stderr" and _MISSING.search(output["text"]):
                    failures.append(f"{nb.name}, cell {cell['id']}:\n{output['text']}")
    assert not failures, "\n\n".join(failures)
    # the repository was never importable: the runners' interpreters are fresh ones
    for python in pythons.values():
        check = subprocess.run(
            [str(python), "-c", "import calculators"],
            cwd=tmp_path,
            env=_clean_env(python.parents[1]),
            capture_output=True,
            timeout=60,
        )
        assert check.returncode != 0, "the fresh environment sees the repository"
    print("\n".join(times), file=sys.stderr)
