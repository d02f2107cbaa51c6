"""probes.manifest: real commands in a temporary git repository, recorded, refused,
interrupted and killed; hashes checked against the real `sha256sum`; every manifest the
tests write is validated against docs/data/manifest.schema.json."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.manifest import hashing, lineage, machine, record
from probes.manifest.table import render_csv, render_text, rows

jsonschema = pytest.importorskip("jsonschema", reason="the schema test needs jsonschema")

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "docs" / "data" / "manifest.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("sha256sum") is None,
    reason="needs git and sha256sum",
)

TRAIN = """\
import json, os, signal, sys, time
cfg = json.load(open("config.json"))
os.makedirs("out", exist_ok=True)
with open("out/weights.bin", "wb") as f:
    f.write(bytes(range(256)) * 40)
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
if mode.startswith("exit"):
    sys.exit(int(mode[4:]))
if mode in ("wait", "count-sigint"):
    got = []
    if mode == "count-sigint":
        signal.signal(signal.SIGINT, lambda s, f: got.append(s))
    open("started", "w").write(str(os.getpid()))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not got:
        time.sleep(0.01)
    time.sleep(0.2)  # a second, duplicated SIGINT would arrive here
    open("sigints", "w").write(str(len(got)))
    sys.exit(0)
metrics = {"loss": 2.0 * cfg["lr"], "diverged": float("nan"), "run": os.environ["KERNODECK_RUN_ID"]}
json.dump(metrics, open("metrics.json", "w"))
"""


def manifest_of(path: Path) -> dict[str, Any]:
    """Read a manifest the tests wrote and hold it to the JSON Schema."""
    data = json.loads(path.read_text())
    errors = [f"{list(e.path)}: {e.message}" for e in VALIDATOR.iter_errors(data)]
    assert errors == [], errors
    return data


def sha256sum(*paths: Path | str, cwd: Path | None = None) -> list[str]:
    """The digests the real `sha256sum` prints."""
    out = subprocess.run(
        ["sha256sum", *map(str, paths)], capture_output=True, text=True, check=True, cwd=cwd
    ).stdout
    return [line.split()[0] for line in out.splitlines()]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with a training script, its config and a data folder."""
    r = tmp_path / "project"
    (r / "data" / "splits").mkdir(parents=True)
    (r / "train.py").write_text(TRAIN)
    (r / "config.json").write_text(json.dumps({"lr": 0.001, "optim": {"betas": [0.9, 0.95]}}))
    (r / "data" / "train.jsonl").write_bytes(os.urandom(3 * hashing.CHUNK_BYTES + 17))
    (r / "data" / "splits" / "eval.jsonl").write_text('{"x": 1}\n')
    (r / ".gitignore").write_text("data/\nout/\nruns/\nmetrics.json\nstarted\nsigints\n")
    git(r, "init", "-q")
    git(r, "add", "train.py", "config.json", ".gitignore")
    git(r, "commit", "-q", "-m", "baseline")
    return r


def manifest(repo: Path, *argv: str, mode: str = "ok") -> subprocess.CompletedProcess[str]:
    """`python -m probes manifest run ARGV -- python train.py MODE` in the repository."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "probes", "manifest", "run", *argv, "--", sys.executable,
         "train.py", mode],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def start(repo: Path, *argv: str, mode: str) -> subprocess.Popen[str]:
    """The same, started in its own session (no controlling terminal), once the command
    has written its pid."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "probes", "manifest", "run", *argv, "--", sys.executable,
         "train.py", mode],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    for _ in range(3000):
        if (repo / "started").exists() and (repo / "started").read_text():
            return p
        if p.poll() is not None:
            break
        time.sleep(0.01)
    p.kill()
    raise AssertionError(f"the command did not start: {p.communicate()}")


def finish(p: subprocess.Popen[str]) -> int:
    """Wait for the manifest process, closing its pipes; its exit status."""
    p.communicate(timeout=60)
    return p.returncode


FULL = (
    "--data", "train=data/train.jsonl", "--data", "splits=data/splits", "--config",
    "config.json", "--seed", "7", "--seed", "8", "--param", "lr=0.001", "--param",
    "note=baseline", "--price", "2.5", "--gpus", "4", "--outputs", "out", "--metrics",
    "metrics.json",
)  # fmt: skip


