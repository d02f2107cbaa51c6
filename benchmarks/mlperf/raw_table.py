"""Raw table of published MLPerf Training time-to-train results at a fixed quality target.

Reads the committed excerpts of public MLPerf Training result logs under
`benchmarks/mlperf/logs/<round>/<submitter>/<system>/` (`system.json` and
`<benchmark>/result_N.txt`, plus `scaling.json` where the submission has one), the
committed excerpts of the rules under `benchmarks/mlperf/rules/<round>/`, and
`benchmarks/mlperf/SOURCES.md` (repository, path and commit of every excerpt), and writes
`docs/data/mlperf/raw_table.json` and `docs/data/mlperf/raw_table.csv`, plus
`calculators/planning/time_to_target.json`, the submissions' scores the `target-cost`
calculator prices (`time_to_target`). No figure is typed here: every number in the output
comes from an excerpt, and a row exists only where its result file does. Run
`python -m benchmarks.mlperf.raw_table`; a rerun writes the same bytes.

MLLOG format (mlcommons/logging, `mlperf_logging/mllog` writes it and
`mlperf_logging/compliance_checker/mlp_parser/ruleset_400.py` reads it): one event per line,
`:::MLLOG ` followed by a JSON object with `namespace`, `time_ms` (wall clock, milliseconds
since the epoch), `event_type`, `key`, `value` and `metadata`. Anything before the token on
a line (a rank prefix such as `0: `) is ignored, as that parser does. The run is bracketed by
`run_start` (INTERVAL_START) and `run_stop` (INTERVAL_END, `metadata.status` "success" or
"aborted"); the quality reached is logged as `eval_accuracy` lines (for llama2_70b_lora the
value is the evaluation loss, lower is better; for bert the masked-LM accuracy, higher is
better). `init_start` lines (one per rank in some logs) mark where the implementation
begins model initialisation, which the rules let run before the clock.

Rules used:

- One row per result file (one run): `minutes_to_train = (run_stop time_ms - run_start
  time_ms) / 60000`, as `mlperf_logging/result_summarizer/result_summarizer.py`
  (`_query_mlperf_strong_scaling_score`) computes a run's score. A run is a row only if its
  log has exactly one `run_start`, exactly one `run_stop` with `metadata.status ==
  "success"`, and at least one quality line that meets the target (the compliance
  checker's `ATLEAST_ONE_CHECK`); otherwise it is listed in `excluded` with the reason.
- The quality target and its metric come from the rules excerpts: the closed-division
  table of `training_rules.adoc` (e.g. "0.925 Eval loss") and the compliance-checker
  check on the metric key (e.g. `v['value'] <= 0.925`); the two must agree.
- `gpu_hours_to_target = minutes_to_train / 60 * accelerator_count`, with
  `accelerator_count = number_of_nodes * accelerators_per_node` from the system JSON.
  Cost at a price is left to the page (the reader's price), not stored.
- `submissions`: the benchmark result of each submission, per `training_rules.adoc`
  "Benchmark Results" (drop the fastest and the slowest run, average the rest; one
  non-converging run may be the dropped slowest; more than one makes it invalid) and the
  result summarizer (the olympic average times `scaling_factor` from `scaling.json` when
  the submission folder has one). It is computed only when the excerpts hold at least the
  rules' minimum number of runs for the benchmark. It is not RCP-checked here and is labelled
  as computed from the logs, not as the published figure. `score_standard_error_minutes`
  (the kept runs' standard error of the mean, times the scaling factor) says how many of
  its digits the runs support.
- `init_minutes`: the logged initialisation before the clock, `(run_start time_ms - first
  init_start time_ms) / 60000`: the rules let it happen off the clock, a rental bills it.
- `framework`: the software stack as the submitter describes it in the system JSON, so
  rows of different stacks are labelled and not compared as if only the hardware differed.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LOGS_DIR = HERE / "logs"
RULES_DIR = HERE / "rules"
SOURCES_MD = HERE / "SOURCES.md"
OUT_DIR = ROOT / "docs" / "data" / "mlperf"
CALCULATOR_OUT = ROOT / "calculators" / "planning" / "time_to_target.json"

TOKEN = ":::MLLOG "
HEX40 = re.compile(r"^[0-9a-f]{40}$")

# Where each benchmark's target sits in the rules excerpts: names, not figures.
BENCHMARK_RULES: dict[str, dict[str, str]] = {
    "llama2_70b_lora": {
        "rules_model": "Llama2-70B-LoRA",
        "rules_problem": "Large language model Fine Tune (LoRA)",
        "compliance_excerpt": "closed_llama2_70b_lora.yaml.excerpt",
    },
    "bert": {
        "rules_model": "BERT",
        "rules_problem": "NLP",
        "compliance_excerpt": "closed_bert.yaml.excerpt",
    },
}
RULES_EXCERPT = "training_rules.adoc.excerpt"

COLUMNS = (
    "benchmark",
    "round",
    "submitter",
    "system",
    "system_name",
    "division",
    "availability",
    "accelerator",
    "accelerators_per_node",
    "number_of_nodes",
    "accelerator_count",
    "framework",
    "run",
    "init_start_time_ms",
    "run_start_time_ms",
    "run_stop_time_ms",
    "time_to_train_ms",
    "minutes_to_train",
    "gpu_hours_to_target",
    "init_minutes",
    "status",
    "quality_metric",
    "quality_target",
    "quality_target_value",
    "quality_reached",
    "meets_target",
    "source_repository",
    "source_path",
    "source_commit",
    "system_source_path",
    "excerpt_path",
)


# The rows this project measures itself (`python -m probes time-to-quality` reports in
# docs/data/validation/), kept apart from the published rows and labelled as such.
VALIDATION_DIR = ROOT / "docs" / "data" / "validation"
MEASURED_COLUMNS = (
    "obtained",
    "benchmark",
    "quality_target",
    "device",
    "accelerator_count",
    "run",
    "reached",
    "steps",
    "tokens",
    "seconds_to_target",
    "gpu_hours_to_target",
    "final_loss",
    "source_path",
    "report_sha256",
    "command",
)


def measured_rows(root: Path = ROOT) -> list[dict[str, Any]]:
    """One row per repeat of every committed time-to-quality report with status ok.

    A run that did not reach the target is a row with `reached` false and no time to
    target: it is counted, never given a time it did not have.
    """
    out: list[dict[str, Any]] = []
    for path in sorted((root / VALIDATION_DIR.relative_to(ROOT)).glob("*.json")):
        raw = path.read_bytes()
        report = json.loads(raw)
        probe = report.get("probe") if isinstance(report, dict) else None
        if not isinstance(probe, dict) or probe.get("name") != "time-to-quality":
            continue
        if report.get("status") != "ok":
            continue
        inputs, env = report["inputs"], report["environment"]
        device = env.get("device_name") or env.get("device")
        for rep in report["details"]["repeats"]:
            reached = bool(rep["reached"])
            out.append(
                {
                    "obtained": f"measured by this project: probes time-to-quality on {device}",
                    "benchmark": f"byte-level language model, {inputs['model']}, "
                    "probes/data/corpus",
                    "quality_target": f"eval loss <= {inputs['target_loss']} nats per byte",
                    "device": device,
                    "accelerator_count": inputs["gpus"],
                    "run": rep["repeat"],
                    "reached": reached,
                    "steps": rep["steps"],
                    "tokens": rep["tokens"],
                    "seconds_to_target": round(rep["seconds"], 4) if reached else None,
                    "gpu_hours_to_target": round(rep["gpu_hours"], 8) if reached else None,
                    "final_loss": round(rep["final_loss"], 4),
                    "source_path": _rel(path, root),
                    "report_sha256": hashlib.sha256(raw).hexdigest(),
                    "command": report["command_line"],
                }
            )
    return out


class LogError(ValueError):
    """A result log that cannot give a row (no run_stop, not a success, bad line)."""


def parse_mllog(text: str) -> list[dict[str, Any]]:
    """The MLLOG events of a log, in order; lines without the token are skipped."""
    events = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if TOKEN not in line:
            continue
        payload = line[line.index(TOKEN) + len(TOKEN) :]
        try:
            event = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise LogError(f"line {lineno}: not JSON after {TOKEN.strip()}: {exc}") from exc
        if not isinstance(event, dict) or "key" not in event or "time_ms" not in event:
            raise LogError(f"line {lineno}: MLLOG event without key or time_ms")
        events.append(event)
    return events


def _time_ms(event: dict[str, Any]) -> int | float:
    value = event["time_ms"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LogError(f"{event['key']}: time_ms is not a number: {value!r}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def minutes_between(run_start_ms: float, run_stop_ms: float) -> float:
    """Run result in minutes, as the MLPerf result summarizer computes it."""
    return (run_stop_ms - run_start_ms) / 60000


def init_minutes(init_start_ms: float | None, run_start_ms: float) -> float | None:
    """Logged initialisation before the clock, minutes: (run_start time_ms - first
    init_start time_ms) / 60000, rounded to 4 decimals; None without an init_start line.

    The rules (`training_rules.adoc`, "Run Results") let model initialisation run before
    the clock starts, up to 30 minutes in the closed division: these minutes are billed
    by a rental but not in the run's result. Anything before the first init_start
    (container start, data staging, cache clearing) is not in them either.
    """
    if init_start_ms is None:
        return None
    if init_start_ms > run_start_ms:
        raise LogError("init_start is after run_start")
    return round((run_start_ms - init_start_ms) / 60000, 4)


def read_run(path: Path) -> dict[str, Any]:
    """run_start / run_stop times, status and quality lines of one result log.

    Raises LogError when the log lacks exactly one run_start and one run_stop, or the
    run_stop status is not "success".
    """
    events = parse_mllog(path.read_text(encoding="utf-8"))
    starts = [e for e in events if e["key"] == "run_start"]
    stops = [e for e in events if e["key"] == "run_stop"]
    if not starts:
        raise LogError("no run_start line")
    if len(starts) > 1:
        raise LogError(f"{len(starts)} run_start lines")
    if not stops:
        raise LogError("no run_stop line")
    if len(stops) > 1:
        raise LogError(f"{len(stops)} run_stop lines")
    status = (stops[0].get("metadata") or {}).get("status")
    if status != "success":
        raise LogError(f"run_stop status is {status!r}, not 'success'")
    start_ms, stop_ms = _time_ms(starts[0]), _time_ms(stops[0])
    if stop_ms < start_ms:
        raise LogError("run_stop is before run_start")
    benchmarks = {e["value"] for e in events if e["key"] == "submission_benchmark"}
    # Every rank may log init_start; initialisation begins with the first of them.
    inits = [_time_ms(e) for e in events if e["key"] == "init_start"]
    return {
        "init_start_time_ms": min(inits) if inits else None,
        "run_start_time_ms": start_ms,
        "run_stop_time_ms": stop_ms,
        "status": status,
        "submission_benchmark": benchmarks.pop() if len(benchmarks) == 1 else None,
        "events": events,
    }


def _excerpt_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def read_target(rules_dir: Path, round_: str, benchmark: str, root: Path = ROOT) -> dict[str, Any]:
    """Quality target, its metric and the minimum number of runs, from the rules excerpts."""
    if benchmark not in BENCHMARK_RULES:
        raise ValueError(f"no rules mapping for benchmark {benchmark!r}")
    names = BENCHMARK_RULES[benchmark]
    base = rules_dir / round_
    adoc = _excerpt_lines(base / RULES_EXCERPT)
    model_re = re.compile(
        r"\|\s*" + re.escape(names["rules_model"]) + r"\s*\|\s*([0-9.]+)\s+(.*?)\s*$"
    )
    targets = [m for m in map(model_re.search, adoc) if m]
    if len(targets) != 1:
        raise ValueError(
            f"{round_}: {names['rules_model']} target not found once in {RULES_EXCERPT}"
        )
    rules_value, label = targets[0].group(1), targets[0].group(2)
    runs_re = re.compile(r"\|\s*" + re.escape(names["rules_problem"]) + r"\s*\|\s*([0-9]+)\s*$")
    runs = [m for m in map(runs_re.search, adoc) if m]
    if len(runs) != 1:
        raise ValueError(f"{round_}: run count for {names['rules_problem']} not found once")

    yaml = _excerpt_lines(base / names["compliance_excerpt"])
    keys = [m.group(1) for m in (re.search(r"^\s*NAME:\s*(\S+)\s*$", x) for x in yaml) if m]
    checks = [x for x in yaml if "ATLEAST_ONE_CHECK:" in x]
    if len(keys) != 1 or len(checks) != 1:
        raise ValueError(f"{round_}: metric key or check not found once in the compliance excerpt")
    # Every comparison in the check, e.g. "(v['value'] <= 0.925) and v['value'] > 0.0".
    conditions = re.findall(r"v\['value'\]\s*(<=|>=|<|>)\s*([0-9.]+)", checks[0])
    on_target = [(op, v) for op, v in conditions if float(v) == float(rules_value)]
    if len(on_target) != 1:
        raise ValueError(f"{round_}: rules target {rules_value} is not one compliance condition")
    comparison, check_value = on_target[0]
    return {
        "round": round_,
        "benchmark": benchmark,
        "metric": keys[0],
        "comparison": comparison,
        "value": float(check_value),
        "conditions": [[op, float(v)] for op, v in conditions],
        "label": label,
        "text": f"{keys[0]} {comparison} {check_value} ({label})",
        "min_runs": int(runs[0].group(1)),
        "rules_excerpt": _rel(base / RULES_EXCERPT, root),
        "compliance_excerpt": _rel(base / names["compliance_excerpt"], root),
    }


def meets(value: float, comparison: str, target: float) -> bool:
    return {
        "<=": value <= target,
        "<": value < target,
        ">=": value >= target,
        ">": value > target,
    }[comparison]


def meets_all(value: Any, conditions: list[list[Any]]) -> bool:
    """Whether a quality value passes every condition of the compliance check."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return all(meets(value, op, bound) for op, bound in conditions)


