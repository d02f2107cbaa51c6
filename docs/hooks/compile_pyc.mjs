// Adds bytecode to the calculators' zip with the pinned Pyodide (called by kernodeck.py).
// stdin: the zip of calculators/*.py and data; stdout: the same zip plus, beside each
// module, __pycache__/NAME.cpython-3XX.pyc compiled by the Python the browser runs.
//
// Why: Pyodide compiles a module's source on every page load, about a third of the
// calculators' import time in the page. The .pyc files are hash-based and unchecked
// (PEP 552): they were compiled from the sources in the same zip, so their validity does
// not depend on file times after unpacking. A Python with another magic number ignores
// them and compiles the sources, which stay in the zip.
import fs from "node:fs";
import { loadPyodide } from "../../node_modules/pyodide/pyodide.mjs";

const source = new Uint8Array(fs.readFileSync(0));
const pyodide = await loadPyodide({ stdout: (line) => process.stderr.write(`${line}\n`) });
pyodide.FS.writeFile("/tmp/in.zip", source);
pyodide.runPython(`
import compileall, importlib.util, py_compile, zipfile

with zipfile.ZipFile("/tmp/in.zip") as z:
    z.extractall("/tmp/src")
    names = z.namelist()
ok = compileall.compile_dir(
    "/tmp/src", quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
)
if not ok:
    raise SystemExit("compileall failed")
with zipfile.ZipFile("/tmp/in.zip") as src, zipfile.ZipFile("/tmp/out.zip", "w") as out:
    for info in src.infolist():
        out.writestr(info, src.read(info.filename))
        if info.filename.endswith(".py"):
            cached = importlib.util.cache_from_source(info.filename)
            pyc = zipfile.ZipInfo(cached, info.date_time)
            pyc.compress_type = zipfile.ZIP_DEFLATED
            with open("/tmp/src/" + cached, "rb") as f:
                out.writestr(pyc, f.read())
`);
process.stdout.write(pyodide.FS.readFile("/tmp/out.zip"));
