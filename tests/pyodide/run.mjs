// The calculators' unit tests inside the pinned Pyodide (node_modules/pyodide), under Node.
//
//   node tests/pyodide/run.mjs WHEEL_DIR [pytest args...]
//
// WHEEL_DIR holds pure-Python wheels of pytest and hypothesis with their dependencies
// (`make pyodide-wheels` downloads them from PyPI); Pyodide's own pytest wheel is on its
// CDN, which the test machines cannot reach. The calculators package and the tests are
// copied from this repository into Pyodide's in-memory file system, so nothing of the
// host's Python is used. Exits with pytest's status.
import { loadPyodide } from "../../node_modules/pyodide/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const [wheelDir, ...pytestArgs] = process.argv.slice(2);
if (!wheelDir) {
  console.error("usage: node tests/pyodide/run.mjs WHEEL_DIR [pytest args...]");
  process.exit(2);
}

// Tests the browser's Python cannot run, each with its reason.
const DESELECTED = {
  "tests/test_purity.py": "spawns a CPython subprocess (no subprocesses in Pyodide)",
  "tests/browser": "drives Chromium with Playwright from CPython",
  "tests/pyodide": "this runner itself",
  "tests/test_web_hook.py": "imports the MkDocs hook, and MkDocs is not in this Pyodide",
  "tests/test_docs_figures.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_mlperf_raw_table.py": "tests a build script of benchmarks/, which is not copied here",
  "tests/test_evaluation_examples.py":
    "reruns the examples' generators, one with scikit-learn, which this Pyodide does not ship",
  "tests/test_notebook_cache.py": "executes notebooks in Jupyter kernels, in subprocesses",
  "tests/test_changed.py": "asks git, in a subprocess, what changed",
  "tests/test_test_profile.py": "tests a script of benchmarks/, which is not copied here",
  "tests/test_error_analysis_page.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_guide_shape.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_serving_sources.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_training_guides.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_evaluation_pages.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_ablations_guide.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_budget_seed_pages.py": "reads the site's Markdown pages, which are not copied here",
  "tests/test_cost_at_equal_quality_page.py":
    "reads the site's Markdown pages and benchmarks/, which are not copied here",
  "tests/test_lessons_onramp.py": "reads the lessons' notebooks and the site's navigation",
  "tests/test_lessons_download.py":
    "builds the site and runs the lessons in a new CPython environment, in subprocesses",
  "tests/test_lessons_reading_time.py": "reads the lessons' notebooks, which are not copied here",
  "tests/test_notebook_going_deeper.py":
    "imports the MkDocs hook and mkdocs-jupyter, which are not in this Pyodide",
  "tests/test_adaptation_contribution.py":
    "reruns the contribution example's training, with torch, PEFT and scikit-learn, which this Pyodide does not ship",
};
const DESELECTED_TESTS = {
  "tests/test_memory_guides.py::test_the_sizing_guide_gives_every_headroom_as_approximate":
    "reads the sizing guide's Markdown page, which is not copied here",
  "tests/test_memory_guides.py::test_the_envelope_pages_example_is_vllms_chunk_and_names_the_one_pass_case":
    "reads the envelope calculator's Markdown page, which is not copied here",
  "tests/test_cli.py::test_real_process_exits_2_without_traceback":
    "runs `python -m calculators` in a subprocess",
  "tests/test_commands_declaration.py::test_a_page_imports_only_the_calculator_it_shows":
    "runs a fresh CPython in a subprocess to see what one page imports",
  "tests/test_design.py::test_real_process_exits_2_without_traceback":
    "runs `python -m calculators` in a subprocess",
  "tests/test_figures.py::test_a_page_never_imports_the_figures":
    "runs a fresh CPython in a subprocess to see what one page imports",
  "tests/test_figure_memory_quality.py::test_a_page_quotes_the_committed_file_in_the_figures_arguments":
    "imports the MkDocs hook, and MkDocs is not in this Pyodide",
  "tests/test_protocol.py::test_every_item_links_to_a_heading_of_the_guide":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_protocol.py::test_every_tool_page_exists":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_seeds.py::test_the_seed_guides_clean_sweep_sentences_read_their_example":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_adaptation_guides.py::test_the_pages_throughput_blocks_are_the_inputs_computed_here":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_quantization_guide.py::test_the_page_blocks_are_the_inputs_these_tests_compute":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_quantization_guide.py::test_the_in_short_box_holds_each_decision_of_the_page":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_eval_size.py::test_the_pages_blocks_hold_the_inputs_these_tests_use":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_adaptation_guides.py::test_the_leakage_paragraph_names_every_check_of_the_protocols_leakage_step":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_adaptation_guides.py::test_the_plan_replicates_each_variant_and_a_control_on_the_seeds_of_a_stated_gain":
    "reads the site's Markdown pages, which are not copied here",
  "tests/test_quantization_guide.py::test_the_command_line_is_the_forms_launch":
    "reads the site's Markdown pages, which are not copied here",
};
const DESELECTED_GLOBS = {
  "tests/test_probe*": "the probes need torch, which this Pyodide does not ship",
};