def read_sources(path: Path) -> dict[str, dict[str, str]]:
    """excerpt path -> {repository, path, commit, blob}, from the SOURCES.md table."""
    sources: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `benchmarks/"):
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            raise ValueError(f"SOURCES.md: row without 6 cells: {line}")
        excerpt, repository, source_path, commit, blob, _content = cells
        if not HEX40.match(commit) or not HEX40.match(blob):
            raise ValueError(f"SOURCES.md: commit or blob is not 40 hex digits: {line}")
        if excerpt in sources:
            raise ValueError(f"SOURCES.md: {excerpt} listed twice")
        sources[excerpt] = {
            "repository": repository,
            "path": source_path,
            "commit": commit,
            "blob": blob,
        }
    return sources


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def _run_number(path: Path) -> int:
    m = re.fullmatch(r"result_([0-9]+)\.txt", path.name)
    if not m:
        raise ValueError(f"not a result file name: {path}")
    return int(m.group(1))


def _source(sources: dict[str, dict[str, str]], path: Path, root: Path) -> dict[str, str]:
    rel = _rel(path, root)
    if rel not in sources:
        raise ValueError(f"{rel} is not listed in SOURCES.md")
    return sources[rel]


def _kept(minutes: list[float], failed: int) -> list[float]:
    """The runs the score averages: the fastest and the slowest dropped; a failed run is
    the slowest."""
    return sorted(minutes)[1 : len(minutes) - (1 - failed)]


def _olympic(minutes: list[float], failed: int) -> float | None:
    """Mean after dropping the fastest and the slowest run; a failed run is the slowest."""
    kept = _kept(minutes, failed)
    return sum(kept) / len(kept) if kept else None


def standard_error(kept: list[float]) -> float | None:
    """Standard error of the mean of the kept runs: s / sqrt(k), s the sample standard
    deviation (k - 1 in the denominator) of the k kept runs.

    It treats the kept runs as independent draws, which trimming the fastest and slowest
    is not exactly: a guide to how many digits of the score the runs support, not a
    confidence interval. None with fewer than two runs.
    """
    k = len(kept)
    if k < 2:
        return None
    mean = sum(kept) / k
    return (sum((x - mean) ** 2 for x in kept) / (k - 1)) ** 0.5 / k**0.5


def build(root: Path = ROOT) -> dict[str, Any]:
    """The table: rows, excluded runs, submission scores and the targets used.

    `root` is the repository root holding `benchmarks/mlperf/{logs,rules,SOURCES.md}`.
    """
    base_dir = root / HERE.relative_to(ROOT)
    logs_dir, rules_dir = base_dir / LOGS_DIR.name, base_dir / RULES_DIR.name
    sources = read_sources(base_dir / SOURCES_MD.name)
    rows: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    submissions: list[dict[str, Any]] = []
    targets: dict[tuple[str, str], dict[str, Any]] = {}

    for system_json in sorted(logs_dir.glob("*/*/*/system.json")):
        system_dir = system_json.parent
        round_, submitter, system = system_dir.relative_to(logs_dir).parts
        desc = json.loads(system_json.read_text(encoding="utf-8"))
        system_src = _source(sources, system_json, root)
        per_node, nodes = int(desc["accelerators_per_node"]), int(desc["number_of_nodes"])
        count = per_node * nodes
        for bench_dir in sorted(p for p in system_dir.iterdir() if p.is_dir()):
            benchmark = bench_dir.name
            key = (round_, benchmark)
            if key not in targets:
                targets[key] = read_target(rules_dir, round_, benchmark, root)
            target = targets[key]
            result_files = sorted(bench_dir.glob("result_*.txt"), key=_run_number)
            run_minutes: list[float] = []
            run_inits: list[float | None] = []
            failed = 0
            for result in result_files:
                src = _source(sources, result, root)
                base = {
                    "benchmark": benchmark,
                    "round": round_,
                    "submitter": submitter,
                    "system": system,
                    "run": _run_number(result),
                    "source_repository": src["repository"],
                    "source_path": src["path"],
                    "source_commit": src["commit"],
                    "excerpt_path": _rel(result, root),
                }
                try:
                    run = read_run(result)
                    if run["submission_benchmark"] not in (None, benchmark):
                        raise LogError(
                            f"submission_benchmark is {run['submission_benchmark']!r}, "
                            f"not {benchmark!r}"
                        )
                    stop = run["run_stop_time_ms"]
                    quality = [
                        e
                        for e in run["events"]
                        if e["key"] == target["metric"] and _time_ms(e) <= stop
                    ]
                    if not quality:
                        raise LogError(f"no {target['metric']} line before run_stop")
                    if not any(meets_all(e["value"], target["conditions"]) for e in quality):
                        raise LogError(f"no {target['metric']} line meets {target['text']}")
                except LogError as exc:
                    failed += 1
                    excluded.append({**base, "reason": str(exc)})
                    continue
                minutes = minutes_between(run["run_start_time_ms"], stop)
                run_minutes.append(minutes)
                run_inits.append(init_minutes(run["init_start_time_ms"], run["run_start_time_ms"]))
                reached = quality[-1]["value"]
                rows.append(
                    {
                        "benchmark": benchmark,
                        "round": round_,
                        "submitter": submitter,
                        "system": system,
                        "system_name": desc["system_name"],
                        "division": desc["division"],
                        "availability": desc["status"],
                        "accelerator": desc["accelerator_model_name"],
                        "accelerators_per_node": per_node,
                        "number_of_nodes": nodes,
                        "accelerator_count": count,
                        "framework": desc["framework"],
                        "run": base["run"],
                        "init_start_time_ms": run["init_start_time_ms"],
                        "run_start_time_ms": run["run_start_time_ms"],
                        "run_stop_time_ms": stop,
                        "time_to_train_ms": stop - run["run_start_time_ms"],
                        "minutes_to_train": round(minutes, 4),
                        "gpu_hours_to_target": round(minutes / 60 * count, 4),
                        "init_minutes": init_minutes(
                            run["init_start_time_ms"], run["run_start_time_ms"]
                        ),
                        "status": run["status"],
                        "quality_metric": f"{target['metric']} ({target['label']})",
                        "quality_target": target["text"],
                        "quality_target_value": target["value"],
                        "quality_reached": reached,
                        "meets_target": meets_all(reached, target["conditions"]),
                        "source_repository": src["repository"],
                        "source_path": src["path"],
                        "source_commit": src["commit"],
                        "system_source_path": system_src["path"],
                        "excerpt_path": base["excerpt_path"],
                    }
                )
            submissions.append(
                _submission(
                    (round_, submitter, system, benchmark),
                    bench_dir,
                    result_files,
                    run_minutes,
                    failed,
                    target,
                    count,
                    desc["framework"],
                    run_inits,
                    lambda path: _source(sources, path, root),
                )
            )
    return {
        "title": "MLPerf Training: published time-to-train at a fixed quality target",
        "generated_by": "python -m benchmarks.mlperf.raw_table",
        "sources": "benchmarks/mlperf/SOURCES.md",
        "rule": (
            "one row per result file (one run): minutes_to_train = (run_stop time_ms - "
            "run_start time_ms) / 60000 (mlcommons/logging result_summarizer); a run is a row "
            "only if run_stop has status success and a quality line meets the target; "
            "gpu_hours_to_target = minutes_to_train / 60 * accelerator_count"
        ),
        "columns": list(COLUMNS),
        "rows": rows,
        "excluded": excluded,
        "submissions": submissions,
        "targets": [targets[k] for k in sorted(targets)],
        "measured": measured_rows(root),
    }


def _submission(
    ident: tuple[str, str, str, str],
    bench_dir: Path,
    result_files: list[Path],
    run_minutes: list[float],
    failed: int,
    target: dict[str, Any],
    count: int,
    framework: str,
    run_inits: list[float | None],
    source_of: Callable[[Path], dict[str, str]],
) -> dict[str, Any]:
    """Benchmark result (olympic mean x scaling factor) where the excerpts allow it."""
    round_, submitter, system, benchmark = ident
    scaling_path = bench_dir / "scaling.json"
    scaling = 1.0
    scaling_source = None
    if scaling_path.is_file():
        scaling = float(json.loads(scaling_path.read_text(encoding="utf-8"))["scaling_factor"])
        scaling_source = source_of(scaling_path)["path"]
    score = None
    error = None
    if len(result_files) < target["min_runs"]:
        note = f"{len(result_files)} result files, fewer than the rules' {target['min_runs']}"
    elif failed > 1:
        note = f"{failed} runs did not converge: invalid per the rules"
    else:
        olympic = _olympic(run_minutes, failed)
        if olympic is None:
            note = "no runs left after dropping fastest and slowest"
        else:
            score = olympic * scaling
            sem = standard_error(_kept(run_minutes, failed))
            error = None if sem is None else sem * scaling
            note = "computed from the logs (olympic mean x scaling_factor); not RCP-checked here"
    return {
        "benchmark": benchmark,
        "round": round_,
        "submitter": submitter,
        "system": system,
        "accelerator_count": count,
        "framework": framework,
        "result_files": len(result_files),
        "successful_runs": len(run_minutes),
        "min_runs": target["min_runs"],
        "scaling_factor": scaling,
        "scaling_source_path": scaling_source,
        "score_minutes": None if score is None else round(score, 4),
        "score_gpu_hours": None if score is None else round(score / 60 * count, 4),
        "score_standard_error_minutes": None if error is None else round(error, 4),
        # mean logged initialisation of the successful runs; None unless every one has it
        "mean_init_minutes": None
        if not run_inits or any(x is None for x in run_inits)
        else round(sum(x for x in run_inits if x is not None) / len(run_inits), 4),
        "note": note,
    }


def render(table: dict[str, Any]) -> tuple[str, str]:
    """(JSON text, CSV text) of the table; the same table gives the same bytes."""
    json_text = json.dumps(table, indent=2, ensure_ascii=True) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table["rows"]:
        writer.writerow(
            {k: str(row[k]).lower() if isinstance(row[k], bool) else row[k] for k in COLUMNS}
        )
    return json_text, buf.getvalue()


def render_measured(table: dict[str, Any]) -> str:
    """The project's own rows as CSV (empty cells for a time a run did not have)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=MEASURED_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table["measured"]:
        writer.writerow({k: _cell(row[k]) for k in MEASURED_COLUMNS})
    return buf.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else value


def _results_folder(source_path: str) -> str:
    """The results folder of a run's log: `<submitter>/results/<system>/<benchmark>`."""
    folder, sep, _name = source_path.rpartition("/")
    if not sep:
        raise ValueError(f"source path without a folder: {source_path}")
    return folder


def time_to_target(table: dict[str, Any]) -> dict[str, Any]:
    """What the `target-cost` calculator reads: one entry per submission, its score and
    the spread of its runs, with the accelerator's name and the source of its logs.

    `fastest_run_minutes` and `slowest_run_minutes` are the least and the greatest
    `minutes_to_train` of the submission's rows (its successful runs); the score is the
    table's. A submission without a score (too few runs, or invalid) keeps nulls.
    """
    entries = []
    for sub in table["submissions"]:
        ident = (sub["round"], sub["benchmark"], sub["submitter"], sub["system"])
        rows = [
            r
            for r in table["rows"]
            if (r["round"], r["benchmark"], r["submitter"], r["system"]) == ident
        ]
        names = {r["accelerator"] for r in rows}
        sources = {
            (r["source_repository"], r["source_commit"], _results_folder(r["source_path"]))
            for r in rows
        }
        targets = {r["quality_target"] for r in rows}
        if len(names) > 1 or len(sources) > 1 or len(targets) > 1:
            raise ValueError(f"{'/'.join(ident)}: rows disagree on accelerator, source or target")
        minutes = [r["minutes_to_train"] for r in rows]
        repository, commit, folder = sources.pop() if sources else (None, None, None)
        entries.append(
            {
                "benchmark": sub["benchmark"],
                "round": sub["round"],
                "submitter": sub["submitter"],
                "system": sub["system"],
                "accelerator": names.pop() if names else None,
                "accelerator_count": sub["accelerator_count"],
                "framework": sub["framework"],
                "runs": sub["successful_runs"],
                "score_minutes": sub["score_minutes"],
                "score_gpu_hours": sub["score_gpu_hours"],
                "score_standard_error_minutes": sub["score_standard_error_minutes"],
                "mean_init_minutes": sub["mean_init_minutes"],
                "fastest_run_minutes": min(minutes) if minutes else None,
                "slowest_run_minutes": max(minutes) if minutes else None,
                "quality_target": targets.pop() if targets else None,
                "source": {"repository": repository, "commit": commit, "path": folder},
            }
        )
    return {
        "generated_by": table["generated_by"],
        "source": {"title": table["title"], "sources": table["sources"]},
        "rule": (
            "one entry per submission of the raw table (docs/data/mlperf/raw_table.json): "
            "score_minutes = olympic mean of the successful runs' minutes_to_train (fastest "
            "and slowest dropped) x scaling_factor; score_gpu_hours = score_minutes / 60 x "
            "accelerator_count; fastest_run_minutes and slowest_run_minutes = the least and "
            "greatest minutes_to_train of the successful runs; runs = the successful runs; "
            "score_standard_error_minutes = sample standard deviation of the runs the score "
            "averages / sqrt(their number) x scaling_factor; framework = the submitter's "
            "software stack (system JSON); mean_init_minutes = mean over the successful runs "
            "of (run_start - first init_start) / 60000, the logged initialisation the clock "
            "leaves out; null where the excerpts give no valid score"
        ),
        "submissions": entries,
    }


def render_time_to_target(table: dict[str, Any]) -> str:
    """JSON text of `time_to_target(table)`: sorted keys, the table's rounded figures."""
    return json.dumps(time_to_target(table), indent=2, ensure_ascii=True, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    parser.add_argument(
        "--calculator-out",
        type=Path,
        default=CALCULATOR_OUT,
        help="where the target-cost calculator's time_to_target.json goes",
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the files differ from what would be written"
    )
    args = parser.parse_args(argv)
    table = build()
    json_text, csv_text = render(table)
    outputs = {
        args.out_dir / "raw_table.json": json_text,
        args.out_dir / "raw_table.csv": csv_text,
        args.calculator_out: render_time_to_target(table),
        args.out_dir / "measured_rows.csv": render_measured(table),
    }
    if args.check:
        stale = [p for p, text in outputs.items() if not p.is_file() or p.read_text() != text]
        for p in stale:
            print(f"stale: {p}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in outputs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
