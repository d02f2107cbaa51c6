// The worker's path in the pinned Pyodide under Node: unpack the calculators' zip,
// import them, compute the kv-cache page's first result (what a calculator page does
// before it is interactive), then each calculator's defaults. Called by
// pyodide_calculators.py.
//
//   node benchmarks/pyodide_calculators.mjs ZIP RUNS
//
// Each run is a fresh Pyodide (a page load); prints one JSON object per run.
import fs from "node:fs";
import { loadPyodide } from "../node_modules/pyodide/pyodide.mjs";

const [zipPath, runs] = process.argv.slice(2);
const zip = new Uint8Array(fs.readFileSync(zipPath));
for (let i = 0; i < Number(runs); i++) {
  const t0 = performance.now();
  const pyodide = await loadPyodide();
  const t1 = performance.now();
  pyodide.unpackArchive(zip, "zip", { extractDir: "/home/pyodide/kernodeck" });
  const t2 = performance.now();
  const out = pyodide.runPython(`
import json, sys, time
from statistics import median
sys.path.insert(0, "/home/pyodide/kernodeck")
t = time.perf_counter()
from calculators.web import run_json
imported = (time.perf_counter() - t) * 1e3
run_json("kv-cache", "{}")
page = (time.perf_counter() - t) * 1e3  # what one calculator page does: import, first result
from calculators.web import CALCULATORS
compute = {}
for name in CALCULATORS:
    times = []
    for _ in range(11):
        t = time.perf_counter()
        run_json(name, "{}")
        times.append((time.perf_counter() - t) * 1e3)
    compute[name] = {"first": times[0], "median": median(times[1:])}
json.dumps({"import": imported, "page": page, "compute": compute})
`);
  const result = JSON.parse(out);
  result.load = t1 - t0;
  result.unpack = t2 - t1;
  console.log(JSON.stringify(result));
}
