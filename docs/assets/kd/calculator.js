// Calculator forms: recompute in a Web Worker (Pyodide) on every input change.
// The page already holds the prerendered result; this only replaces it in place.
(() => {
  "use strict";
  const base = new URL("./", document.currentScript.src);
  let worker = null;
  let nextId = 0;
  const waiting = new Map();

  function startWorker() {
    if (worker) return worker;
    worker = new Worker(new URL("worker.js", base), { type: "module" });
    worker.onmessage = (event) => {
      const { id } = event.data;
      const resolve = waiting.get(id);
      waiting.delete(id);
      if (resolve) resolve(event.data);
    };
    worker.onerror = (event) => {
      for (const resolve of waiting.values()) resolve({ error: event.message || "worker failed" });
      waiting.clear();
    };
    return worker;
  }

  function call(name, inputs) {
    const id = ++nextId;
    return new Promise((resolve) => {
      waiting.set(id, resolve);
      startWorker().postMessage({ id, name, inputs });
    });
  }

  function readInputs(form) {
    const inputs = {};
    for (const el of form.elements) {
      if (!el.name) continue;
      inputs[el.name] = el.type === "checkbox" ? el.checked : el.value;
    }
    return inputs;
  }

  function applyParams(form) {
    const params = new URLSearchParams(window.location.search);
    if (params.get("calc") !== form.dataset.calculator) return;
    for (const el of form.elements) {
      if (!el.name || !params.has(el.name)) continue;
      const value = params.get(el.name);
      if (el.type === "checkbox") el.checked = value === "true";
      else el.value = value;
    }
  }

  function shareUrl(form) {
    const params = new URLSearchParams({ calc: form.dataset.calculator });
    for (const [key, value] of Object.entries(readInputs(form))) {
      if (value !== "" && value !== false) params.set(key, String(value));
    }
    const url = new URL(window.location.href);
    url.search = params.toString();
    url.hash = form.id;
    return url.toString();
  }

  function setDownload(link, text, type) {
    if (link.href.startsWith("blob:")) URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([text], { type }));
  }

  function clearErrors(form) {
    for (const el of form.querySelectorAll(".kd-error")) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    const general = form.querySelector(".kd-form-error");
    general.hidden = true;
    general.textContent = "";
  }

  function showError(form, field, message) {
    const box = field && form.querySelector(`.kd-field[data-field="${field}"] .kd-error`);
    if (box) {
      box.textContent = message;
      box.hidden = false;
      const control = form.elements.namedItem(field);
      if (control && control.setAttribute) control.setAttribute("aria-invalid", "true");
    } else {
      const general = form.querySelector(".kd-form-error");
      general.textContent = message;
      general.hidden = false;
    }
  }

  function bind(form) {
    if (form.dataset.kdBound) return;
    form.dataset.kdBound = "1";
    const name = form.dataset.calculator;
    const result = form.querySelector("[data-result]");
    const status = form.querySelector("[data-status]");
    const share = form.querySelector("[data-share]");
    let latest = 0;

    async function recompute() {
      const ticket = ++latest;
      const inputs = readInputs(form);
      share.href = shareUrl(form);
      status.textContent = "computing in your browser…";
      const reply = await call(name, inputs);
      if (ticket !== latest) return; // a newer change is on its way
      clearErrors(form);
      if (reply.error) {
        status.textContent = "the in-browser calculator failed; the result shown is the last good one";
        showError(form, "", reply.error);
        return;
      }
      const answer = reply.answer;
      if (!answer.ok) {
        showError(form, answer.field, answer.message);
        status.textContent = "fix the input marked above; the result shown is the last good one";
        return;
      }
      result.innerHTML = answer.html;
      result.dataset.resultJson = answer.result_json;
      result.dataset.state = "ready";
      form.querySelector("[data-command]").textContent = answer.command;
      setDownload(form.querySelector('[data-download="json"]'), answer.result_json, "application/json");
      setDownload(form.querySelector('[data-download="csv"]'), answer.csv, "text/csv");
      status.textContent = "recomputed in your browser";
    }

    form.addEventListener("submit", (event) => event.preventDefault());
    form.addEventListener("input", recompute);
    form.addEventListener("change", (event) => {
      if (event.target.type === "checkbox" || event.target.tagName === "SELECT") return;
      recompute();
    });
    share.addEventListener("click", (event) => {
      event.preventDefault();
      const url = shareUrl(form);
      window.history.replaceState(null, "", url);
      if (navigator.clipboard) navigator.clipboard.writeText(url).catch(() => {});
      status.textContent = "link to these inputs copied to the address bar";
    });
    applyParams(form);
    recompute();
  }

  function init() {
    for (const form of document.querySelectorAll("form[data-calculator]")) bind(form);
  }

  // Start Pyodide as soon as a page with a calculator is parsed, before binding the forms.
  if (document.querySelector("form[data-calculator]")) startWorker();
  if (window.document$) window.document$.subscribe(init);
  else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
