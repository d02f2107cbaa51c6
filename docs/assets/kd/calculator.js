// Calculator forms: recompute in a Web Worker (Pyodide) on every input change.
// The page already holds the prerendered result; this only replaces it in place.
(() => {
  "use strict";
  const base = new URL("./", document.currentScript.src);
  const siteRoot = new URL("../../", base); // this script is assets/kd/calculator.js
  // Example files a form starts with, fetched once per page from this site.
  const examples = new Map(); // url -> Promise<ArrayBuffer>
  // A computation the worker has not answered after this long is taken for a hang: the
  // worker is stopped and a fresh one answers the next request, so one input that computes
  // forever cannot leave the form stuck. Loading Pyodide (seconds) does not count: the clock
  // starts once the worker says it is ready. A test may set window.kdComputeTimeoutMs.
  const COMPUTE_TIMEOUT_MS = 5000;
  let worker = null; // { handle, loaded }
  let nextId = 0;
  // Requests sent and not answered, in the order sent: the worker answers them in that
  // order, so the first one is the one it is computing.
  const waiting = new Map(); // id -> { id, name, inputs, resolve }
  let watchdog = 0;

  function computeTimeoutMs() {
    const ms = Number(window.kdComputeTimeoutMs);
    return ms > 0 ? ms : COMPUTE_TIMEOUT_MS;
  }

  function startWorker() {
    if (worker) return worker;
    const handle = new Worker(new URL("worker.js", base), { type: "module" });
    const current = { handle, loaded: false };
    current.handle.onmessage = (event) => {
      if (worker !== current) return; // a stopped worker's last words
      const data = event.data;
      if ("ready" in data) {
        current.loaded = true;
      } else if ("progress" in data) {
        // A long computation says how far it is: it is alive, so its clock restarts below.
        const request = waiting.get(data.id);
        if (request && request.onProgress) request.onProgress(data.progress);
      } else {
        const request = waiting.get(data.id);
        waiting.delete(data.id);
        if (request) request.resolve(data);
      }
      armWatchdog();
    };
    current.handle.onerror = (event) => {
      if (worker !== current) return;
      // The worker's script failed: this one is dead, the next request starts another.
      stop(current);
      const failed = [...waiting.values()];
      waiting.clear();
      for (const request of failed) request.resolve({ error: event.message || "worker failed" });
    };
    worker = current;
    return current;
  }

  function stop(which) {
    clearTimeout(watchdog);
    watchdog = 0;
    which.handle.terminate();
    if (worker === which) worker = null;
  }

  // One timer, for the request the worker is on; it restarts with each answer, so a request
  // queued behind a slow one gets its own full time.
  function armWatchdog() {
    clearTimeout(watchdog);
    watchdog = 0;
    if (!worker || !worker.loaded || waiting.size === 0) return;
    const ms = computeTimeoutMs();
    watchdog = setTimeout(() => timedOut(ms), ms);
  }

  function timedOut(ms) {
    const [stuck, ...queued] = waiting.values();
    if (!stuck) return;
    waiting.clear();
    stop(worker);
    stuck.resolve({ timedOut: true, ms });
    // The requests queued behind it were never started: a fresh worker answers them.
    startWorker();
    for (const request of queued) send(request);
  }

  function send(request) {
    waiting.set(request.id, request);
    const { id, name, inputs, files } = request;
    startWorker().handle.postMessage({ id, name, inputs, files });
    if (waiting.size === 1) armWatchdog(); // the worker was idle: it starts on this one
  }

  function call(name, inputs, files, onProgress) {
    const id = ++nextId;
    return new Promise((resolve) => send({ id, name, inputs, files, resolve, onProgress }));
  }

  function readInputs(form) {
    const inputs = {};
    for (const el of form.elements) {
      if (!el.name || el.type === "file") continue;
      inputs[el.name] = el.type === "checkbox" ? el.checked : el.value;
    }
    return inputs;
  }

  function example(path) {
    const url = new URL(path, siteRoot).href;
    if (!examples.has(url)) {
      const loaded = fetch(url).then((response) => {
        if (!response.ok) throw new Error(`example file ${path}: HTTP ${response.status}`);
        return response.arrayBuffer();
      });
      loaded.catch(() => examples.delete(url)); // a failed fetch is tried again next time
      examples.set(url, loaded);
    }
    return examples.get(url);
  }

  // The form's files: the reader's own, read here and handed to the worker only, or the
  // example the page starts with. Each input's value is the file's path in the worker.
  async function readFiles(form, inputs) {
    const files = [];
    for (const el of form.elements) {
      if (!el.name || el.type !== "file") continue;
      const own = el.files && el.files[0];
      const path = own ? `uploads/${el.name}/${own.name}` : el.dataset.example;
      files.push({ path, bytes: own ? await own.arrayBuffer() : await example(path) });
      inputs[el.name] = path;
    }
    return files;
  }

  // A field the link leaves out keeps the page's value: links made before links carried
  // every field still open.
  function applyParams(form) {
    const params = new URLSearchParams(window.location.search);
    if (params.get("calc") !== form.dataset.calculator) return;
    for (const el of form.elements) {
      if (!el.name || el.type === "file" || !params.has(el.name)) continue;
      let value = params.get(el.name);
      // a retired choice name in an old link: the select's data-aliases maps it
      if (el.dataset.aliases) value = JSON.parse(el.dataset.aliases)[value] ?? value;
      if (el.type === "checkbox") el.checked = value === "true";
      else el.value = value;
    }
  }

  // Every field, empty ones and unticked boxes too: a field left out would come back at
  // the page's default, which is not what the reader saw (a cleared optional field).
  function shareUrl(form) {
    const params = new URLSearchParams({ calc: form.dataset.calculator });
    // A file cannot travel in a link: the form opened from it starts on the example file.
    for (const [key, value] of Object.entries(readInputs(form))) params.set(key, String(value));
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

  // Says which file the form computes with: the reader's (by name) or the example.
  function describeFile(el) {
    const own = el.files && el.files[0];
    const line = el.parentElement.querySelector("[data-file-current]");
    if (!line) return;
    if (!line.dataset.example) line.dataset.example = line.innerHTML;
    if (own) {
      line.textContent = `Computing with your file ${own.name}, read by your browser; it never leaves it.`;
    } else {
      line.innerHTML = line.dataset.example;
    }
  }

  function bind(form) {
    if (form.dataset.kdBound) return;
    form.dataset.kdBound = "1";
    const name = form.dataset.calculator;
    const result = form.querySelector("[data-result]");
    const status = form.querySelector("[data-status]");
    const share = form.querySelector("[data-share]");
    const progress = form.querySelector("[data-progress]");
    let latest = 0;

    function showProgress(ticket, { done, total, what }) {
      if (ticket !== latest || !progress) return;
      progress.hidden = false;
      progress.max = Math.max(total, 1);
      progress.value = Math.min(done, total);
      status.textContent = `${what}: ${done.toLocaleString("en")} of ${total.toLocaleString("en")}`;
    }

    async function recompute() {
      const ticket = ++latest;
      const inputs = readInputs(form);
      share.href = shareUrl(form);
      status.textContent = "computing in your browser…";
      let files;
      try {
        files = await readFiles(form, inputs);
      } catch (error) {
        if (ticket !== latest) return;
        clearErrors(form);
        status.textContent = "a file could not be read; the result shown is the last good one";
        showError(form, "", String(error && error.message ? error.message : error));
        return;
      }
      if (ticket !== latest) return;
      const reply = await call(name, inputs, files, (p) => showProgress(ticket, p));
      if (ticket !== latest) return; // a newer change is on its way
      if (progress) progress.hidden = true;
      clearErrors(form);
      if (reply.timedOut) {
        const why = `this input took more than ${reply.ms / 1000} s to compute, so it was stopped`;
        status.textContent = `${why}; the result shown is for the last inputs that worked`;
        showError(
          form,
          "",
          `The calculator in your browser stopped: ${why}. ` +
            "The result shown is for the last inputs that worked.",
        );
        return;
      }
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
      for (const [stem, text] of Object.entries(answer.tables || {})) {
        const link = form.querySelector(`[data-download="csv:${stem}"]`);
        if (link) setDownload(link, text, "text/csv");
      }
      status.textContent = "recomputed in your browser";
    }

    form.addEventListener("submit", (event) => event.preventDefault());
    form.addEventListener("input", (event) => {
      if (event.target.type !== "file") recompute(); // a file: its change event below
    });
    form.addEventListener("change", (event) => {
      if (event.target.type === "checkbox" || event.target.tagName === "SELECT") return;
      if (event.target.type === "file") describeFile(event.target);
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
