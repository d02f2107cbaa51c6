"""The notebook cache (docs/hooks/notebook_cache.py) and its tracer: an execution is reused
only while every file it read is unchanged, and a change to any of them executes again."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "kd_notebook_cache", ROOT / "docs/hooks/notebook_cache.py"
)
assert _spec and _spec.loader
nc = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = nc  # dataclasses look their module up while it loads
_spec.loader.exec_module(nc)


def _traced(tmp_path: Path, code: str, cwd: Path) -> set[tuple[str, str]]:
    traces = tmp_path / "traces"
    traces.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(nc.TRACER),
        "KERNODECK_TRACE_DIR": str(traces),
        "KERNODECK_TRACE_ROOT": str(cwd),
    }
    subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, check=True)
    return nc.read_traces(traces)


def test_the_tracer_records_reads_listings_writes_programs_and_child_processes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "data.txt").write_text("x")
    (root / "child.txt").write_text("y")
    (tmp_path / "outside.txt").write_text("z")
    code = f"""
import os, shutil, subprocess, sys, tempfile
open("pkg/data.txt").read()
open({str(tmp_path / "outside.txt")!r}).read()
os.listdir("pkg")
open("written.txt", "w").write("w")
scratch = tempfile.mkdtemp(); os.makedirs(scratch + "/a/b"); shutil.rmtree(scratch)
subprocess.run([sys.executable, "-c", "open('child.txt').read()"], env={{"PYTHONPATH": "/x"}})
subprocess.run(["true"])
"""
    seen = _traced(tmp_path, code, root)
    files = {p for k, p in seen if k == "f"}
    # the child started with an environment of its own was traced all the same
    assert {"pkg/data.txt", "written.txt", "child.txt"} <= files
    assert ("l", "pkg") in seen
    assert any(k == "x" and p.endswith("/true") for k, p in seen)
    # outside the repository, and rmtree's descriptor-relative names, are not dependencies
    assert not any("outside" in p or p in ("a", "b") for _, p in seen)


def test_bytecode_counts_as_its_source(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text("VALUE = 1\n")
    code = "import pkg.mod"
    _traced(tmp_path, code, root)  # the first import writes the bytecode
    seen = _traced(tmp_path, code, root)  # the second reads only the bytecode
    assert ("f", "pkg/mod.py") in seen
    assert not any("__pycache__" in p for _, p in seen)


def test_fingerprints_tell_content_listing_and_absence(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(b"abc")
    # sha256("abc"), FIPS 180-2 appendix B.1
    want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert nc.fingerprint("f", "d/a.txt", tmp_path) == want
    before = nc.fingerprint("l", "d", tmp_path)
    (tmp_path / "d" / "__pycache__").mkdir()  # bytecode folders are not part of a listing
    assert nc.fingerprint("l", "d", tmp_path) == before
    (tmp_path / "d" / "b.txt").write_text("")
    assert nc.fingerprint("l", "d", tmp_path) != before
    assert nc.fingerprint("f", "missing.txt", tmp_path) == "absent"


def _notebook(path: Path, *cells: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def _outputs(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [o.get("text", "") for c in nb.cells for o in c.get("outputs", [])]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "helper.py").write_text("FACTOR = 2\n")
    (root / "docs" / "data.txt").write_text("21\n")
    (root / "docs" / "unused.txt").write_text("never read\n")
    _notebook(
        root / "docs" / "page.ipynb",
        "import helper\nvalue = int(open('data.txt').read()) * helper.FACTOR\nprint(value)",
    )
    return root


def test_an_execution_is_reused_until_a_file_it_read_changes(project: Path, tmp_path: Path) -> None:
    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    nb = project / "docs" / "page.ipynb"
    assert cache.lookup(nb, project) is None
    executed, _ = cache.execute(nb, project)
    assert _outputs(executed) == ["42\n"]
    hit = cache.lookup(nb, project)
    assert hit is not None and _outputs(hit.notebook) == ["42\n"]
    deps = {p for _, p, _ in hit.data["dependencies"]}
    assert {"docs/helper.py", "docs/data.txt"} <= deps
    assert "docs/unused.txt" not in deps

    (project / "docs" / "unused.txt").write_text("changed\n")
    assert cache.lookup(nb, project) is not None  # nothing the run read changed
    (project / "docs" / "helper.py").write_text("FACTOR = 3\n")
    assert cache.lookup(nb, project) is None  # an imported module changed
    executed, _ = cache.execute(nb, project)
    assert _outputs(executed) == ["63\n"]
    (project / "docs" / "helper.py").write_text("FACTOR = 2\n")
    assert _outputs(cache.lookup(nb, project).notebook) == ["42\n"]  # the older entry again
    (project / "docs" / "data.txt").write_text("5\n")
    assert cache.lookup(nb, project) is None  # data it read changed


def test_a_clean_clone_elsewhere_reuses_an_execution_that_does_not_print_its_path(
    project: Path, tmp_path: Path
) -> None:
    import shutil

    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    cache.execute(project / "docs" / "page.ipynb", project)
    clone = tmp_path / "clone"
    shutil.copytree(project, clone)
    hit = cache.lookup(clone / "docs" / "page.ipynb", clone)
    assert hit is not None and hit.data["root"] is None


def test_a_changed_notebook_or_environment_is_a_miss(project: Path, tmp_path: Path) -> None:
    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    nb = project / "docs" / "page.ipynb"
    cache.execute(nb, project)
    assert cache.lookup(nb, project) is not None
    assert nc.NotebookCache(tmp_path / "cache", "", True).lookup(nb, project) is None
    text = nb.read_text().replace("print(value)", "print(value + 1)")
    nb.write_text(text)
    assert cache.lookup(nb, project) is None


def test_the_thread_settings_are_part_of_the_key(monkeypatch) -> None:
    before = nc.environment("", False)
    assert before["variables"]["OMP_NUM_THREADS"] == os.environ.get("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    assert nc.environment("", False)["variables"]["OMP_NUM_THREADS"] == "7"


def test_the_key_does_not_depend_on_how_mkdocs_was_started(monkeypatch) -> None:
    # `python -m mkdocs` in the repository puts it first on sys.path, where the project's
    # egg-info is found a second time; the `mkdocs` script does not
    before = nc.environment("", False)
    monkeypatch.syspath_prepend(str(ROOT))
    assert nc.environment("", False) == before


def test_outputs_that_print_the_repository_path_are_kept_for_that_path(
    project: Path, tmp_path: Path
) -> None:
    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    nb = _notebook(
        project / "docs" / "where.ipynb", "import os\nprint(os.path.dirname(os.getcwd()))"
    )
    cache.execute(nb, project)
    hit = cache.lookup(nb, project)
    assert hit is not None and hit.data["root"] == str(project)
    moved = tmp_path / "elsewhere"
    project.rename(moved)
    assert cache.lookup(moved / "docs" / "where.ipynb", moved) is None


def test_a_failing_cell_names_the_notebook_and_the_error(project: Path, tmp_path: Path) -> None:
    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    nb = _notebook(project / "docs" / "bad.ipynb", "raise ValueError('the seed is missing')")
    with pytest.raises(
        nc.NotebookError,
        match=r"(?s)^docs/bad\.ipynb: CellExecutionError.*ValueError: the seed is missing$",
    ):
        cache.execute(nb, project)
    assert cache.entries("docs/bad.ipynb") == []


def test_the_cache_can_be_turned_off_or_moved(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KERNODECK_NOTEBOOK_CACHE", "off")
    assert nc.cache_dir() is None
    monkeypatch.setenv("KERNODECK_NOTEBOOK_CACHE", str(tmp_path))
    assert nc.cache_dir() == tmp_path
    monkeypatch.delenv("KERNODECK_NOTEBOOK_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nc.cache_dir() == tmp_path / "xdg" / "kernodeck" / "notebooks"


def test_the_site_uses_the_hook_and_not_mkdocs_jupyters_own_cache() -> None:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may hold !!python/name tags; none are needed for this check
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *a: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    assert "docs/hooks/notebook_cache.py" in config["hooks"]
    jupyter = next(p["mkdocs-jupyter"] for p in config["plugins"] if isinstance(p, dict))
    assert jupyter["execute"] is True and jupyter["allow_errors"] is False
    assert jupyter["cache"] is False


def test_entries_are_pruned_to_the_newest(project: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(nc, "KEEP", 2)
    cache = nc.NotebookCache(tmp_path / "cache", "", False)
    nb = project / "docs" / "page.ipynb"
    for factor in (3, 4, 5):
        (project / "docs" / "helper.py").write_text(f"FACTOR = {factor}\n")
        cache.execute(nb, project)
    entries = cache.entries("docs/page.ipynb")
    assert sorted(_outputs(e.notebook)[0] for e in entries) == ["105\n", "84\n"]
