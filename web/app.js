/* app.js: the translation page. Plain JavaScript, no build step, no external requests:
 * it talks only to the server that served it, in LibreTranslate's API shapes
 * (GET /frontend/settings, GET /languages, POST /translate, POST /translate_file). */
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  settings: { charLimit: -1, frontendTimeout: 500, keyRequired: false, filesTranslation: true },
  names: {},          // language code -> name
  targets: {},        // source code -> [target codes]
  timer: null,        // debounce timer
  seq: 0,             // newest request number: older answers are dropped
  detected: null,     // language detected for "auto"
};

function setStatus(text, isError) {
  const s = $("status");
  s.textContent = text || "";
  s.className = isError ? "error" : "";
}

function apiKey() {
  return $("api-key").value.trim();
}

async function getJSON(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

async function errorText(r) {
  try {
    const j = await r.json();
    if (j && j.error) return j.error;
  } catch (e) { /* not JSON */ }
  return "HTTP " + r.status;
}

function option(code) {
  const o = document.createElement("option");
  o.value = code;
  o.textContent = state.names[code] || code;
  return o;
}

/* Targets offered for the chosen source (all targets for "auto"). */
function fillTargets() {
  const src = $("source-lang").value;
  const sel = $("target-lang");
  const keep = sel.value;
  let codes = src === "auto" ? [...new Set(Object.values(state.targets).flat())] : (state.targets[src] || []);
  codes = codes.filter((c) => c !== src);
  sel.replaceChildren(...codes.map(option));
  if (codes.includes(keep)) sel.value = keep;
}

function updateCounter() {
  const n = [...$("source-text").value].length; // characters, not UTF-16 units
  const lim = state.settings.charLimit;
  const c = $("char-count");
  c.textContent = lim > 0 ? n + " / " + lim : String(n);
  c.className = lim > 0 && n > lim ? "over" : "";
  return lim <= 0 || n <= lim;
}

function showTranslation(text, alternatives) {
  $("translation").textContent = text;
  $("copy").disabled = !text;
  const list = $("alternatives");
  list.replaceChildren(...(alternatives || []).map((a) => {
    const li = document.createElement("li");
    li.textContent = a;
    li.title = "Use this alternative";
    li.addEventListener("click", () => showTranslation(a, alternatives.filter((x) => x !== a).concat([$("translation").textContent])));
    return li;
  }));
}

async function translate() {
  const q = $("source-text").value;
  const seq = ++state.seq;
  if (!q.trim()) {
    showTranslation("", []);
    $("detected").textContent = "";
    return;
  }
  if (!updateCounter()) {
    setStatus("Text is longer than the limit of " + state.settings.charLimit + " characters", true);
    return;
  }
  const body = { q, source: $("source-lang").value, target: $("target-lang").value, format: "text", alternatives: 3 };
  if (apiKey()) body.api_key = apiKey();
  setStatus("Translating…");
  try {
    const r = await fetch("translate", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (seq !== state.seq) return; // a newer request is on its way
    if (!r.ok) {
      setStatus(await errorText(r), true);
      return;
    }
    const j = await r.json();
    if (seq !== state.seq) return;
    showTranslation(j.translatedText || "", j.alternatives || []);
    const d = j.detectedLanguage;
    state.detected = d && d.language ? d.language : null;
    $("detected").textContent = body.source === "auto" && d
      ? "Detected: " + (state.names[d.language] || d.language) + " (" + Math.round(d.confidence) + "%)" : "";
    setStatus("");
  } catch (e) {
    if (seq === state.seq) setStatus("Cannot reach the server: " + e.message, true);
  }
}

function scheduleTranslate() {
  updateCounter();
  clearTimeout(state.timer);
  state.timer = setTimeout(translate, state.settings.frontendTimeout || 500);
}

function swap() {
  const src = $("source-lang");
  const tgt = $("target-lang");
  const from = src.value === "auto" ? state.detected : src.value;
  const to = tgt.value;
  if (!from || !to) return;
  src.value = to;
  fillTargets();
  if ([...tgt.options].some((o) => o.value === from)) tgt.value = from;
  const out = $("translation").textContent;
  if (out) $("source-text").value = out;
  scheduleTranslate();
}

async function copyTranslation() {
  const text = $("translation").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch (e) {
    // Without the clipboard API (plain http), select the text for Ctrl+C instead.
    const range = document.createRange();
    range.selectNodeContents($("translation"));
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    document.execCommand("copy");
  }
  $("copy").textContent = "Copied";
  setTimeout(() => { $("copy").textContent = "Copy"; }, 1200);
}

/* fetch() gives header bytes one per character (Latin-1): a name the server wrote in
 * UTF-8 is decoded again, and kept as it is when it is not valid UTF-8. */
function fromHeaderBytes(raw) {
  if (/[^\x00-\xff]/.test(raw)) return raw;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(raw, (c) => c.charCodeAt(0)));
  } catch (e) {
    return raw;
  }
}

