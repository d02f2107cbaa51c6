"""The probes' command line: usage errors in one line, reports written whatever happens."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from probes.cli import PROBES, build_parser
from probes.report import read
from tests.probes_helpers import ROOT, run_probe


def test_every_probe_has_a_subcommand() -> None:
    parser = build_parser()
    for name in PROBES:
        argv = {
            "env": [],
            "compare": [],
            "kv-cache": ["--config", "x", "--context", "8"],
            "manifest": ["check", "x.json"],
        }.get(name, ["--config", "x"])
        assert parser.parse_args([name, *argv]).probe == name


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train-step"], "error: one of the arguments --config --model is required"),
        (["train-step", "--config", "nope"], "error: config 'nope' is neither a file"),
        (["train-step", "--model", "gpt5"], "error: "),
        (
            ["train-step", "--config", "tiny-llama", "--micro-batch", "0"],
            "error: micro_batch must be a positive integer, got 0",
        ),
        (
            ["train-step", "--config", "tiny-llama", "--precision", "fp8"],
            "error: precision must be one of fp32, amp-bf16",
        ),
        (
            ["train-step", "--config", "tiny-llama", "--device", "tpu"],
            "error: --device must be cuda or cpu, got 'tpu'",
        ),
        (
            ["kv-cache", "--config", "tiny-llama", "--context", "-1"],
            "error: context must be a positive integer, got -1",
        ),
        (
            ["train-step", "--config", "tiny-llama", "--strategy", "ddp"],
            "error: strategy ddp runs under torchrun",
        ),
    ],
)
def test_bad_input_is_one_line_and_status_2(capsys, argv: list[str], message: str) -> None:
    from probes.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message), err
    assert err.count("\n") == 1


def test_env_report(tmp_path) -> None:
    code, r = run_probe(tmp_path, "env", "--device", "cpu")
    assert code == 0 and r is not None
    assert r["environment"]["torch"] and r["environment"]["device"] == "cpu"
    assert r["environment"]["total_memory_bytes"] > 0
    assert r["measured"] == {}  # nothing to measure without a GPU, and no zeros written


def test_an_interrupted_run_still_writes_its_report(tmp_path) -> None:
    out = tmp_path / "r.json"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "probes",
            "train-step",
            "--config",
            "tiny-llama",
            "--device",
            "cpu",
            "--steps",
            "100000",
            "--seq-len",
            "16",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(8)  # past the imports: the step loop is running
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=60)
    finally:  # a run that did not stop must not outlive the test (and fail the next one)
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 130, err
    r = read(str(out))
    assert r["status"] == "interrupted"
    assert "interrupted" in r["error"] and r["command"][:3] == ["python", "-m", "probes"]


def test_report_json_on_stdout(capsys) -> None:
    from probes.cli import main

    assert main(["weights", "--config", "tiny-llama", "--device", "cpu", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["measured"]["parameters"] == 426_624


def test_a_stop_swallowed_by_a_finalizer_is_sent_again(monkeypatch) -> None:
    # A SIGTERM handled while a weakref finalizer runs raises its KeyboardInterrupt inside
    # the finalizer, where Python drops it: the hook sends the signal again, and passes
    # every other unraisable exception on.
    from types import SimpleNamespace

    from probes import cli

    sent, passed = [], []
    monkeypatch.setattr(cli.os, "kill", lambda pid, sig: sent.append((pid, sig)))
    hook = cli._resend_swallowed_stop(passed.append)
    hook(SimpleNamespace(exc_value=KeyboardInterrupt("signal 15")))
    assert sent == [(cli.os.getpid(), signal.SIGTERM)] and passed == []
    other = SimpleNamespace(exc_value=ValueError("a finalizer's own error"))
    hook(other)
    ctrl_c = SimpleNamespace(exc_value=KeyboardInterrupt())  # not ours: left alone
    hook(ctrl_c)
    assert passed == [other, ctrl_c] and len(sent) == 1


def test_main_restores_the_unraisable_hook() -> None:
    from probes.cli import main

    before = sys.unraisablehook
    assert main(["weights", "--config", "tiny-llama", "--device", "cpu"]) == 0
    assert sys.unraisablehook is before
