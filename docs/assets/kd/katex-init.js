// Formulas: KaTeX from this site (npm package copied at build time), no CDN.
(() => {
  "use strict";
  function render() {
    for (const el of document.querySelectorAll(".arithmatex")) {
      window.renderMathInElement(el, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    }
  }
  if (window.document$) window.document$.subscribe(render);
  else document.addEventListener("DOMContentLoaded", render);
})();
