// molprop web page: small inputs -> POST /v1/predict, larger ones -> POST /v1/jobs with a
// progress bar (GET /v1/jobs/{id}), then GET /v1/jobs/{id}/results (CSV).
// Everything from the user or the server is inserted with textContent, never as HTML.
"use strict";

(function () {
  const config = JSON.parse(document.getElementById("molprop-config").textContent);
  const $ = (id) => document.getElementById(id);
  const form = $("predict-form");
  if (!form) return; // no model served: the page says so

  const state = {
    rows: [], // normalised result rows (see rowFromApi / rowFromCsv)
    total: 0, // rows in the whole result (a job's table may show fewer)
    csv: null, // a job's results CSV as downloaded
    model: null,
    job: null,
    sort: { key: "index", dir: 1 },
  };

  // ------------------------------------------------------------------ helpers

  function message(text, kind) {
    const el = $("message");
    el.textContent = text;
    el.className = kind || "";
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const key = $("api-key").value;
    if (config.needsKey && key) h["X-API-Key"] = key;
    return h;
  }

  function selectedModel() {
    const name = $("model").value;
    return config.models.find((m) => m.name === name);
  }

  function smilesColumn() {
    return $("smiles-column").value.trim() || "smiles";
  }

  function intervalLevel() {
    const v = $("interval").value;
    return v === "none" ? null : Number(v);
  }

  async function errorText(response) {
    let detail = "";
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (e) {
      detail = response.statusText;
    }
    return `HTTP ${response.status}: ${detail}`;
  }

  // RFC 4180 CSV -> array of rows (arrays of strings); quoted fields, "" escapes, CRLF.
  function parseCsv(text) {
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const rows = [];
    let row = [];
    let field = "";
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (quoted) {
        if (c === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i++;
          } else quoted = false;
        } else field += c;
      } else if (c === '"' && field === "") quoted = true;
      else if (c === ",") {
        row.push(field);
        field = "";
      } else if (c === "\n" || c === "\r") {
        if (c === "\r" && text[i + 1] === "\n") i++;
        row.push(field);
        rows.push(row);
        row = [];
        field = "";
      } else field += c;
    }
    if (field !== "" || row.length) {
      row.push(field);
      rows.push(row);
    }
    return rows;
  }

  // a text cell that a spreadsheet would run as a formula (=, +, -, @, tab or CR first, and
  // not a plain number) gets a ' in front, as the service's CSVs do (molprop.io.sink.safe_cell)
  function safeCell(s) {
    const number = /^[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf)$/;
    return /^[=+\-@\t\r]/.test(s) && !number.test(s) ? `'${s}` : s;
  }

  function csvField(value) {
    if (value === null || value === undefined) return "";
    const s = typeof value === "string" ? safeCell(value) : String(value);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  }

  // an output column named like an input column is pred_<name> (the prefix repeated until the
  // name is free), as in the service's results (molprop.inference.rows.output_name)
  function outputName(name, inputs) {
    let out = name;
    while (inputs.includes(out)) out = `pred_${out}`;
    return out;
  }

  function fmt(v) {
    if (v === null || v === undefined || !Number.isFinite(v)) return "";
    const a = Math.abs(v);
    return a !== 0 && (a >= 1e4 || a < 1e-3) ? v.toExponential(2) : v.toFixed(3);
  }

  function num(s) {
    if (s === undefined || s === null || s === "") return null;
    const v = Number(s);
    return Number.isFinite(v) ? v : null;
  }

  function bool(s) {
    if (s === true || s === false) return s;
    if (s === undefined || s === null || s === "") return null;
    return ["true", "1", "yes"].includes(String(s).toLowerCase());
  }

  // --------------------------------------------------------------- result rows

  function rowFromApi(r) {
    return {
      index: r.index,
      id: r.id === null || r.id === undefined ? "" : String(r.id),
      smiles: r.smiles,
      standardized: r.standardized_smiles || "",
      value: r.value,
      uncertainty: r.uncertainty,
      low: r.interval ? r.interval.low : null,
      high: r.interval ? r.interval.high : null,
      in_domain: r.status === "ok" ? r.in_domain : null,
      status: r.status,
      error: r.error || "",
    };
  }

  // a job's results CSV: the input's columns (an upload's own SMILES and ID columns, or
  // "id" and "smiles" for pasted input), then the outputs from standardized_smiles on:
  // predictions, status and error (pred_<name> where an input column has the name)
  function rowsFromCsv(text, target, columns) {
    const table = parseCsv(text);
    const head = table[0] || [];
    const first = head.findLastIndex((name) => /^(pred_)*standardized_smiles$/.test(name));
    const inputs = first >= 0 ? head.slice(0, first) : head;
    const input = (name) => inputs.indexOf(safeCell(name));
    const output = (name) => (first >= 0 ? head.indexOf(outputName(name, inputs), first) : -1);
    const c = {
      id: columns.id ? input(columns.id) : -1,
      smiles: input(columns.smiles),
      standardized: output("standardized_smiles"),
      value: output(target),
      std: output(`${target}_std`),
      low: output(`${target}_low`),
      high: output(`${target}_high`),
      in_domain: output("in_domain"),
      status: output("status"),
      error: output("error"),
    };
    const get = (cells, i) => (i >= 0 && i < cells.length ? cells[i] : "");
    return table
      .slice(1)
      .filter((cells) => !(cells.length === 1 && cells[0] === ""))
      .map((cells, index) => {
        const status = get(cells, c.status);
        return {
          index,
          id: get(cells, c.id),
          smiles: get(cells, c.smiles),
          standardized: get(cells, c.standardized),
          value: num(get(cells, c.value)),
          uncertainty: num(get(cells, c.std)),
          low: num(get(cells, c.low)),
          high: num(get(cells, c.high)),
          in_domain: status === "ok" ? bool(get(cells, c.in_domain)) : null,
          status,
          error: get(cells, c.error),
        };
      });
  }

  function resultsCsv(rows, target) {
    const inputs = ["id", "smiles"];
    const outputs = ["standardized_smiles", target, `${target}_std`, "status", "error",
      "in_domain", `${target}_low`, `${target}_high`];
    const head = [...inputs, ...outputs.map((name) => outputName(name, inputs))];
    const lines = [head.map(csvField).join(",")];
    for (const r of [...rows].sort((a, b) => a.index - b.index)) {
      const domain = r.in_domain === null ? "" : r.in_domain ? "True" : "False";
      lines.push([r.id, r.smiles, r.standardized, r.value, r.uncertainty, r.status, r.error,
        domain, r.low, r.high].map(csvField).join(","));
    }
    return lines.join("\n") + "\n";
  }

  // ------------------------------------------------------------------- table

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function renderTable() {
    const tbody = $("results-table").querySelector("tbody");
    tbody.replaceChildren();
    for (const r of state.rows) {
      const tr = document.createElement("tr");
      tr.dataset.index = String(r.index);
      tr.dataset.status = r.status;
      // unsupported: a valid molecule outside what the model covers (inorganic, a metal, an
      // element never seen in training); failed: invalid input or an error
      const kind = r.status === "ok" || r.status === "unsupported" ? r.status : "failed";
      tr.className = `status-${kind}`;
      cell(tr, String(r.index + 1), "num");
      cell(tr, r.id, "id");
      const pic = cell(tr, "", "molecule");
      // the molecule the model read: the standardised one (largest organic fragment, neutral)
      const drawn = r.standardized || r.smiles;
      if (r.status === "ok") {
        const img = document.createElement("img");
        img.src = `/web/molecule.svg?smiles=${encodeURIComponent(drawn)}`;
        img.alt = `structure of ${drawn}`;
        img.loading = "lazy";
        img.width = 110;
        img.height = 80;
        pic.appendChild(img);
      }
      const smi = cell(tr, r.smiles, "smiles");
      if (r.standardized && r.standardized !== r.smiles) {
        // shown by web.css after the input ("read as ..."); the cell's text stays the input
        smi.dataset.standardized = r.standardized;
        smi.title = `read as ${r.standardized} (largest organic fragment, neutralised)`;
      }
      const value = cell(tr, fmt(r.value), "num value");
      if (r.value !== null) value.dataset.value = String(r.value);
      cell(tr, fmt(r.uncertainty), "num std");
      cell(tr, r.low === null ? "" : `${fmt(r.low)} – ${fmt(r.high)}`, "num interval");
      cell(tr, r.in_domain === null ? "" : r.in_domain ? "yes" : "no", "domain");
      cell(tr, r.status, "status");
      cell(tr, r.error, "error");
      tbody.appendChild(tr);
    }
    for (const th of $("results-table").querySelectorAll("th[data-key]")) {
      const sorted = th.dataset.key === state.sort.key;
      th.setAttribute("aria-sort", sorted ? (state.sort.dir > 0 ? "ascending" : "descending") : "none");
    }
  }

  function sortRows(key, type, dir) {
    const missing = (v) => v === null || v === undefined || v === "";
    state.rows.sort((a, b) => {
      const x = a[key];
      const y = b[key];
      if (missing(x) || missing(y)) {
        return missing(x) === missing(y) ? a.index - b.index : missing(x) ? 1 : -1; // last
      }
      const c = type === "number" ? x - y : String(x).localeCompare(String(y));
      return c !== 0 ? dir * c : a.index - b.index;
    });
    state.sort = { key, dir };
    renderTable();
  }

  function showResults(rows, total, model, note) {
    state.rows = rows;
    state.total = total;
    state.model = model;
    state.sort = { key: "index", dir: 1 };
    const unit = model.unit ? `, ${model.unit}` : "";
    $("value-header").textContent = `Value (${model.target}${unit})`;
    const ok = rows.filter((r) => r.status === "ok").length;
    let text = `${total} rows; model ${model.name}.`;
    if (rows.length === total) text = `${total} rows, ${ok} ok, ${total - ok} failed; model ${model.name}.`;
    $("results-summary").textContent = note ? `${text} ${note}` : text;
    $("results").hidden = false;
    renderTable();
  }

  // ------------------------------------------------------------- the inputs

  // -> {smiles: [...], ids: [...], note} or throws Error with a message for the user
  async function readInput() {
    const file = $("csv-file").files[0];
    if (file) {
      const text = await file.text();
      const table = parseCsv(text);
      if (!table.length) throw new Error(`${file.name} is empty`);
      const head = table[0];
      const smilesName = smilesColumn();
      const idColumn = $("id-column").value.trim();
      const s = head.indexOf(smilesName);
      if (s < 0) {
        throw new Error(`${file.name}: no column "${smilesName}" in the header (columns: ${head.join(", ")})`);
      }
      const k = idColumn ? head.indexOf(idColumn) : -1;
      if (idColumn && k < 0) {
        throw new Error(`${file.name}: no ID column "${idColumn}" in the header (columns: ${head.join(", ")})`);
      }
      const body = table.slice(1);
      // a file ending in a line break gives one empty last record: not a row
      if (body.length && body[body.length - 1].length === 1 && body[body.length - 1][0] === "") body.pop();
      return {
        file,
        smiles: body.map((cells) => cells[s] ?? ""),
        ids: k >= 0 ? body.map((cells) => cells[k] ?? "") : null,
        note: "",
      };
    }
    const lines = $("smiles").value.split(/\r\n|\r|\n/);
    const smiles = [];
    const ids = [];
    let blank = 0;
    lines.forEach((line, i) => {
      if (line.trim() === "") blank += 1;
      else {
        smiles.push(line.trim());
        ids.push(String(i + 1)); // the line number: rows stay traceable to the paste
      }
    });
    if (!smiles.length) throw new Error("paste at least one SMILES or choose a CSV file");
    const note = blank ? `${blank} blank line(s) skipped; ID = line number.` : "ID = line number.";
    return { file: null, smiles, ids, note };
  }

  async function predictSmall(input, model) {
    const body = { model: model.name, smiles: input.smiles, ids: input.ids, interval: intervalLevel() };
    const response = await fetch("/v1/predict", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });
    if (response.status === 413) return false; // too much for one request: run it as a job
    if (!response.ok) throw new Error(await errorText(response));
    const data = await response.json();
    state.csv = null;
    state.job = null;
    const rows = data.results.map(rowFromApi);
    showResults(rows, rows.length, model, input.note);
    const failed = rows.filter((r) => r.status !== "ok").length;
    message(failed ? `${failed} of ${rows.length} rows could not be predicted: see their status and error.` : "Done.", failed ? "warn" : "ok");
    return true;
  }

  async function submitJob(input, model) {
    let response;
    const level = intervalLevel();
    if (input.file) {
      const data = new FormData();
      data.append("file", input.file, input.file.name);
      data.append("model", model.name);
      data.append("smiles_column", smilesColumn());
      if ($("id-column").value.trim()) data.append("id_column", $("id-column").value.trim());
      if (level !== null) data.append("interval", String(level));
      response = await fetch("/v1/jobs", { method: "POST", headers: headers(), body: data });
    } else {
      const body = { model: model.name, smiles: input.smiles, ids: input.ids, interval: level };
      response = await fetch("/v1/jobs", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify(body),
      });
    }
    if (!response.ok) throw new Error(await errorText(response));
    const job = await response.json();
    state.job = job.id;
    const progress = $("job-progress");
    progress.dataset.seen = "";
    $("job").hidden = false;
    $("job-cancel").hidden = false;
    $("job-title").textContent = `Job ${job.id}`;
    message(`Job ${job.id} submitted (${job.rows_total} rows).`, "");
    if (input.file && level === null) {
      // the job form cannot say "no interval": the service's default level applies
      input.note = `${input.note} The job API's upload form has no "none" interval: the default interval is included.`.trim();
    }
    const columns = input.file
      ? { smiles: smilesColumn(), id: $("id-column").value.trim() }
      : { smiles: "smiles", id: "id" };
    await followJob(job, model, input.note, columns);
  }

  function showProgress(job) {
    const progress = $("job-progress");
    const total = Math.max(job.rows_total || 0, 1);
    progress.max = total;
    progress.value = Math.min(job.rows_done || 0, total);
    progress.dataset.seen = `${progress.dataset.seen ? progress.dataset.seen + "," : ""}${job.rows_done}`;
    $("job-text").textContent = `${job.rows_done} / ${job.rows_total} rows (${job.status})`;
  }

  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  async function followJob(job, model, note, columns) {
    showProgress(job);
    while (job.status === "queued" || job.status === "running") {
      await sleep(config.pollMs);
      const response = await fetch(`/v1/jobs/${encodeURIComponent(job.id)}`, { headers: headers() });
      if (!response.ok) throw new Error(await errorText(response));
      job = await response.json();
      showProgress(job);
    }
    $("job-cancel").hidden = true;
    if (job.status !== "done") {
      const why = job.error ? `: ${job.error}` : "";
      throw new Error(`job ${job.id} ${job.status}${why}`);
    }
    const response = await fetch(`/v1/jobs/${encodeURIComponent(job.id)}/results`, { headers: headers() });
    if (!response.ok) throw new Error(await errorText(response));
    state.csv = await response.text();
    const rows = rowsFromCsv(state.csv, model.target, columns);
    const shown = rows.slice(0, config.tableRows);
    const more = rows.length > shown.length ? `The table shows the first ${shown.length}; the CSV has all of them.` : "";
    showResults(shown, rows.length, model, [note, more].filter(Boolean).join(" "));
    const failed = rows.filter((r) => r.status !== "ok").length;
    message(`Job ${job.id} done: ${rows.length} rows, ${failed} failed.`, failed ? "warn" : "ok");
  }

  // ------------------------------------------------------------------ events

  async function onSubmit(event) {
    event.preventDefault();
    const button = $("predict");
    button.disabled = true;
    form.setAttribute("aria-busy", "true");
    message("Working…", "");
    try {
      const model = selectedModel();
      const input = await readInput();
      const small = input.smiles.length <= config.jobRows;
      if (!(small && (await predictSmall(input, model)))) await submitJob(input, model);
    } catch (err) {
      message(err instanceof Error ? err.message : String(err), "error");
    } finally {
      button.disabled = false;
      form.removeAttribute("aria-busy");
    }
  }

  function download() {
    const model = state.model;
    const text = state.csv !== null ? state.csv : resultsCsv(state.rows, model.target);
    const blob = new Blob([text], { type: "text/csv" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = state.job ? `molprop_${model.name}_job_${state.job}.csv` : `molprop_${model.name}.csv`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  }

  function showCard() {
    const name = $("model").value;
    for (const card of document.querySelectorAll("article.card")) card.hidden = card.dataset.model !== name;
  }

  form.addEventListener("submit", onSubmit);
  $("model").addEventListener("change", showCard);
  $("download").addEventListener("click", download);
  $("clear-file").addEventListener("click", () => {
    $("csv-file").value = "";
  });
  $("job-cancel").addEventListener("click", async () => {
    if (!state.job) return;
    const response = await fetch(`/v1/jobs/${encodeURIComponent(state.job)}`, { method: "DELETE", headers: headers() });
    if (!response.ok) message(await errorText(response), "error");
  });
  for (const th of $("results-table").querySelectorAll("th[data-key]")) {
    th.querySelector("button").addEventListener("click", () => {
      const key = th.dataset.key;
      const dir = state.sort.key === key ? -state.sort.dir : 1;
      sortRows(key, th.dataset.type, dir);
    });
  }
  $("api-key-field").hidden = !config.needsKey;
  showCard();
  document.body.dataset.ready = "true";
})();
