// Runs the calculators under Pyodide, off the main thread. Everything comes from this
// site: Pyodide from assets/vendor/pyodide (npm package, pinned), the calculators
// package as a zip built from the repository at build time.
import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

// The package downloads while Pyodide starts.
const archiveLoaded = fetch(new URL("calculators.zip", import.meta.url)).then((response) => {
  if (!response.ok) throw new Error(`calculators.zip: HTTP ${response.status}`);
  return response.arrayBuffer();
});

// Milliseconds from the worker's start to each step; the site-load benchmark reads them.
self.kdStartup = {};
const mark = (step) => (self.kdStartup[step] = performance.now());

const ready = (async () => {
  const pyodide = await loadPyodide({
    indexURL: new URL("../vendor/pyodide/", import.meta.url).href,
  });
  mark("pyodide");
  const archive = new Uint8Array(await archiveLoaded);
  pyodide.unpackArchive(archive, "zip", { extractDir: "/home/pyodide/kernodeck" });
  mark("unpacked");
  pyodide.runPython(
    "import sys\nsys.path.insert(0, '/home/pyodide/kernodeck')\n" +
      "from calculators.web import run_json",
  );
  mark("imported");
  return pyodide.globals.get("run_json");
})();

// The page times each computation from this message on: loading takes seconds and must not
// count. A failed load says so too (each request then answers with the error).
ready.then(
  () => self.postMessage({ ready: true }),
  (error) => self.postMessage({ ready: false, error: String(error?.message ?? error) }),
);

self.onmessage = async (event) => {
  const { id, name, inputs } = event.data;
  try {
    const runJson = await ready;
    const started = performance.now();
    const answer = JSON.parse(runJson(name, JSON.stringify(inputs)));
    if (!("computed" in self.kdStartup)) mark("computed");
    self.postMessage({ id, answer, ms: performance.now() - started });
  } catch (error) {
    // A Python exception's message is its whole traceback: the reader gets its last line.
    const text = String(error && error.message ? error.message : error).trim();
    self.postMessage({ id, error: text.split("\n").pop() });
  }
};
