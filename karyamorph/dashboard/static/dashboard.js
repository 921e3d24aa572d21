// The workbench's wiring: the editor and its line marks, opening a kernel, starting a run.
// Everything else on the page is server-rendered fragments swapped in by htmx.
(function () {
  "use strict";
  const initial = JSON.parse(document.getElementById("initial").textContent);
  const archSelect = document.getElementById("arch");
  const list = document.getElementById("diagnostics");
  const checkState = document.getElementById("check-state");
  let checkTimer = null;
  let checkSeq = 0;

  const editor = window.KMEditor.create(document.getElementById("editor"), initial.ptx, scheduleCheck);
  window.kmEditor = editor; // for the browser tests and the console

  function showDiagnostics(diagnostics, note) {
    editor.mark(diagnostics);
    list.replaceChildren();
    for (const d of diagnostics) {
      const item = document.createElement("li");
      item.className = d.severity;
      item.dataset.line = d.line;
      item.textContent = `line ${d.line}${d.column ? ":" + d.column : ""}: ${d.source || ""} ${d.severity}: ${d.message}`;
      list.appendChild(item);
    }
    if (note) {
      const item = document.createElement("li");
      item.className = "warning";
      item.textContent = note;
      list.appendChild(item);
    }
  }

  async function check() {
    const seq = ++checkSeq;
    checkState.textContent = "checking...";
    const response = await fetch("api/check", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ ptx: editor.getText(), arch: archSelect.value }),
    });
    if (seq !== checkSeq) return; // a newer edit is being checked
    const result = await response.json();
    showDiagnostics(result.diagnostics, result.note);
    const errors = result.diagnostics.filter((d) => d.severity === "error").length;
    checkState.textContent = errors ? `${errors} error${errors > 1 ? "s" : ""}`
      : result.arch ? `ptxas accepts it for ${result.arch}` : "";
    checkState.dataset.state = errors ? "errors" : "ok";
  }

  function scheduleCheck() {
    clearTimeout(checkTimer);
    checkState.textContent = "";
    checkState.dataset.state = "pending";
    checkTimer = setTimeout(check, 350);
  }

  function load(bench) {
    if (bench.error) { showDiagnostics([], bench.error); return; }
    editor.setText(bench.ptx);
    document.getElementById("spec-toml-text").value = bench.toml;
    htmx.ajax("POST", "spec/form", { target: "#spec-form-wrap", values: { toml: bench.toml } });
  }

  document.getElementById("open-example").addEventListener("change", async (event) => {
    if (!event.target.value) return;
    load(await (await fetch(`api/examples/${encodeURIComponent(event.target.value)}`)).json());
    event.target.value = "";
  });

  document.body.addEventListener("click", async (event) => {
    const button = event.target.closest(".edit-run");
    if (!button) return;
    load(await (await fetch(`api/runs/${encodeURIComponent(button.dataset.run)}/source`)).json());
    window.scrollTo({ top: 0, behavior: "smooth" });
  });

  archSelect.addEventListener("change", scheduleCheck);

  document.getElementById("run-button").addEventListener("click", async () => {
    const fields = Object.fromEntries(new FormData(document.getElementById("spec-form")).entries());
    const stages = [...document.querySelectorAll("input[name=stage]:checked")].map((c) => c.value);
    const response = await fetch("api/run", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ ptx: editor.getText(), fields, stages, arch: archSelect.value,
                             label: document.getElementById("run-label").value }),
    });
    const answer = await response.json();
    const job = document.getElementById("job");
    if (answer.error) {
      job.innerHTML = "";
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = answer.error;
      job.appendChild(p);
      return;
    }
    htmx.ajax("GET", `jobs/${answer.job_id}`, { target: "#job", swap: "innerHTML" });
  });

  // A finished run tells the run list to refresh, and its compile errors go onto their lines.
  document.body.addEventListener("htmx:afterSettle", () => {
    const done = document.querySelector("#job .job[data-state=done], #job .job[data-state=failed]");
    if (!done || done.dataset.announced) return;
    done.dataset.announced = "1";
    const marks = done.querySelector(".job-diagnostics");
    const diagnostics = marks ? JSON.parse(marks.textContent) : [];
    if (diagnostics.length) {
      showDiagnostics(diagnostics.filter((d) => d.line).map((d) => ({
        line: d.line, column: d.column, message: d.message, source: "ptxas",
        severity: d.severity === "warning" ? "warning" : "error",
      })));
    }
    htmx.trigger(document.body, "runs-changed");
  });

  check();
})();
