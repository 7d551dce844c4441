/* app.js: the translation page. Plain JavaScript, no build step, no external requests:
 * it talks only to the server that served it, in LibreTranslate's API shapes
 * (GET /frontend/settings, GET /languages, POST /translate, POST /translate_file,
 * POST /suggest). Errors are shown next to what caused them: the language lists, the
 * translation pane, the file box, the suggestion form. */
"use strict";

const $ = (id) => document.getElementById(id);
const LONG_TEXT = 300; // characters: above this, the alternatives start collapsed
const state = {
  settings: { charLimit: -1, frontendTimeout: 500, keyRequired: false, filesTranslation: true, suggestions: false },
  names: {},          // language code -> name
  targets: {},        // source code -> [target codes]
  timer: null,        // debounce timer
  seq: 0,             // newest request number: older answers are dropped
  detected: null,     // language detected for "auto"
  shown: null,        // {q, source, target, text, alternatives} on screen
};

function setStatus(text) {
  $("status").textContent = text || "";
}

/* Shows (or, with no text, hides) an error box. */
function showError(id, text) {
  const e = $(id);
  e.textContent = text || "";
  e.hidden = !text;
}

function apiKey() {
  return $("api-key").value.trim();
}

async function getJSON(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(await errorText(r, path));
  return r.json();
}

async function errorText(r, what) {
  try {
    const j = await r.json();
    if (j && j.error) return j.error;
  } catch (e) { /* not JSON */ }
  return (what ? what + ": " : "") + "HTTP " + r.status + (r.statusText ? " " + r.statusText : "");
}

function langName(code) {
  return state.names[code] || code;
}

