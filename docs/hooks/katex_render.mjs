// Renders LaTeX to HTML with the pinned KaTeX at build time (called by kernodeck.py).
// stdin: JSON [[tex, displayMode], ...]; stdout: JSON [html, ...]. A formula KaTeX cannot
// parse fails the build with its message.
import fs from "node:fs";
import katex from "../../node_modules/katex/dist/katex.mjs";

const items = JSON.parse(fs.readFileSync(0, "utf-8"));
const out = [];
for (const [tex, displayMode] of items) {
  try {
    out.push(katex.renderToString(tex, { displayMode, throwOnError: true, output: "html" }));
  } catch (error) {
    process.stderr.write(`KaTeX: ${error.message}\nin: ${tex}\n`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out));