function copyTree(pyodide, from, to) {
  pyodide.FS.mkdirTree(to);
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (entry.name === "__pycache__" || entry.name.startsWith(".")) continue;
    const src = path.join(from, entry.name);
    const dst = `${to}/${entry.name}`;
    if (entry.isDirectory()) copyTree(pyodide, src, dst);
    else if (entry.isFile()) pyodide.FS.writeFile(dst, fs.readFileSync(src));
  }
}

// An uncaught error would print Pyodide's whole minified source: report the message only.
process.on("uncaughtException", (error) => {
  console.error(`pyodide test run failed: ${error && error.message ? error.message : error}`);
  process.exit(3);
});
process.on("unhandledRejection", (error) => {
  console.error(`pyodide test run failed: ${error && error.message ? error.message : error}`);
  process.exit(3);
});

const pyodide = await loadPyodide();
const wheels = fs.readdirSync(wheelDir).filter((name) => name.endsWith(".whl"));
if (wheels.length === 0) {
  console.error(`no wheels in ${wheelDir}: run make pyodide-wheels`);
  process.exit(2);
}
const sitePackages = pyodide.runPython("import site; site.getsitepackages()[0]");
for (const name of wheels) {
  pyodide.unpackArchive(new Uint8Array(fs.readFileSync(path.join(wheelDir, name))), "wheel", {
    extractDir: sitePackages,
  });
}
const work = "/home/pyodide/repo";
copyTree(pyodide, path.join(root, "calculators"), `${work}/calculators`);
copyTree(pyodide, path.join(root, "tests"), `${work}/tests`);
// The example files the evaluation calculators start with (a file input's path is under
// docs/): their tests read them here as the pages' worker does.
copyTree(pyodide, path.join(root, "docs/data/evaluation"), `${work}/docs/data/evaluation`);
// The committed preflight report the checklist drawing is tested on (the page draws it at build).
copyTree(pyodide, path.join(root, "docs/data/validation"), `${work}/docs/data/validation`);
// The adaptation guides' committed data (contribution predictions, the protocol, the
// published quantization scoreboard) that their tests read.
copyTree(pyodide, path.join(root, "docs/data/adaptation"), `${work}/docs/data/adaptation`);
// The public vLLM startup logs the serve predictor is held to.
copyTree(pyodide, path.join(root, "docs/data/serving-logs"), `${work}/docs/data/serving-logs`);
// The lessons' exported model, which the generate calculator and its tests read.
pyodide.FS.mkdirTree(`${work}/docs/learn`); pyodide.FS.writeFile(`${work}/docs/learn/tinylm-weights.json`, fs.readFileSync(path.join(root, "docs/learn/tinylm-weights.json")));
// The text the lessons' model learned from: the generate tests check it is not recited.
pyodide.FS.mkdirTree(`${work}/probes/data/corpus`); pyodide.FS.writeFile(`${work}/probes/data/corpus/train.txt`, fs.readFileSync(path.join(root, "probes/data/corpus/train.txt")));
pyodide.FS.writeFile(`${work}/pyproject.toml`, fs.readFileSync(path.join(root, "pyproject.toml")));

for (const [what, why] of Object.entries({ ...DESELECTED, ...DESELECTED_GLOBS, ...DESELECTED_TESTS })) {
  console.log(`deselected in Pyodide: ${what}: ${why}`);
}
const args = [
  "-q",
  "-p",
  "no:cacheprovider",
  ...Object.keys(DESELECTED).map((p) => `--ignore=${p}`),
  ...Object.keys(DESELECTED_GLOBS).map((p) => `--ignore-glob=${p}`),
  ...Object.keys(DESELECTED_TESTS).map((p) => `--deselect=${p}`),
  ...pytestArgs,
];
pyodide.globals.set("pytest_args", pyodide.toPy(args));
const status = await pyodide.runPythonAsync(`
import os, sys, platform
os.chdir(${JSON.stringify(work)})
sys.path.insert(0, ${JSON.stringify(work)})
print("Python", platform.python_version(), "on", sys.platform)
import pytest
int(pytest.main(list(pytest_args)))
`);
process.exit(status);
