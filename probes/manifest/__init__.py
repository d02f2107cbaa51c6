"""Run manifests: one JSON file per run connecting its data, code, parameters, machine,
outputs, metrics and cost, written by `python -m probes manifest run` around the
reader's own command, without a tracking service (it sits beside MLflow or W&B).

Standard library only: no torch is imported. The file's fields are described by the
JSON Schema in docs/data/manifest.schema.json:

  schema, schema_version   "kernodeck-run-manifest", 1
  id, parent               the run's id (--out's file name, or UTC time + random hex),
                           and the id of the run it derives from
  status                   running | ok | failed | interrupted | killed
  command, command_line    the command as run, and joined for a shell; cwd
  started_at, finished_at  ISO 8601 UTC; wall_seconds from a monotonic clock
  exit                     returncode, signal, interrupted_by, error
  git                      repository, commit, branch, remote, dirty, changed,
                           untracked, diff_file and diff_sha256 (with --allow-dirty)
  data, config             SHA-256 of each input (folders file by file); the config's
                           content where small and text
  params, seeds            what the reader declared
  machine                  Python, packages, torch's build, GPUs, driver
  cost                     gpus, gpu_hours, price_per_gpu_hour, usd and the assumption
  outputs                  each output folder's files, sizes, SHA-256, written_by_run
  metrics, metrics_file    the JSON object the command wrote, and where it was read

Modules: `hashing` (SHA-256 of files and folders), `git`, `machine`, `record` (the
fields, their checks, reading and writing), `child` (running the command, signals),
`run`, `lineage` (what changed against the parent), `table`, `check`, `diagram` (the
lineage as SVG).
"""

from __future__ import annotations

from probes.manifest.check import check
from probes.manifest.lineage import changes
from probes.manifest.record import SCHEMA_ID, SCHEMA_VERSION, STATUSES, gpu_hours, read, write
from probes.manifest.run import run
from probes.manifest.table import rows

__all__ = [
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "STATUSES",
    "changes",
    "check",
    "gpu_hours",
    "read",
    "rows",
    "run",
    "write",
]
