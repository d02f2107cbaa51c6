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
  setUpFiles(pyodide);
  return { pyodide, runJson: pyodide.globals.get("run_json") };
})();

// Files the forms hand over (the reader's own, or a page's example) live here; a file
// input's value is a path under it. The calculators read them as the command line does.
const FILES = "/home/pyodide/files";
let current = 0; // the request being computed: progress reports are about it
let lastProgress = 0;

function setUpFiles(pyodide) {
  pyodide.FS.mkdirTree(FILES);
  pyodide.runPython(
    `import calculators.web.forms as forms\nforms.FILE_ROOT = ${JSON.stringify(FILES)}`,
  );
  // At most ten reports a second reach the page, and the last one of a step always does.
  const listen = pyodide.runPython("from calculators.progress import listen\nlisten");
  listen((done, total, what) => {
    const now = performance.now();
    if (done < total && now - lastProgress < 100) return;
    lastProgress = now;
    self.postMessage({ id: current, progress: { done, total, what } });
  });
  listen.destroy();
}

function writeFiles(pyodide, files) {
  for (const { path, bytes } of files || []) {
    const target = `${FILES}/${path}`;
    pyodide.FS.mkdirTree(target.slice(0, target.lastIndexOf("/")));
    pyodide.FS.writeFile(target, new Uint8Array(bytes));
  }
}

// The page times each computation from this message on: loading takes seconds and must not
// count. A failed load says so too (each request then answers with the error).
ready.then(
  () => self.postMessage({ ready: true }),
  (error) => self.postMessage({ ready: false, error: String(error?.message ?? error) }),
);

self.onmessage = async (event) => {
  const { id, name, inputs, files } = event.data;
  try {
    const { pyodide, runJson } = await ready;
    writeFiles(pyodide, files);
    current = id;
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