def test_a_real_command_is_recorded(repo: Path) -> None:
    done = manifest(repo, "--out", "runs/base.json", *FULL)
    assert done.returncode == 0, done.stderr
    m = manifest_of(repo / "runs" / "base.json")
    assert m["id"] == "base" and m["status"] == "ok" and m["parent"] is None
    assert m["exit"] == {"returncode": 0, "signal": None, "interrupted_by": None, "error": None}
    assert m["command"] == [sys.executable, "train.py", "ok"]
    assert m["git"]["commit"] == git(repo, "rev-parse", "HEAD")
    assert m["git"]["dirty"] is False and m["git"]["diff_file"] is None
    # data: the file's digest is sha256sum's; the folder's is the digest of sha256sum's lines
    train, splits = m["data"]
    assert (train["name"], train["kind"]) == ("train", "file")
    assert [train["sha256"]] == sha256sum(repo / "data" / "train.jsonl")
    assert train["bytes"] == 3 * hashing.CHUNK_BYTES + 17
    listing = subprocess.run(
        "find . -type f | sed 's|^\\./||' | LC_ALL=C sort | xargs sha256sum | sha256sum",
        shell=True, cwd=repo / "data" / "splits", capture_output=True, text=True, check=True,
    ).stdout.split()[0]  # fmt: skip
    assert splits["sha256"] == listing
    assert splits["files"][0]["sha256"] == sha256sum(repo / "data" / "splits" / "eval.jsonl")[0]
    assert m["config"]["format"] == "json"
    assert m["config"]["content"] == {"lr": 0.001, "optim": {"betas": [0.9, 0.95]}}
    assert m["params"] == {"lr": 0.001, "note": "baseline"} and m["seeds"] == [7, 8]
    # cost: wall hours x GPUs x price
    cost = m["cost"]
    assert cost["gpus"] == 4 and cost["gpus_from"] == "--gpus"
    assert cost["gpu_hours"] == pytest.approx(m["wall_seconds"] / 3600 * 4, rel=1e-12)
    assert cost["usd"] == pytest.approx(cost["gpu_hours"] * 2.5, rel=1e-12)
    (out,) = m["outputs"]
    (weights,) = out["files"]
    assert weights["path"] == "weights.bin" and weights["written_by_run"] is True
    assert [weights["sha256"]] == sha256sum(repo / "out" / "weights.bin")
    # the metrics as written, a NaN kept as text, and the run id the command was given
    assert m["metrics"] == {"loss": 0.002, "diverged": "NaN", "run": "base"}
    assert m["metrics_file"]["sha256"] == sha256sum(repo / "metrics.json")[0]
    assert m["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert m["machine"]["packages"]["pytest"] == pytest.__version__


def test_a_dirty_tree_is_refused_then_recorded_with_its_diff(repo: Path) -> None:
    (repo / "config.json").write_text(json.dumps({"lr": 0.0003, "optim": {}}))
    done = manifest(repo, "--out", "runs/dirty.json")
    assert done.returncode == 2
    assert done.stderr.startswith("error: the git tree at ") and done.stderr.count("\n") == 1
    assert "config.json" in done.stderr and "--allow-dirty" in done.stderr
    assert not (repo / "runs").exists()  # nothing ran, nothing written

    done = manifest(repo, "--out", "runs/dirty.json", "--allow-dirty")
    assert done.returncode == 0, done.stderr
    m = manifest_of(repo / "runs" / "dirty.json")
    g = m["git"]
    assert g["dirty"] is True and g["changed"] == ["config.json"] and g["diff_file"] == "dirty.diff"
    diff = repo / "runs" / "dirty.diff"
    assert [g["diff_sha256"]] == sha256sum(diff)
    # the saved diff restores the run's code on a clean checkout of its commit
    git(repo, "checkout", "--", "config.json")
    git(repo, "apply", str(diff))
    assert json.loads((repo / "config.json").read_text()) == {"lr": 0.0003, "optim": {}}


def test_outside_git_the_commit_is_null_and_the_run_goes_ahead(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "config.json").write_text('{"lr": 1}')
    done = manifest(tmp_path, "--out", "runs/", "--metrics", "metrics.json")
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "runs").glob("*.json")
    m = manifest_of(path)
    assert m["git"]["commit"] is None and m["git"]["error"] == "not a git repository"
    assert m["id"] == path.stem and m["metrics"]["run"] == path.stem  # a generated id
    assert len(m["id"]) == len("20250101T000000Z-abcdef")


def test_a_failed_command_is_recorded_with_its_exit_code(repo: Path) -> None:
    done = manifest(repo, "--out", "runs/f.json", "--metrics", "metrics.json", mode="exit3")
    assert done.returncode == 3
    m = manifest_of(repo / "runs" / "f.json")
    assert m["status"] == "failed" and m["exit"]["returncode"] == 3
    assert m["metrics"] is None and m["metrics_file"]["error"] == "not written"