/* The download's name from Content-Disposition: filename* (RFC 6266, percent-encoded
 * UTF-8) first, then filename= taken literally ("50% off.de.txt" is a name, not an
 * encoding), else the fallback. */
function fileNameFrom(r, fallback) {
  const cd = r.headers.get("Content-Disposition") || "";
  let name = null;
  const star = /filename\*\s*=\s*UTF-8'[^']*'([^;\s]+)/i.exec(cd);
  if (star) {
    try { name = decodeURIComponent(star[1]); } catch (e) { name = null; }
  }
  if (!name) {
    const m = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(cd) || /filename\s*=\s*([^;]+)/i.exec(cd);
    if (m) name = fromHeaderBytes(m[1].replace(/\\(.)/g, "$1").trim());
  }
  name = (name || "").replace(/[/\\]/g, "_");
  return name || fallback;
}

/* name.txt -> name.de.txt: the name the server gives, for servers that give none. */
function translatedName(name, target) {
  const dot = name.lastIndexOf(".");
  return dot > 0 ? name.slice(0, dot) + "." + target + name.slice(dot) : name + "." + target;
}


async function translateFile() {
  const f = $("file").files[0];
  if (!f) return;
  const fs = $("file-status");
  const dl = $("download");
  dl.hidden = true;
  fs.className = "";
  fs.textContent = "Uploading…";
  const form = new FormData();
  form.append("file", f);
  form.append("source", $("source-lang").value);
  form.append("target", $("target-lang").value);
  if (apiKey()) form.append("api_key", apiKey());
  try {
    let r = await fetch("translate_file", { method: "POST", body: form });
    if (!r.ok) throw new Error(await errorText(r));
    const url = (await r.json()).translatedFileUrl;
    // The server answers 202 with {done, total} until the file is ready.
    for (;;) {
      r = await fetch(url);
      if (r.status !== 202) break;
      const p = await r.json().catch(() => ({}));
      fs.textContent = p.total ? "Translating… " + p.done + "/" + p.total : "Translating…";
      await new Promise((res) => setTimeout(res, 500));
    }
    if (!r.ok) throw new Error(await errorText(r));
    const blob = await r.blob();
    if (dl.href.startsWith("blob:")) URL.revokeObjectURL(dl.href);
    dl.href = URL.createObjectURL(blob);
    dl.download = fileNameFrom(r, translatedName(f.name, form.get("target")));
    dl.textContent = "Download " + dl.download;
    dl.hidden = false;
    fs.textContent = "Done.";
  } catch (e) {
    fs.className = "error";
    fs.textContent = e.message;
  }
}

async function init() {
  try {
    const s = await getJSON("frontend/settings");
    Object.assign(state.settings, s);
    state.settings.keyRequired = !!(s.keyRequired || s.keysRequired);
  } catch (e) { /* older servers: defaults */ }
  $("key-box").hidden = !state.settings.keyRequired;
  if (state.settings.filesTranslation === false) document.querySelector(".files").hidden = true;
  if (state.settings.supportedFilesFormat) $("file").accept = state.settings.supportedFilesFormat.join(",");
  try {
    const langs = await getJSON("languages");
    for (const l of langs) {
      state.names[l.code] = l.name;
      state.targets[l.code] = l.targets || [];
    }
    const src = $("source-lang");
    src.append(...langs.filter((l) => (l.targets || []).length).map((l) => option(l.code)));
    const def = state.settings.language || {};
    if (def.source && [...src.options].some((o) => o.value === def.source.code)) src.value = def.source.code;
    fillTargets();
    if (def.target && [...$("target-lang").options].some((o) => o.value === def.target.code)) $("target-lang").value = def.target.code;
    setStatus("");
  } catch (e) {
    setStatus("Cannot load the languages: " + e.message, true);
  }
  updateCounter();
  document.body.dataset.ready = "1"; // for tests: the page is set up
}

$("source-text").addEventListener("input", scheduleTranslate);
$("source-lang").addEventListener("change", () => { fillTargets(); scheduleTranslate(); });
$("target-lang").addEventListener("change", scheduleTranslate);
$("swap").addEventListener("click", swap);
$("copy").addEventListener("click", copyTranslation);
$("file").addEventListener("change", () => { $("translate-file").disabled = !$("file").files.length; });
$("translate-file").addEventListener("click", translateFile);
$("api-key").addEventListener("change", scheduleTranslate);
init();
