// molprop web page: small inputs -> POST /v1/predict, larger ones -> POST /v1/jobs with a
// progress bar (GET /v1/jobs/{id}), then GET /v1/jobs/{id}/results (CSV; a page at a time
// with ?offset=&limit= when the job has more rows than a table page). A predicted row's
// per-atom picture comes from POST /v1/explain and is shown as an <img> from a blob: URL.
// A panel (several models at once, GET /v1/panels) or a multitask model is answered by
// POST /v1/predict with the panel response and shown as the panel view: a table of the rows,
// a molecule's profile (every endpoint with unit, interval, domain flag and percentile among
// approved drugs; a radar plot of the percentiles drawn here as inline SVG; physchem and
// alerts) and a CSV of the panel's columns.
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
    offset: 0, // the first row of the page shown (config.tableRows rows a page)
    // a job larger than a page: {id, columns, total}; its pages come from
    // GET /v1/jobs/{id}/results?offset=&limit= and state.rows is the page shown
    remote: null,
    // the panel view's results: {view, rows (the API's panel results), interval, units}
    panel: null,
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

  // what the panel view shows for the choice: a panel, or a multitask model (a panel of that
  // one model: one endpoint per target); null for a one-target model
  function selectedPanel() {
    const name = $("model").value;
    const model = selectedModel();
    if (model) {
      if (!model.targets || model.targets.length < 2) return null;
      const endpoints = model.targets.map((t) => ({ target: t.name, unit: t.unit, model: model.name, task: model.task, interval_coverage: t.interval_coverage || [] }));
      return { name, kind: "model", endpoints };
    }
    const panel = (config.panels || []).find((p) => p.name === name);
    return panel ? { name, kind: "panel", endpoints: panel.endpoints, endpointStatus: !!panel.endpoint_status } : null;
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
      level: r.interval ? r.interval.level : null,
      in_domain: r.status === "ok" ? r.in_domain : null,
      similarity: r.status === "ok" && typeof r.similarity === "number" ? r.similarity : null,
      status: r.status,
      error: r.error || "",
    };
  }

  // a job's results CSV: the input's columns (an upload's own SMILES and ID columns, or
  // "id" and "smiles" for pasted input), then the outputs from standardized_smiles on:
  // predictions, status and error (pred_<name> where an input column has the name)
  function rowsFromCsv(text, target, columns, start = 0) {
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
      similarity: output("similarity"),
      status: output("status"),
      error: output("error"),
    };
    const get = (cells, i) => (i >= 0 && i < cells.length ? cells[i] : "");
    return table
      .slice(1)
      .filter((cells) => !(cells.length === 1 && cells[0] === ""))
      .map((cells, i) => {
        const status = get(cells, c.status);
        return {
          index: start + i,
          id: get(cells, c.id),
          smiles: get(cells, c.smiles),
          standardized: get(cells, c.standardized),
          value: num(get(cells, c.value)),
          uncertainty: num(get(cells, c.std)),
          low: num(get(cells, c.low)),
          high: num(get(cells, c.high)),
          in_domain: status === "ok" ? bool(get(cells, c.in_domain)) : null,
          similarity: status === "ok" ? num(get(cells, c.similarity)) : null,
          status,
          error: get(cells, c.error),
        };
      });
  }

  function resultsCsv(rows, target) {
    const inputs = ["id", "smiles"];
    const outputs = ["standardized_smiles", target, `${target}_std`, "status", "error",
      "in_domain", "similarity", `${target}_low`, `${target}_high`];
    const head = [...inputs, ...outputs.map((name) => outputName(name, inputs))];
    const lines = [head.map(csvField).join(",")];
    for (const r of [...rows].sort((a, b) => a.index - b.index)) {
      const domain = r.in_domain === null ? "" : r.in_domain ? "True" : "False";
      lines.push([r.id, r.smiles, r.standardized, r.value, r.uncertainty, r.status, r.error,
        domain, r.similarity, r.low, r.high].map(csvField).join(","));
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
    const total = state.remote ? state.remote.total : state.rows.length;
    state.offset = Math.max(0, Math.min(state.offset, total - 1));
    const end = Math.min(total, state.offset + config.tableRows);
    const shown = state.remote ? state.rows : state.rows.slice(state.offset, end);
    $("pager").hidden = total <= config.tableRows;
    $("page-text").textContent = `rows ${total ? state.offset + 1 : 0}–${end} of ${total}`;
    $("page-prev").disabled = state.offset === 0;
    $("page-next").disabled = end >= total;
    for (const r of shown) {
      const tr = document.createElement("tr");
      tr.dataset.index = String(r.index);
      tr.dataset.status = r.status;
      // unsupported: a valid molecule outside what the model covers (inorganic, a metal, an
      // element never seen in training); failed: invalid input or an error
      const kind = r.status === "ok" || r.status === "unsupported" ? r.status : "failed";
      tr.className = `status-${kind}`;
      if (r.status === "ok") {
        tr.classList.add("explainable");
        tr.tabIndex = 0;
        tr.title = "click: the per-atom explanation of this prediction";
      }
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
      const similar = r.similarity === null || r.similarity === undefined ? "" : ` (${r.similarity.toFixed(2)})`;
      const domain = cell(tr, r.in_domain === null ? "" : `${r.in_domain ? "yes" : "no"}${similar}`, "domain");
      if (similar) domain.title = `nearest training molecule: Tanimoto similarity ${r.similarity.toFixed(2)}`;
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
    if (!state.remote) state.offset = 0; // a job's page is sorted in place
    renderTable();
  }

  function percent(level) {
    return `${Number((level * 100).toFixed(1))} %`;
  }

  // how the intervals at `level` covered the model's test molecules (GET /v1/models or
  // /v1/panels: interval_coverage), or null where not measured at that level
  function measuredCoverage(coverages, level) {
    if (level === null || level === undefined) return null;
    return (coverages || []).find((c) => Math.abs(c.level - level) < 1e-9) || null;
  }

  function coverageText(c) {
    const verdict =
      c.verdict === "below"
        ? " That is significantly less than stated: read these intervals as too narrow."
        : c.verdict === "above"
          ? " That is significantly more than stated: these intervals are wider than needed."
          : "";
    return `On the model's ${c.n} test molecules the ${percent(c.level)} interval contained ` +
      `${percent(c.coverage)} of the measured values (95 % CI ${percent(c.cp_low)}–${percent(c.cp_high)}).${verdict}`;
  }

  // the headers of std, interval and domain say what they mean (title: a tooltip; the
  // "What the columns mean" list below the table is their accessible description)
  function explainColumns(model, level) {
    const std =
      "Standard deviation of the ensemble members' predictions: how much the members " +
      "disagree (not a calibrated error bar)." +
      (model.n_members > 1 ? ` This model has ${model.n_members} members.` : " This model has one member: no std.");
    const interval =
      level === null
        ? "No interval: none was asked for, or the model is not calibrated for one (a classifier, or no calibration set)."
        : `Calibrated prediction interval at ${percent(level)} (split-conformal): for molecules like the ` +
          `calibration set, the measured value lies inside it ${percent(level)} of the time (see the model card).` +
          (() => {
            const c = measuredCoverage(model.targets && model.targets.length ? model.targets[0].interval_coverage : [], level);
            return c ? ` ${coverageText(c)}` : "";
          })();
    const threshold = model.domain_threshold;
    const domain =
      threshold === null || threshold === undefined
        ? "Applicability domain: this model has none, so no row is flagged."
        : "Applicability domain: yes when the nearest training molecule has a Tanimoto similarity " +
          `(Morgan fingerprints) of at least ${threshold.toFixed(2)}, the threshold in the model card, ` +
          "and the molecule's size is within the training range. The number in brackets is that similarity.";
    const set = (header, help, text) => {
      $(header).title = text;
      $(help).textContent = text;
    };
    set("std-header", "help-std", std);
    set("interval-header", "help-interval", interval);
    set("domain-header", "help-domain", domain);
    $("interval-header").textContent = `Interval (${level === null ? "none" : percent(level)})`;
  }

  function showResults(rows, total, model, note, level, remote = null) {
    $("panel-results").hidden = true;
    state.panel = null;
    state.remote = remote;
    state.rows = rows;
    state.total = total;
    state.model = model;
    state.sort = { key: "index", dir: 1 };
    state.offset = 0;
    explained++; // an explanation still on its way belongs to the previous results
    $("explanation").hidden = true;
    const unit = model.unit ? `, ${model.unit}` : "";
    $("value-header").textContent = `Value (${model.target}${unit})`;
    // the level the rows carry (an uploaded job without one gets the service's default)
    const given = rows.find((r) => r.level !== null && r.level !== undefined);
    const anyInterval = rows.some((r) => r.low !== null);
    explainColumns(model, given ? given.level : anyInterval || rows.every((r) => r.status !== "ok") ? level : null);
    const ok = rows.filter((r) => r.status === "ok").length;
    let text = `${total} rows; model ${model.name}.`;
    if (rows.length === total) text = `${total} rows, ${ok} ok, ${total - ok} failed; model ${model.name}.`;
    $("results-summary").textContent = note ? `${text} ${note}` : text;
    $("results").hidden = false;
    renderTable();
  }

  // ------------------------------------------------------------- the inputs

  // the header's column called `name`: an exact match, else the one column whose name differs
  // only in case ("SMILES" for "smiles"); none or several such: an Error saying so
  function findColumn(fileName, head, name, what) {
    const exact = head.indexOf(name);
    if (exact >= 0) return exact;
    const lower = name.toLowerCase();
    const matches = head.map((h, i) => [h, i]).filter(([h]) => h.toLowerCase() === lower);
    if (matches.length === 1) return matches[0][1];
    const columns = head.join(", ");
    if (matches.length > 1) {
      const names = matches.map(([h]) => `"${h}"`).join(", ");
      throw new Error(`${fileName}: several columns match "${name}" apart from case (${names}): type the one to use exactly`);
    }
    throw new Error(`${fileName}: no ${what} "${name}" in the header (columns: ${columns})`);
  }

  // the first bytes of a zip archive (.xlsx, .ods) and of an OLE file (.xls): no text table
  const SPREADSHEET_MAGIC = [[0x50, 0x4b, 0x03, 0x04], [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]];

  async function isSpreadsheet(file) {
    const head = new Uint8Array(await file.slice(0, 8).arrayBuffer());
    return SPREADSHEET_MAGIC.some((magic) => magic.every((byte, i) => head[i] === byte));
  }

  // -> {smiles: [...], ids: [...], smilesColumn, idColumn, note} or throws Error with a
  // message for the user
  async function readInput() {
    const file = $("csv-file").files[0];
    if (file) {
      if (await isSpreadsheet(file)) {
        throw new Error(`${file.name} is a spreadsheet, not a CSV file: save it as CSV (in Excel: File > Save As > CSV UTF-8) and choose that file`);
      }
      const text = await file.text();
      const table = parseCsv(text);
      if (!table.length) throw new Error(`${file.name} is empty`);
      const head = table[0];
      const smilesName = smilesColumn();
      const idColumn = $("id-column").value.trim();
      const s = findColumn(file.name, head, smilesName, "column");
      const k = idColumn ? findColumn(file.name, head, idColumn, "ID column") : -1;
      const body = table.slice(1);
      // a file ending in a line break gives one empty last record: not a row
      if (body.length && body[body.length - 1].length === 1 && body[body.length - 1][0] === "") body.pop();
      return {
        file,
        smilesColumn: head[s],
        idColumn: k >= 0 ? head[k] : "",
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
    return { file: null, smilesColumn: "smiles", idColumn: "", smiles, ids, note };
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
    showResults(rows, rows.length, model, input.note, intervalLevel());
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
      data.append("smiles_column", input.smilesColumn);
      if (input.idColumn) data.append("id_column", input.idColumn);
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
      ? { smiles: input.smilesColumn, id: input.idColumn }
      : { smiles: "smiles", id: "id" };
    // the upload form's default level (api/job_schemas.py JobUpload.interval) when "none"
    const effective = input.file && level === null ? 0.9 : level;
    await followJob(job, model, input.note, columns, effective);
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

  async function followJob(job, model, note, columns, level) {
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
    if (job.rows_total > config.tableRows) {
      // a page at a time from the service; Download CSV fetches the whole result
      state.csv = null;
      const remote = { id: job.id, columns, total: job.rows_total };
      const rows = await fetchPage(remote, model, 0);
      const more = `The table shows ${config.tableRows} rows a page (sorting sorts the page); Download CSV has all of them.`;
      showResults(rows, job.rows_total, model, [note, more].filter(Boolean).join(" "), level, remote);
      message(`Job ${job.id} done: ${job.rows_total} rows; see each row's status, or Download CSV.`, "ok");
      return;
    }
    const response = await fetch(`/v1/jobs/${encodeURIComponent(job.id)}/results`, { headers: headers() });
    if (!response.ok) throw new Error(await errorText(response));
    state.csv = await response.text();
    const rows = rowsFromCsv(state.csv, model.target, columns);
    showResults(rows, rows.length, model, note, level);
    const failed = rows.filter((r) => r.status !== "ok").length;
    message(`Job ${job.id} done: ${rows.length} rows, ${failed} failed.`, failed ? "warn" : "ok");
  }

  // rows offset .. offset + config.tableRows - 1 of a job's results
  async function fetchPage(remote, model, offset) {
    const url = `/v1/jobs/${encodeURIComponent(remote.id)}/results?offset=${offset}&limit=${config.tableRows}`;
    const response = await fetch(url, { headers: headers() });
    if (!response.ok) throw new Error(await errorText(response));
    return rowsFromCsv(await response.text(), model.target, remote.columns, offset);
  }

  async function turnPage(step) {
    const offset = state.offset + step * config.tableRows;
    if (!state.remote) {
      state.offset = offset;
      renderTable();
      return;
    }
    const buttons = [$("page-prev"), $("page-next")];
    for (const b of buttons) b.disabled = true;
    try {
      const remote = state.remote;
      const rows = await fetchPage(remote, state.model, offset);
      if (state.remote !== remote) return; // new results meanwhile
      state.rows = rows;
      state.offset = offset;
      state.sort = { key: "index", dir: 1 };
    } catch (err) {
      message(err instanceof Error ? err.message : String(err), "error");
    }
    renderTable();
  }

  // ------------------------------------------------------------ explanation

  let explained = 0; // the latest explanation asked for: older answers are dropped

  // POST /v1/explain for one row; its SVG is shown as an <img> from a blob: URL (an SVG in
  // an <img> runs nothing), never inserted as markup
  async function explainRow(r) {
    const ticket = ++explained;
    const model = state.model;
    const picture = $("explanation-picture");
    $("explanation").hidden = false;
    $("explanation-text").textContent = `Explaining row ${r.index + 1} (${r.smiles})…`;
    for (const tr of $("results-table").querySelectorAll("tbody tr")) {
      tr.classList.toggle("selected", tr.dataset.index === String(r.index));
    }
    try {
      const response = await fetch("/v1/explain", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify({ model: model.name, smiles: [r.smiles], svg: true }),
      });
      if (!response.ok) throw new Error(await errorText(response));
      const data = await response.json();
      if (ticket !== explained) return;
      const result = data.results[0];
      if (!result || result.status !== "ok" || !result.svg) {
        const why = result && result.error ? `: ${result.error}` : "";
        throw new Error(`row ${r.index + 1} could not be explained${why}`);
      }
      if (picture.src.startsWith("blob:")) URL.revokeObjectURL(picture.src);
      picture.src = URL.createObjectURL(new Blob([result.svg], { type: "image/svg+xml" }));
      picture.alt = `per-atom contributions to the prediction for ${r.smiles}`;
      picture.hidden = false;
      const units = data.space === "logit" ? "logit" : data.unit || model.target;
      $("explanation-text").textContent =
        `Row ${r.index + 1} (${r.smiles}): each atom's contribution to the prediction ` +
        `(${units}; ${data.method}); green raises it, pink lowers it.`;
    } catch (err) {
      if (ticket !== explained) return;
      picture.hidden = true;
      $("explanation-text").textContent = err instanceof Error ? err.message : String(err);
    }
  }

  function rowOf(event) {
    const tr = event.target.closest("tr.explainable");
    if (!tr) return null;
    return state.rows.find((r) => String(r.index) === tr.dataset.index) || null;
  }

  // -------------------------------------------------------------- panel view

  // POST /v1/predict with the panel (or multitask model) for every row: config.jobRows rows a
  // request (halved while the service answers 413: the work of a panel counts every model)
  async function runPanel(input, view) {
    const level = intervalLevel();
    const n = input.smiles.length;
    const rows = [];
    let size = config.jobRows;
    let data = null;
    for (let start = 0; start < n; ) {
      const end = Math.min(n, start + size);
      if (n > end - start) message(`Working… rows ${start + 1}–${end} of ${n}`, "");
      const body = { model: view.name, smiles: input.smiles.slice(start, end), interval: level };
      if (input.ids) body.ids = input.ids.slice(start, end);
      const response = await fetch("/v1/predict", {
        method: "POST",
        headers: headers({ "Content-Type": "application/json" }),
        body: JSON.stringify(body),
      });
      if (response.status === 413 && end - start > 1) {
        size = Math.ceil((end - start) / 2);
        continue;
      }
      if (!response.ok) throw new Error(await errorText(response));
      data = await response.json();
      for (const r of data.results) rows.push(Object.assign({}, r, { index: start + r.index }));
      start = end;
    }
    state.csv = null;
    state.job = null;
    showPanel(view, rows, data, input.note);
    const failed = rows.filter((r) => r.status !== "ok").length;
    message(failed ? `${failed} of ${rows.length} rows could not be predicted: see their status and error.` : "Done.", failed ? "warn" : "ok");
  }

  const ENDPOINT_SUFFIXES = ["_unit", "_std", "_low", "_high", "_percentile", "_in_domain", "_similarity"];

  function yesNo(v) {
    return v === null || v === undefined ? "" : v ? "yes" : "no";
  }

  function ordinal(n) {
    const suffix = ["th", "st", "nd", "rd"];
    const v = n % 100;
    return `${n}${suffix[(v - 20) % 10] || suffix[v] || suffix[0]}`;
  }

  function label(e) {
    return e.unit ? `${e.target} (${e.unit})` : e.target;
  }

  function showPanel(view, rows, data, note) {
    $("results").hidden = true;
    explained++;
    // the endpoints as the service answered them (every row has all of them, in panel order)
    const endpoints = rows.length ? rows[0].endpoints.map((e) => ({ target: e.target, unit: e.unit, model: e.model })) : view.endpoints;
    state.panel = { view, rows, endpoints, interval: data ? data.interval : null, units: data ? data.physchem_units : {} };
    const ok = rows.filter((r) => r.status === "ok").length;
    const what = view.kind === "panel" ? `panel ${view.name}` : `model ${view.name}`;
    const text = `${rows.length} rows, ${ok} ok, ${rows.length - ok} failed; ${what}, ${endpoints.length} endpoints.`;
    $("panel-title").textContent = view.kind === "panel" ? `Panel ${view.name}` : `${view.name}: every target`;
    $("panel-summary").textContent = note ? `${text} ${note}` : text;
    $("panel-interval-header").textContent = `Interval (${state.panel.interval === null ? "none" : percent(state.panel.interval)})`;
    $("panel-results").hidden = false;
    const table = $("panel-table");
    table.hidden = rows.length === 1;
    $("panel-detail").hidden = true;
    if (rows.length === 1) {
      showProfile(rows[0]);
      return;
    }
    const head = table.querySelector("thead tr");
    head.replaceChildren();
    for (const name of ["#", "ID", "SMILES", "Status", ...endpoints.map(label), "Error"]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = name;
      head.appendChild(th);
    }
    const tbody = table.querySelector("tbody");
    tbody.replaceChildren();
    const shown = rows.slice(0, config.tableRows);
    for (const r of shown) {
      const tr = document.createElement("tr");
      tr.dataset.index = String(r.index);
      tr.dataset.status = r.status;
      tr.className = `status-${r.status === "ok" || r.status === "unsupported" ? r.status : "failed"} profile-row`;
      tr.tabIndex = 0;
      tr.title = "click: this molecule's whole profile";
      cell(tr, String(r.index + 1), "num");
      cell(tr, r.id === null || r.id === undefined ? "" : String(r.id), "id");
      cell(tr, r.smiles, "smiles");
      cell(tr, r.status, "status");
      for (const e of r.endpoints) {
        const td = cell(tr, fmt(e.value), "num endpoint");
        td.dataset.target = e.target;
        if (e.value !== null) td.dataset.value = String(e.value);
        if (e.percentile !== null && e.percentile !== undefined) {
          td.dataset.percentile = String(e.percentile);
          const pct = document.createElement("span");
          pct.className = "percentile";
          pct.textContent = `${ordinal(Math.round(e.percentile))} pct`;
          td.appendChild(pct);
        }
        if (e.status !== "ok" && e.error) td.title = e.error;
      }
      cell(tr, r.error || "", "error");
      tbody.appendChild(tr);
    }
    if (rows.length > shown.length) {
      $("panel-summary").textContent += ` The table shows the first ${shown.length} rows; Download CSV has all of them.`;
    }
  }

  // one molecule's profile: its endpoints, the radar plot, physchem and alerts
  function showProfile(r) {
    const detail = $("panel-detail");
    detail.hidden = false;
    detail.dataset.index = String(r.index);
    for (const tr of $("panel-table").querySelectorAll("tbody tr")) {
      tr.classList.toggle("selected", tr.dataset.index === String(r.index));
    }
    const why = r.status === "ok" ? "" : ` (${r.status}${r.error ? `: ${r.error}` : ""})`;
    $("panel-detail-title").textContent = `Profile of row ${r.index + 1}`;
    $("panel-detail-text").textContent = `${r.smiles}${why}`;
    const tbody = $("panel-endpoints").querySelector("tbody");
    tbody.replaceChildren();
    for (const e of r.endpoints) {
      const tr = document.createElement("tr");
      tr.dataset.target = e.target;
      tr.dataset.status = e.status;
      tr.className = `status-${e.status === "ok" || e.status === "unsupported" ? e.status : "failed"}`;
      cell(tr, e.target, "target");
      cell(tr, e.model, "model");
      const value = cell(tr, fmt(e.value), "num value");
      if (e.value !== null) value.dataset.value = String(e.value);
      cell(tr, e.unit, "unit");
      const interval = cell(tr, e.low === null || e.low === undefined ? "" : `${fmt(e.low)} – ${fmt(e.high)}`, "num interval");
      const known = (state.panel.view.endpoints || []).find((x) => x.target === e.target);
      const measured = e.low === null || e.low === undefined ? null : measuredCoverage(known && known.interval_coverage, state.panel.interval);
      if (measured) {
        interval.title = coverageText(measured);
        interval.dataset.coverage = String(measured.coverage);
        interval.dataset.verdict = measured.verdict;
        if (measured.verdict !== "holds") {
          const note = document.createElement("span");
          note.className = `coverage-note coverage-${measured.verdict}`;
          note.textContent = `held ${percent(measured.coverage)} in test`;
          interval.appendChild(note);
        }
      }
      const similar = typeof e.similarity === "number" ? ` (${e.similarity.toFixed(2)})` : "";
      cell(tr, e.in_domain === null || e.in_domain === undefined ? "" : `${yesNo(e.in_domain)}${similar}`, "domain");
      const pct = cell(tr, e.percentile === null || e.percentile === undefined ? "" : e.percentile.toFixed(1), "num percentile");
      if (e.percentile !== null && e.percentile !== undefined) pct.dataset.percentile = String(e.percentile);
      cell(tr, e.status === "ok" ? "ok" : `${e.status}${e.error ? `: ${e.error}` : ""}`, "status");
      tbody.appendChild(tr);
    }
    $("panel-radar").replaceChildren(radar(r.endpoints));
    showPhyschem(r.physchem);
  }

  const SVG = "http://www.w3.org/2000/svg";

  function svg(name, attrs, text) {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // the radar plot: one axis per endpoint, radius = its percentile among approved drugs
  // (0 at the centre, 100 at the rim); an endpoint without one is labelled n/a, no point
  function radar(endpoints) {
    // room for the labels: up to ~26 characters beside the plot, a line above and below
    const R = 140;
    const width = 2 * (R + 180);
    const height = 2 * (R + 36);
    const cx = width / 2;
    const c = height / 2;
    const n = endpoints.length;
    const plot = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", class: "radar" });
    plot.dataset.axes = String(n);
    plot.appendChild(svg("title", {}, `Percentile among approved drugs of each of ${n} endpoints`));
    const angle = (i) => -Math.PI / 2 + (2 * Math.PI * i) / Math.max(n, 1);
    const at = (i, r) => [cx + r * Math.cos(angle(i)), c + r * Math.sin(angle(i))];
    const points = (list) => list.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
    for (const p of [25, 50, 75, 100]) {
      const r = (R * p) / 100;
      const ring = n >= 3
        ? svg("polygon", { points: points(endpoints.map((_, i) => at(i, r))), class: "radar-ring" })
        : svg("circle", { cx, cy: c, r, class: "radar-ring" });
      plot.appendChild(ring);
      plot.appendChild(svg("text", { x: cx + 4, y: c - r + 11, class: "radar-scale" }, String(p)));
    }
    const shape = [];
    endpoints.forEach((e, i) => {
      const [x, y] = at(i, R);
      const axis = svg("line", { x1: cx, y1: c, x2: x.toFixed(1), y2: y.toFixed(1), class: "radar-axis" });
      axis.dataset.target = e.target;
      plot.appendChild(axis);
      const has = typeof e.percentile === "number";
      const [lx, ly] = at(i, R + 16);
      const cos = Math.cos(angle(i));
      const anchor = cos > 0.3 ? "start" : cos < -0.3 ? "end" : "middle";
      const text = svg("text", { x: lx.toFixed(1), y: (ly + 4).toFixed(1), "text-anchor": anchor, class: "radar-label" },
        has ? e.target : `${e.target} (n/a)`);
      text.dataset.target = e.target;
      plot.appendChild(text);
      if (has) shape.push([i, at(i, (R * Math.max(0, Math.min(100, e.percentile))) / 100), e]);
    });
    if (shape.length >= 2) {
      plot.appendChild(svg("polygon", { points: points(shape.map(([, xy]) => xy)), class: "radar-area" }));
    }
    for (const [, [x, y], e] of shape) {
      const dot = svg("circle", { cx: x.toFixed(1), cy: y.toFixed(1), r: 4, class: "radar-point" });
      dot.dataset.target = e.target;
      dot.dataset.percentile = String(e.percentile);
      dot.appendChild(svg("title", {}, `${e.target}: percentile ${e.percentile.toFixed(1)} among approved drugs`));
      plot.appendChild(dot);
    }
    return plot;
  }

  function showPhyschem(physchem) {
    const block = $("panel-physchem");
    block.hidden = !physchem;
    if (!physchem) return;
    const units = (state.panel && state.panel.units) || {};
    const tbody = $("panel-properties").querySelector("tbody");
    tbody.replaceChildren();
    for (const [name, value] of Object.entries(physchem.properties)) {
      const tr = document.createElement("tr");
      tr.dataset.property = name;
      cell(tr, name.replace(/_/g, " "), "property");
      cell(tr, value === null ? "" : Number.isInteger(value) ? String(value) : fmt(value), "num");
      cell(tr, units[name] || "", "unit");
      tbody.appendChild(tr);
    }
    const rules = $("panel-rules");
    rules.replaceChildren();
    for (const [name, value] of Object.entries(physchem.rules)) {
      const li = document.createElement("li");
      li.dataset.rule = name;
      li.textContent = `${name.replace(/_/g, " ")}: ${typeof value === "boolean" ? yesNo(value) : value === null ? "" : value}`;
      rules.appendChild(li);
    }
    const alerts = $("panel-alerts");
    alerts.replaceChildren();
    for (const [name, found] of Object.entries(physchem.alerts)) {
      const li = document.createElement("li");
      li.dataset.alerts = name;
      li.textContent = `${name.toUpperCase()}: ${found.length ? found.join(", ") : "none"}`;
      alerts.appendChild(li);
    }
  }

  // the panel's table as `molprop predict --model <panel>` writes it: id, smiles, the row's
  // status, every endpoint's eight columns, then the physchem block (config.physchemColumns)
  // (and each endpoint's own status and error where the panel's models screen differently)
  function panelCsv(panel) {
    const targets = panel.endpoints.map((e) => e.target);
    const own = !!panel.view.endpointStatus;
    const suffixes = own ? [...ENDPOINT_SUFFIXES, "_status", "_error"] : ENDPOINT_SUFFIXES;
    const head = ["id", "smiles", "standardized_smiles", "status", "error",
      ...targets.flatMap((t) => [t, ...suffixes.map((s) => t + s)]), ...config.physchemColumns];
    const truth = (v) => (v === null || v === undefined ? "" : v ? "True" : "False");
    const lines = [head.map(csvField).join(",")];
    for (const r of [...panel.rows].sort((a, b) => a.index - b.index)) {
      const cells = [r.id, r.smiles, r.standardized_smiles, r.status, r.error];
      for (const e of r.endpoints) {
        cells.push(e.value, e.unit, e.std, e.low, e.high, e.percentile, truth(e.in_domain), e.similarity);
        if (own) cells.push(e.status, e.error);
      }
      const p = r.physchem;
      for (const column of config.physchemColumns) {
        if (!p) cells.push(null);
        else if (column === "described_smiles") cells.push(p.described_smiles);
        else if (column in p.properties) cells.push(p.properties[column]);
        else if (column in p.rules) cells.push(typeof p.rules[column] === "boolean" ? truth(p.rules[column]) : p.rules[column]);
        else if (column === "n_alerts") cells.push(Object.values(p.alerts).reduce((n, a) => n + a.length, 0));
        else if (column.endsWith("_alerts")) cells.push((p.alerts[column.slice(0, -7)] || []).join("; "));
        else cells.push(null);
      }
      lines.push(cells.map(csvField).join(","));
    }
    return lines.join("\n") + "\n";
  }

  // ------------------------------------------------------------------ events

  async function onSubmit(event) {
    event.preventDefault();
    const button = $("predict");
    button.disabled = true;
    form.setAttribute("aria-busy", "true");
    message("Working…", "");
    try {
      const panel = selectedPanel();
      const model = selectedModel();
      const input = await readInput();
      if (panel) {
        await runPanel(input, panel);
        return;
      }
      const small = input.smiles.length <= config.jobRows;
      if (!(small && (await predictSmall(input, model)))) await submitJob(input, model);
    } catch (err) {
      message(err instanceof Error ? err.message : String(err), "error");
    } finally {
      button.disabled = false;
      form.removeAttribute("aria-busy");
    }
  }

  async function download() {
    const model = state.model;
    let text;
    if (state.remote) {
      const response = await fetch(`/v1/jobs/${encodeURIComponent(state.remote.id)}/results`, { headers: headers() });
      if (!response.ok) {
        message(await errorText(response), "error");
        return;
      }
      text = await response.text();
    } else text = state.csv !== null ? state.csv : resultsCsv(state.rows, model.target);
    saveCsv(text, state.job ? `molprop_${model.name}_job_${state.job}.csv` : `molprop_${model.name}.csv`);
  }

  function saveCsv(text, name) {
    const blob = new Blob([text], { type: "text/csv" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = name;
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
  $("panel-download").addEventListener("click", () => {
    if (state.panel) saveCsv(panelCsv(state.panel), `molprop_${state.panel.view.name}_panel.csv`);
  });
  const panelBody = $("panel-table").querySelector("tbody");
  const panelRowOf = (event) => {
    const tr = event.target.closest("tr[data-index]");
    return tr && state.panel ? state.panel.rows.find((r) => String(r.index) === tr.dataset.index) : null;
  };
  panelBody.addEventListener("click", (event) => {
    const r = panelRowOf(event);
    if (r) showProfile(r);
  });
  panelBody.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const r = panelRowOf(event);
    if (!r) return;
    event.preventDefault();
    showProfile(r);
  });
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
  const tbody = $("results-table").querySelector("tbody");
  tbody.addEventListener("click", (event) => {
    const r = rowOf(event);
    if (r) explainRow(r);
  });
  tbody.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" && event.key !== " ") return;
    const r = rowOf(event);
    if (!r) return;
    event.preventDefault();
    explainRow(r);
  });
  $("page-prev").addEventListener("click", () => turnPage(-1));
  $("page-next").addEventListener("click", () => turnPage(1));
  $("api-key-field").hidden = !config.needsKey;
  showCard();
  document.body.dataset.ready = "true";
})();