def test_a_command_that_cannot_start_is_recorded(repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = ["manifest", "run", "--out", "runs/n.json", "--", "./no-such-program"]
    done = subprocess.run(
        [sys.executable, "-m", "probes", *argv], cwd=repo, env=env, capture_output=True, text=True
    )
    assert done.returncode == 127
    m = manifest_of(repo / "runs" / "n.json")
    assert m["status"] == "failed" and m["exit"]["returncode"] is None
    assert m["exit"]["error"].startswith("command not found: './no-such-program'")


def test_a_killed_command_leaves_a_manifest_with_its_signal(repo: Path) -> None:
    p = start(repo, "--out", "runs/k.json", mode="wait")
    os.kill(int((repo / "started").read_text()), signal.SIGKILL)  # as the OOM killer does
    assert finish(p) == 128 + signal.SIGKILL
    m = manifest_of(repo / "runs" / "k.json")
    assert m["status"] == "killed" and m["exit"]["signal"] == "SIGKILL"
    assert m["exit"]["returncode"] == -signal.SIGKILL and m["exit"]["interrupted_by"] is None


def test_sigterm_to_the_manifest_reaches_the_command_and_is_recorded(repo: Path) -> None:
    p = start(repo, "--out", "runs/t.json", mode="wait")
    p.send_signal(signal.SIGTERM)
    assert finish(p) == 128 + signal.SIGTERM
    m = manifest_of(repo / "runs" / "t.json")
    assert m["status"] == "interrupted"
    assert m["exit"]["interrupted_by"] == "SIGTERM" and m["exit"]["signal"] == "SIGTERM"


def test_a_sigint_not_from_a_terminal_is_forwarded_once(repo: Path) -> None:
    p = start(repo, "--out", "runs/i.json", mode="count-sigint")
    p.send_signal(signal.SIGINT)
    assert finish(p) == 0  # the command caught it and ended cleanly
    assert (repo / "sigints").read_text() == "1"
    m = manifest_of(repo / "runs" / "i.json")
    assert m["status"] == "interrupted" and m["exit"]["interrupted_by"] == "SIGINT"
    assert m["exit"]["returncode"] == 0 and m["exit"]["signal"] is None


def test_a_killed_manifest_process_leaves_its_run_marked_running(repo: Path) -> None:
    p = start(repo, "--out", "runs/r.json", mode="wait")
    p.kill()
    p.wait(timeout=60)
    os.kill(int((repo / "started").read_text()), signal.SIGKILL)  # the orphaned command
    finish(p)  # its pipes close once the orphan is gone
    m = manifest_of(repo / "runs" / "r.json")
    assert m["status"] == "running" and m["finished_at"] is None and m["exit"] is None


def test_table_rows_say_what_changed_and_keep_every_status(repo: Path, tmp_path: Path) -> None:
    assert manifest(repo, "--out", "runs/a.json", *FULL).returncode == 0
    (repo / "config.json").write_text(json.dumps({"lr": 0.0003, "optim": {"betas": [0.9, 0.95]}}))
    git(repo, "commit", "-q", "-am", "lower lr")
    changed = [a if a != "lr=0.001" else "lr=0.0003" for a in FULL]
    assert (
        manifest(repo, "--out", "runs/b.json", "--parent", "a", *changed, mode="exit1").returncode
        == 1
    )
    assert manifest(repo, "--out", "runs/c.json", "--parent", "b", *changed).returncode == 0
    runs = [manifest_of(repo / "runs" / f"{i}.json") for i in "abc"]
    found = {r["id"]: r for r in rows(runs)}
    commit = [r["git"]["commit"][:7] for r in runs]
    assert found["a"]["changed"] == "(first run)"
    assert found["b"]["changed"] == (
        f"commit {commit[0]} -> {commit[1]}; command: train.py ok -> train.py exit1; "
        "config lr: 0.001 -> 0.0003; params lr: 0.001 -> 0.0003"
    )
    assert found["c"]["changed"] == "command: train.py exit1 -> train.py ok"
    assert [found[i]["status"] for i in "abc"] == ["ok", "failed", "ok"]
    assert found["a"]["metrics"] == {"loss": 0.002, "diverged": "NaN"}
    # b failed before writing metrics: the file a's run left is not taken for b's
    assert found["b"]["metrics"] == {"loss": None, "diverged": None}
    assert runs[1]["metrics_file"]["error"] == "not written by this run: the file predates it"
    assert found["c"]["metrics"] == {"loss": 0.0006, "diverged": "NaN"}
    text = render_text(list(found.values()))
    assert text.splitlines()[0].split() == [
        "id", "parent", "status", "changed", "loss", "diverged", "GPU-hours", "cost", "USD",
    ]  # fmt: skip
    csv_text = render_csv(list(found.values())).splitlines()
    assert csv_text[0] == "id,parent,status,changed,loss,diverged,wall_seconds,gpu_hours,cost_usd"
    assert csv_text[1].startswith("a,,ok,(first run),0.002,NaN,")
    # the command line: text, CSV and JSON
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "t.csv"
    cmd = [sys.executable, "-m", "probes", "manifest", "table", *(f"runs/{i}.json" for i in "cba")]
    done = subprocess.run(
        [*cmd, "--csv", str(out), "--json", "--metric", "loss", "--svg", str(tmp_path / "l.svg")],
        cwd=repo, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    printed = json.loads(done.stdout)
    assert [r["id"] for r in printed] == ["a", "b", "c"]
    assert printed[2]["metrics"] == {"loss": 0.0006}
    assert out.read_text().splitlines()[0].split(",")[4] == "loss"
    svg = ET.fromstring((tmp_path / "l.svg").read_text())
    ns = "{http://www.w3.org/2000/svg}"
    assert len(svg.findall(f"{ns}circle")) == 3 and len(svg.findall(f"{ns}path")) == 2


def test_check_says_what_changed_since_the_run(repo: Path) -> None:
    assert manifest(repo, "--out", "runs/a.json", *FULL).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "probes", "manifest", "check", str(repo / "runs" / "a.json")]

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)

    done = subprocess.run([*cmd, "--root", "."], cwd=repo, env=env, capture_output=True, text=True)
    states = [line.split()[0] for line in done.stdout.splitlines()[1:]]
    assert done.returncode == 0 and states == ["unchanged"] * 4
    (repo / "data" / "splits" / "eval.jsonl").write_text('{"x": 2}\n')
    (repo / "data" / "splits" / "new.jsonl").write_text("{}\n")
    (repo / "out" / "weights.bin").unlink()
    done = check()  # from elsewhere: relative paths are read from the run's cwd
    assert done.returncode == 1
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["unchanged", "data", "train:", "data/train.jsonl"] in lines
    assert ["changed", "data", "splits:", "data/splits", "(1", "changed,", "1", "added)"] in lines
    assert ["changed:", "eval.jsonl"] in lines and ["added:", "new.jsonl"] in lines
    assert ["changed", "outputs:", "out", "(1", "missing)"] in lines
    (repo / "data" / "train.jsonl").unlink()
    assert ["missing", "data", "train:", "data/train.jsonl", "(missing)"] in [
        line.split() for line in check().stdout.splitlines()
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--out", "runs/a.txt"], "error: --out 'runs/a.txt' must end in .json"),
        (["--out", "runs/a b.json"], "error: --out 'a b' is not a run id"),
        (["--out", "a.json", "--price", "-1"], "error: --price must be between 0 and"),
        (["--out", "a.json", "--seed", "-1"], "error: --seed must be in [0, 2**64), got -1"),
        (["--out", "a.json", "--gpus", "-2"], "error: --gpus must be between 0 and"),
        (["--out", "a.json", "--param", "lr"], "error: --param 'lr' must be KEY=VALUE"),
        (["--out", "a.json", "--parent", "zz"], "error: --parent 'zz': no manifest"),
        (["--out", "a.json", "--data", "nope"], "error: --data 'nope': no such file or folder"),
        (["--out", "a.json", "--seed", "x"], "error: argument --seed: invalid int value: 'x'"),
        (["--out", "a.json", "--"], "error: no command to run: put it after --"),
        (["--out", "taken.json"], "error: --out 'taken.json' already exists"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    argv: list[str], message: str,
) -> None:  # fmt: skip
    from probes.cli import main

    monkeypatch.chdir(repo)
    (repo / "taken.json").write_text("{}")
    command = [] if argv[-1] == "--" else ["--", "true"]
    assert main(["manifest", "run", *argv, *command]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1


def test_table_and_check_refuse_a_file_that_is_not_a_manifest(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    from probes.cli import main

    # a short relative path: a long one is cut in the message, and how long the temporary
    # folder's path is depends on the runner (pytest-xdist's workers nest it deeper)
    monkeypatch.chdir(tmp_path)
    bad = Path("report.json")
    bad.write_text('{"schema": "kernodeck-probe-report"}')
    for action in ("table", "check"):
        assert main(["manifest", action, str(bad)]) == 2
        assert (
            capsys.readouterr().err
            == f"error: manifest {str(bad)!r} is not a kernodeck-run-manifest file\n"
        )


def test_machine_is_read_without_importing_torch() -> None:
    code = (
        "import json, sys\n"
        "from probes.manifest.machine import machine\n"
        "m = machine()\n"
        "print(json.dumps([m['torch'], m['torch_cuda'], 'torch' in sys.modules]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    version, cuda, imported = json.loads(done.stdout)
    assert imported is False
    torch = pytest.importorskip("torch")
    assert (version, cuda) == (torch.__version__, torch.version.cuda)


def _fake_program(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)


def test_gpus_and_driver_come_from_nvidia_smi(tmp_path: Path, monkeypatch) -> None:
    # the output format of `nvidia-smi --query-gpu=... --format=csv,noheader,nounits`
    rows_ = "\\n".join(
        f"{i}, NVIDIA H100 80GB HBM3, GPU-{u}, 81559, 550.54.15" for i, u in ((0, "a"), (1, "b"))
    )
    header = "| Driver Version: 550.54.15  CUDA Version: 12.4 |"
    body = f'if [ "$#" -gt 0 ]; then printf "{rows_}\\n"; else echo "{header}"; fi'
    _fake_program(tmp_path, "nvidia-smi", body)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    m = machine.machine({})
    assert m["gpu_source"] == "nvidia-smi" and m["gpu_count"] == 2
    assert m["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-b",
        "memory_mib": 81559,
    }
    assert (m["driver"], m["driver_cuda"]) == ("550.54.15", "12.4")
    assert machine.visible_count(m["gpus"], {"CUDA_VISIBLE_DEVICES": "1"}) == 1
    assert machine.visible_count(m["gpus"], {"CUDA_VISIBLE_DEVICES": ""}) == 0


def test_a_hung_smi_does_not_hang_the_manifest(tmp_path: Path, monkeypatch) -> None:
    _fake_program(tmp_path, "nvidia-smi", "exec sleep 30")
    _fake_program(tmp_path, "rocm-smi", "exit 1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(machine, "SMI_TIMEOUT_S", 0.2)
    m = machine.machine({})
    assert (m["gpu_source"], m["gpus"], m["gpu_count"], m["driver"]) == (None, [], 0, None)


def test_credentials_are_stripped_from_the_remote() -> None:
    from probes.manifest.git import public_remote

    assert (
        public_remote("https://user:ghp_token@github.com/o/r.git") == "https://github.com/o/r.git"
    )
    assert public_remote("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert public_remote("ssh://git@host:2222/r") == "ssh://host:2222/r"


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=3000), chunk=st.integers(min_value=1, max_value=257))
def test_streamed_digest_is_the_whole_files_whatever_the_chunk(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, chunk: int
) -> None:
    path = tmp_path_factory.mktemp("h") / "f"
    path.write_bytes(data)
    old = hashing.CHUNK_BYTES
    hashing.CHUNK_BYTES = chunk
    try:
        d = hashing.file_sha256(str(path))
    finally:
        hashing.CHUNK_BYTES = old
    assert (d.sha256, d.bytes) == (hashlib.sha256(data).hexdigest(), len(data))


SCALARS = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b"]), st.booleans(), st.none())
PARAMS = st.dictionaries(st.sampled_from(["lr", "wd", "warmup", "rank", "opt"]), SCALARS)


@settings(max_examples=200, deadline=None)
@given(old=PARAMS, new=PARAMS)
def test_dict_changes_name_exactly_the_keys_that_differ(old: dict, new: dict) -> None:
    found = lineage.dict_changes("params", old, new)
    differ = sorted(k for k in old.keys() | new.keys() if old.get(k, ...) != new.get(k, ...))
    if not differ:
        assert found == []
        return
    (line,) = found
    shown = [part.split(":")[0] for part in line.removeprefix("params ").split(", ")]
    expected = differ if len(differ) <= lineage.MAX_SHOWN else [*differ[: lineage.MAX_SHOWN]]
    assert [s for s in shown if not s.startswith("+")] == expected


def test_a_run_against_itself_has_no_changes(repo: Path) -> None:
    assert manifest(repo, "--out", "runs/a.json", *FULL).returncode == 0
    m = manifest_of(repo / "runs" / "a.json")
    assert lineage.changes(m, m) == []
    assert lineage.changed_text({**m, "id": "b", "parent": "a"}, {"a": m}) == "nothing: a rerun"


def test_gpu_hours_is_wall_hours_times_gpus() -> None:
    assert record.gpu_hours(5400, 8) == 12.0  # 1.5 h on 8 GPUs
    assert record.cost_usd(12.0, 2.5) == 30.0 and record.cost_usd(12.0, None) is None