function option(code) {
  const o = document.createElement("option");
  o.value = code;
  o.textContent = langName(code);
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

function charCount(s) {
  return [...s].length; // characters, not UTF-16 units
}

function updateCounter() {
  const n = charCount($("source-text").value);
  const lim = state.settings.charLimit;
  const c = $("char-count");
  c.textContent = lim > 0 ? n + " / " + lim : String(n);
  c.className = lim > 0 && n > lim ? "over" : "";
  return lim <= 0 || n <= lim;
}

/* The alternatives as buttons (reachable with Tab, picked with Enter or Space), in a
 * <details> that starts collapsed for long texts so they do not stretch the page. */
function showAlternatives(alternatives, open) {
  const box = $("alt-box");
  const alts = alternatives || [];
  box.hidden = !alts.length;
  $("alt-summary").textContent = alts.length === 1 ? "1 alternative" : alts.length + " alternatives";
  if (open !== undefined) box.open = open;
  $("alternatives").replaceChildren(...alts.map((a, i) => {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "alt";
    b.textContent = a;
    b.title = "Use this alternative";
    b.addEventListener("click", () => pickAlternative(i));
    li.append(b);
    return li;
  }));
}

/* The picked alternative becomes the translation; the translation takes its place. */
function pickAlternative(i) {
  const cur = state.shown;
  if (!cur || i >= cur.alternatives.length) return;
  const alts = cur.alternatives.slice();
  [cur.text, alts[i]] = [alts[i], cur.text];
  cur.alternatives = alts;
  $("translation").textContent = cur.text;
  showAlternatives(alts);
  $("alternatives").querySelectorAll("button")[i].focus();
}

function showTranslation(text, alternatives, q) {
  $("translation").textContent = text;
  $("copy").disabled = !text;
  state.shown = text ? { q, source: null, target: null, text, alternatives: (alternatives || []).slice() } : null;
  showAlternatives(alternatives, charCount(q || "") <= LONG_TEXT);
  closeSuggest();
  $("suggest").hidden = !(state.settings.suggestions && text);
}

function showDetected(source, target, d) {
  const line = $("detected");
  const warn = $("detected-warning");
  if (source !== "auto" || !d || !d.language) {
    line.textContent = "";
    warn.hidden = true;
    return;
  }
  const conf = typeof d.confidence === "number" ? " (" + Math.round(d.confidence) + "%)" : "";
  line.textContent = "Detected: " + langName(d.language) + conf;
  warn.hidden = d.language !== target;
  warn.textContent = d.language === target
    ? "The text is already in " + langName(target) + ", the language you translate into: pick another target language."
    : "";
}

async function translate() {
  const q = $("source-text").value;
  const seq = ++state.seq;
  showError("text-error", "");
  if (!q.trim()) {
    showTranslation("", [], "");
    showDetected("auto", null, null);
    setStatus("");
    return;
  }
  if (!updateCounter()) {
    showError("text-error", "The text has " + charCount(q) + " characters; this server translates at most " +
      state.settings.charLimit + " at once. Shorten it, or translate it as a file below.");
    setStatus("");
    return;
  }
  const body = { q, source: $("source-lang").value, target: $("target-lang").value, format: "text", alternatives: 3 };
  if (!body.target) return; // no languages loaded: the language error says why
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
      const msg = await errorText(r);
      if (seq !== state.seq) return;
      showError("text-error", msg);
      setStatus("");
      return;
    }
    const j = await r.json();
    if (seq !== state.seq) return;
    showTranslation(j.translatedText || "", j.alternatives || [], q);
    const d = j.detectedLanguage;
    state.detected = d && d.language ? d.language : null;
    if (state.shown) {
      state.shown.source = body.source === "auto" ? state.detected : body.source;
      state.shown.target = body.target;
    }
    showDetected(body.source, body.target, d);
    setStatus("");
  } catch (e) {
    if (seq !== state.seq) return;
    showError("text-error", "Cannot reach the server: " + e.message);
    setStatus("");
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

/* ---- suggestions (POST /suggest, offered when /frontend/settings says suggestions) ---- */

function openSuggest() {
  if (!state.shown) return;
  $("suggest-text").value = state.shown.text;
  $("suggest-box").hidden = false;
  $("suggest-status").hidden = true;
  $("suggest").hidden = true;
  $("suggest-text").focus();
}

function closeSuggest() {
  $("suggest-box").hidden = true;
  $("suggest").hidden = !(state.settings.suggestions && state.shown);
}

function suggestStatus(text, isError) {
  const e = $("suggest-status");
  e.textContent = text;
  e.className = isError ? "error" : "";
  e.hidden = !text;
}

async function sendSuggest(ev) {
  ev.preventDefault();
  const cur = state.shown;
  const s = $("suggest-text").value.trim();
  if (!cur || !s) return;
  const body = { q: cur.q, s, source: cur.source || $("source-lang").value, target: cur.target || $("target-lang").value };
  if (apiKey()) body.api_key = apiKey();
  $("suggest-send").disabled = true;
  try {
    const r = await fetch("suggest", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
    if (!r.ok) throw new Error(await errorText(r));
    closeSuggest();
    suggestStatus("Thank you: your suggestion was sent.", false);
  } catch (e) {
    suggestStatus("The suggestion was not sent: " + e.message, true);
  } finally {
    $("suggest-send").disabled = false;
  }
}

/* ---- files ---- */

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

function fileStatus(text, isError) {
  const fs = $("file-status");
  fs.className = isError ? "error" : "";
  fs.textContent = text;
}

function fileChosen() {
  const f = $("file").files[0];
  $("translate-file").disabled = !f;
  $("download").hidden = true;
  fileStatus("", false);
  const max = state.settings.maxFileBytes;
  if (f && max > 0 && f.size > max) {
    fileStatus(f.name + " is " + f.size + " bytes; this server takes files of at most " + max + " bytes.", true);
    $("translate-file").disabled = true;
    return false;
  }
  return !!f;
}

async function translateFile() {
  const f = $("file").files[0];
  if (!f) return;
  const dl = $("download");
  const target = $("target-lang").value;
  dl.hidden = true;
  fileStatus("Uploading…", false);
  const form = new FormData();
  form.append("file", f);
  form.append("source", $("source-lang").value);
  form.append("target", target);
  if (apiKey()) form.append("api_key", apiKey());
  try {
    let r;
    try {
      r = await fetch("translate_file", { method: "POST", body: form });
    } catch (e) {
      throw new Error("Cannot reach the server: " + e.message);
    }
    if (!r.ok) throw new Error(await errorText(r));
    const url = (await r.json()).translatedFileUrl;
    // The server answers 202 with {done, total} until the file is ready.
    for (;;) {
      r = await fetch(url);
      if (r.status !== 202) break;
      const p = await r.json().catch(() => ({}));
      fileStatus(p.total ? "Translating… " + p.done + "/" + p.total : "Translating…", false);
      await new Promise((res) => setTimeout(res, 500));
    }
    if (!r.ok) throw new Error(await errorText(r));
    const blob = await r.blob();
    if (dl.href.startsWith("blob:")) URL.revokeObjectURL(dl.href);
    dl.href = URL.createObjectURL(blob);
    dl.download = fileNameFrom(r, translatedName(f.name, target));
    dl.textContent = "Download " + dl.download;
    dl.hidden = false;
    fileStatus("Done.", false);
  } catch (e) {
    fileStatus(f.name + ": " + e.message, true);
  }
}

/* Files dropped anywhere on the page go to the file box and are translated at once;
 * text dragged into the text box is left to the browser. */
function hasFiles(e) {
  return !!e.dataTransfer && [...e.dataTransfer.types].includes("Files");
}

function setupDrop() {
  const zone = $("files");
  let depth = 0;
  document.addEventListener("dragenter", (e) => {
    if (!hasFiles(e)) return;
    depth++;
    zone.classList.add("dragging");
  });
  document.addEventListener("dragleave", (e) => {
    if (!hasFiles(e)) return;
    if (--depth <= 0) { depth = 0; zone.classList.remove("dragging"); }
  });
  document.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = zone.hidden ? "none" : "copy";
  });
  document.addEventListener("drop", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault(); // else the browser leaves the page to show the file
    depth = 0;
    zone.classList.remove("dragging");
    const f = e.dataTransfer.files[0];
    if (!f || zone.hidden) return;
    const dt = new DataTransfer();
    dt.items.add(f);
    $("file").files = dt.files;
    if (fileChosen()) translateFile();
  });
}

async function init() {
  try {
    const s = await getJSON("frontend/settings");
    Object.assign(state.settings, s);
    state.settings.keyRequired = !!(s.keyRequired || s.keysRequired);
  } catch (e) { /* older servers: defaults */ }
  $("key-box").hidden = !state.settings.keyRequired;
  if (state.settings.filesTranslation === false) $("files").hidden = true;
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
    showError("lang-error", "");
  } catch (e) {
    showError("lang-error", "Cannot load the languages: " + e.message);
  }
  updateCounter();
  document.body.dataset.ready = "1"; // for tests: the page is set up
}

$("source-text").addEventListener("input", scheduleTranslate);
$("source-lang").addEventListener("change", () => { fillTargets(); scheduleTranslate(); });
$("target-lang").addEventListener("change", scheduleTranslate);
$("swap").addEventListener("click", swap);
$("copy").addEventListener("click", copyTranslation);
$("suggest").addEventListener("click", openSuggest);
$("suggest-cancel").addEventListener("click", () => { closeSuggest(); $("suggest").focus(); });
$("suggest-box").addEventListener("submit", sendSuggest);
$("file").addEventListener("change", fileChosen);
$("translate-file").addEventListener("click", translateFile);
$("api-key").addEventListener("change", scheduleTranslate);
setupDrop();
init();
