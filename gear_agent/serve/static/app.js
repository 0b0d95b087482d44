// GEAR's web page: Ask, Explore, Documents. Plain JavaScript, no library; every request
// goes to this server. Graphs arrive as SVG drawn (and laid out) by the server.
"use strict";

const $ = (id) => document.getElementById(id);
const el = (tag, props = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
};

// A busy server sheds a request with 503 and Retry-After: wait that long and try again.
async function fetchPolitely(path, init, tries = 5) {
  for (let i = 1; ; i++) {
    const response = await fetch(path, init);
    const wait = Number(response.headers.get("Retry-After"));
    if (response.status !== 503 || !wait || i >= tries) return response;
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const response = await fetchPolitely(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.message || `${response.status} ${response.statusText}`);
  return data;
}

// POST a JSON body; call onEvent(name, data) for each server-sent event of the reply.
async function streamEvents(path, body, onEvent) {
  const response = await fetch(path, {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  if (!response.ok) {
    const data = await response.json().catch(() => ({}));
    throw new Error(data.message || `${response.status} ${response.statusText}`);
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      const parsed = data ? JSON.parse(data) : {};
      if (name === "error") throw new Error(parsed.message);
      onEvent(name, parsed);
    }
  }
}

// ---- tabs (arrow keys move between them) ----------------------------------------------
const tabs = [...document.querySelectorAll('[role="tab"]')];
function showTab(tab) {
  for (const other of tabs) {
    const on = other === tab;
    other.setAttribute("aria-selected", String(on));
    other.tabIndex = on ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !on;
  }
  if (tab.id === "tab-documents") { loadHealth(); loadDocuments(); }
  history.replaceState(null, "", "#" + tab.getAttribute("aria-controls"));
}
tabs.forEach((tab, i) => {
  tab.addEventListener("click", () => showTab(tab));
  tab.addEventListener("keydown", (event) => {
    const step = {ArrowRight: 1, ArrowLeft: -1}[event.key];
    if (!step) return;
    const next = tabs[(i + step + tabs.length) % tabs.length];
    next.focus(); showTab(next);
  });
});

// ---- Ask --------------------------------------------------------------------------------
let thread = [];  // earlier turns: {role, content}

function textWithMarks(text, spans) {
  const box = el("p");
  let at = 0;
  for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
    if (start < at) continue;
    box.append(text.slice(at, start), el("mark", {text: text.slice(start, end)}));
    at = end;
  }
  box.append(text.slice(at));
  return box;
}

function svgBox(svg, className) {
  const box = el("div", {class: className});
  box.innerHTML = svg;  // drawn and escaped by the server
  return box;
}

// ---- citations: where a passage is ("report.pdf, p. 14"), a link to it in its document ----
// The link opens Documents filtered to the passage's source (its passages in reading order)
// with the passage marked and scrolled to.
let markPassage = null;
function inDocument(text, source, id) {
  return el("a", {class: "where", href: "#documents", title: `${source}: show this passage among its document's`,
    text, onclick: (event) => {
      event.preventDefault();
      $("list-source").value = source; markPassage = id;
      showTab($("tab-documents"));
    }});
}

function passageCard(p, runId) {
  const card = el("article", {class: "card" + (p.cited.length ? " cited" : ""), id: `${runId}-p${p.rank}`});
  const marks = p.cited.map((n) => `[${n}]`).join("");
  const score = typeof p.score === "number" ? p.score.toFixed(4) : "";
  card.append(
    el("h3", {}, `${p.rank}. ${p.title} `, marks ? el("span", {class: "cite", text: marks}) : null),
    el("div", {class: "meta", text: `score ${score} · `}, p.source ? inDocument(p.location || p.source, p.source, p.id)
      : "no source", " · ", el("span", {class: "id", text: p.id})),
    textWithMarks(p.text, p.quote_spans));
  if (p.chain.length) {
    const seeds = p.chain_kind === "seeds";
    card.append(el("div", {class: "meta chain-text", text: (seeds ? "seed triples whose PPR mass reached it: " : "the chain that reached it: ") +
      p.chain.map((t) => `(${t.join("; ")})`).join(seeds ? " · " : " → ")}));
    card.append(svgBox(p.svg, "chainbox"));
  }
  return card;
}

function showResult(result, answerBox, runId) {
  const passages = $("passages");
  passages.replaceChildren(el("h2", {text: result.answer === null && !result.citations.length && result.retriever
    ? `Ranked by ${result.retriever}` : "Passages"}));
  for (const p of result.passages) passages.append(passageCard(p, runId));
  if (!answerBox) return;
  const byId = Object.fromEntries(result.passages.map((p) => [p.id, p.rank]));
  const answer = answerBox.querySelector(".answer");
  answer.replaceChildren(result.answer ?? "(no answer)");
  for (const c of result.citations) {
    answer.append(" ", el("a", {class: "cite", href: `#${runId}-p${byId[c.passage_id]}`, text: `[${c.number}]`}));
  }
  if (result.citations.length) {
    const list = el("ol", {class: "cites"});
    for (const c of result.citations) {
      list.append(el("li", {}, c.source ? inDocument(c.location, c.source, c.passage_id) : null,
        c.source ? " — " : "", el("strong", {text: c.title}), c.quote ? ` — “${c.quote}”` : ""));
    }
    answerBox.append(list);
  }
  answerBox.append(el("div", {class: "muted", text:
    `${result.iterations} iteration(s), stopped: ${result.stop_reason} · ${result.tokens.toLocaleString()} tokens`}));
}

function showMemory(memory) {
  $("memory").replaceChildren(...(memory.length ? memory.map((t) => el("li", {text: `(${t.join("; ")})`}))
    : [el("li", {class: "muted", text: "empty"})]));
}

let runs = 0;
$("ask-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const retriever = $("retriever").value;
  const where = $("where").value.split("\n").map((s) => s.trim()).filter(Boolean);
  const runId = `run${++runs}`;
  $("thread").append(el("div", {class: "msg user", text: question}));
  const agent = retriever === "gear";
  const answerBox = agent ? el("div", {class: "msg assistant"}, el("div", {class: "answer", "aria-live": "polite"})) : null;
  if (answerBox) $("thread").append(answerBox);
  $("steps").replaceChildren(); showMemory([]); $("passages").replaceChildren();
  $("run").hidden = !agent;
  $("ask-button").disabled = true;
  let answer = "";
  try {
    await streamEvents("/ui/api/ask/stream",
      {question, thread, retriever, k: Number($("k").value) || 5, where}, (name, data) => {
        if (name === "step") {
          $("steps").append(el("li", {class: data.node, text: `${data.node} (iteration ${data.iteration}): ${data.text}`}));
          if (data.memory) showMemory(data.memory);
        } else if (name === "token") {
          answerBox.querySelector(".answer").append(data.text);
        } else if (name === "result") {
          answer = data.answer ?? "";
          showResult(data, answerBox, runId);
        }
      });
    if (agent) {  // the chat goes on; a ranking keeps its question for another try
      thread.push({role: "user", content: question}, {role: "assistant", content: answer});
      $("question").value = "";
    }
  } catch (error) {
    (answerBox || $("passages")).append(el("p", {class: "error", role: "alert", text: error.message}));
  } finally {
    $("ask-button").disabled = false;
    $("question").focus();
  }
});
$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) $("ask-form").requestSubmit();
});
$("new-chat").addEventListener("click", () => {
  thread = []; $("thread").replaceChildren(); $("passages").replaceChildren(); $("run").hidden = true;
  $("question").focus();
});

// ---- Explore ------------------------------------------------------------------------------
function activate(container, handler) {  // click or Enter/Space on data-entity / data-passage nodes
  const go = (event) => {
    const node = event.target.closest("[data-entity],[data-passage]");
    if (!node || !container.contains(node)) return;
    if (event.type === "keydown" && event.key !== "Enter" && event.key !== " ") return;
    event.preventDefault();
    handler(node.dataset.entity, node.dataset.passage);
  };
  container.addEventListener("click", go);
  container.addEventListener("keydown", go);
}

function tripleRow(row, withPassage) {
  const [s, p, o] = row.triple;
  const tr = el("tr", {},
    el("td", {}, el("button", {class: "secondary", "data-entity": s, text: s})),
    el("td", {text: p}),
    el("td", {}, el("button", {class: "secondary", "data-entity": o, text: o})));
  if (withPassage) tr.append(el("td", {}, el("button", {"data-passage": row.passage_id, text: row.passage_title || row.passage_id})));
  return tr;
}

async function openEntity(name) {
  const view = $("entity-view");
  view.replaceChildren(el("p", {class: "muted", text: `loading ${name}…`}));
  try {
    const data = await api(`/ui/api/entity?name=${encodeURIComponent(name)}&hops=${$("hops").value}`);
    const table = el("table", {}, el("thead", {}, el("tr", {},
      el("th", {text: "subject"}), el("th", {text: "predicate"}), el("th", {text: "object"}), el("th", {text: "passage"}))));
    const body = el("tbody");
    data.triples.forEach((row) => body.append(tripleRow(row, true)));
    table.append(body);
    view.replaceChildren(el("h2", {text: `${data.entity}: ${data.triples.length} triple(s)` +
      (data.more ? ` (${data.more} more not drawn)` : "")}), svgBox(data.svg, "graphbox"), el("div", {class: "scroll"}, table));
  } catch (error) {
    view.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
  }
}

async function openPassage(id) {
  const view = $("passage-view");
  try {
    const p = await api(`/ui/api/passage/${encodeURIComponent(id)}`);
    const body = el("tbody");
    p.triples.forEach((row) => body.append(tripleRow(row, false)));
    view.replaceChildren(el("article", {class: "card"},
      el("h3", {text: p.title}), el("div", {class: "meta", text: `${p.source || "no source"} · `}, el("span", {class: "id", text: p.id})),
      el("p", {text: p.text}),
      Object.keys(p.metadata).length ? el("div", {class: "meta", text: JSON.stringify(p.metadata)}) : null,
      el("h3", {text: `Its triples (${p.triples.length})`}), el("div", {class: "scroll"}, el("table", {}, body))));
    view.scrollIntoView({block: "start"});
  } catch (error) {
    view.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
  }
}

$("entity-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const list = $("entity-list");
  try {
    const data = await api(`/ui/api/entities?q=${encodeURIComponent($("entity-q").value)}`);
    list.replaceChildren(...(data.entities.length ? data.entities.map((e) => el("li", {},
      el("button", {"data-entity": e.name, text: `${e.name} (${e.triples})`}))) : [el("li", {class: "muted", text: "no entity has that in its name"})]));
    if (data.entities.length) openEntity(data.entities[0].name);
  } catch (error) {
    list.replaceChildren(el("li", {class: "error", role: "alert", text: error.message}));
  }
});
for (const box of ["entity-list", "entity-view", "passage-view"]) {
  activate($(box), (entity, passage) => entity ? openEntity(entity) : openPassage(passage));
}
activate($("passages"), (entity, passage) => {
  if (!entity) return;
  showTab($("tab-explore")); $("entity-q").value = entity; openEntity(entity);
});

// ---- Documents ------------------------------------------------------------------------------
async function loadHealth() {
  const box = $("health");
  try {
    const h = await api("/ui/api/health");
    const rows = [["passages", h.passages.toLocaleString()], ["triples", h.triples.toLocaleString()],
      ["passages not yet extracted", h.unextracted.toLocaleString()], ["embedding model", h.embedding_model]];
    if (h.size_bytes !== null) rows.push(["size on disk", `${(h.size_bytes / 1e6).toFixed(1)} MB`]);
    const table = el("table", {}, ...rows.map(([k, v]) => el("tr", {}, el("th", {text: k}), el("td", {text: v}))));
    const checks = el("table", {}, el("thead", {}, el("tr", {}, el("th", {text: "part"}), el("th", {text: "state"}), el("th", {class: "wide", text: "detail"}))),
      ...h.items.map((i) => el("tr", {}, el("td", {text: i.name}),
        el("td", {class: i.ok ? "ok" : "bad", text: i.ok ? "ok" : (i.derived ? "rebuildable" : "DAMAGED")}),
        el("td", {class: "wide", text: i.detail}))));
    box.replaceChildren(table, el("p", {class: h.ok === false ? "error" : "muted",
      text: h.ok === null ? "gear check: not available for this backend" : (h.ok ? "gear check: ok" : "gear check: damaged")}), el("div", {class: "scroll"}, checks));
  } catch (error) {
    box.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
  }
}

let readOnly = false;
async function loadDocuments(offset = 0) {
  const box = $("doc-list");
  const source = $("list-source").value.trim();
  try {
    const marked = markPassage; markPassage = null;
    const query = new URLSearchParams({offset: String(offset)});
    if (source) query.set("source", source);
    let data = await api(`/ui/api/documents?${query}`);
    // a cited passage past this page of the listing: page on to the one holding it
    while (marked && !data.passages.some((p) => p.id === marked) && data.offset + data.passages.length < data.total) {
      query.set("offset", String(data.offset + data.passages.length));
      data = await api(`/ui/api/documents?${query}`);
    }
    const body = el("tbody", {}, ...data.passages.map((p) => el("tr", p.id === marked ? {class: "marked", id: "marked-passage"} : {},
      el("td", {}, el("strong", {text: p.title}), el("br"), el("span", {class: "id", text: p.id})),
      el("td", {text: p.source}),
      el("td", {class: "wide", text: Object.keys(p.metadata).length ? JSON.stringify(p.metadata) : ""}),
      el("td", {class: "wide", text: p.text}),
      el("td", {}, readOnly ? null : el("button", {class: "secondary", "aria-label": `Delete ${p.title}`, text: "Delete…",
        onclick: () => { $("delete-ids").value = p.id; $("delete-source").value = ""; reviewDeletion(); }})))));
    const shown = data.passages.length, end = data.offset + shown;
    const pages = el("span", {class: "row"},
      data.offset > 0 ? el("button", {type: "button", class: "secondary", text: "Previous",
        onclick: () => loadDocuments(Math.max(0, data.offset - data.limit))}) : null,
      end < data.total ? el("button", {type: "button", class: "secondary", text: "Next",
        onclick: () => loadDocuments(end)}) : null);
    box.replaceChildren(el("p", {class: "muted", text: `${data.total.toLocaleString()} passage(s)` +
      (data.total > shown ? `, ${(data.offset + 1).toLocaleString()}–${end.toLocaleString()} shown` : "")}, pages),
      el("table", {}, el("thead", {}, el("tr", {}, el("th", {text: "title / id"}), el("th", {text: "source"}),
        el("th", {class: "wide", text: "metadata"}), el("th", {class: "wide", text: "text"}), el("th", {text: ""}))), body));
    if (marked && $("marked-passage")) $("marked-passage").scrollIntoView({block: "center"});
  } catch (error) {
    box.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
  }
}
$("list-refresh").addEventListener("click", () => loadDocuments(0));

$("add-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const status = $("add-status"), bar = $("add-progress"), file = $("file").files[0];
  const body = {extract: $("doc-extract").checked};
  const source = $("doc-source").value.trim();
  if (source) body.source = source;
  if (file && /\.(pdf|docx)$/i.test(file.name)) {  // binary documents travel as base64
    const bytes = new Uint8Array(await file.arrayBuffer());
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    body.name = file.name; body.text = btoa(binary); body.encoding = "base64";
  } else if (file) { body.name = file.name; body.text = await file.text(); }
  else { body.title = $("doc-title").value.trim(); body.text = $("doc-text").value; body.name = body.title || "pasted"; }
  $("add-button").disabled = true; bar.hidden = false; bar.value = 0; status.className = "";
  status.textContent = "reading…";
  try {
    await streamEvents("/ui/api/documents/stream", body, (name, data) => {
      if (name === "progress") {
        bar.max = Math.max(data.total, 1); bar.value = data.done;
        status.textContent = `${data.stage}: ${data.done} of ${data.total}`;
      } else if (name === "done") {
        status.textContent = `added ${data.passages_added} passage(s) (${data.passages_existing} already stored)` +
          (data.passages_replaced || data.passages_removed
            ? `, replacing ${data.passages_replaced} and removing ${data.passages_removed} of the old version` : "") +
          (data.triples_added ? `, ${data.triples_added} triple(s)` : "") +
          (data.warnings.length ? ` — ${data.warnings.join("; ")}` : "");
      }
    });
    $("add-form").reset();
    loadHealth(); loadDocuments();
  } catch (error) {
    status.className = "error"; status.textContent = error.message;
  } finally {
    $("add-button").disabled = false; bar.hidden = true;
  }
});

function deletion() {
  return {ids: $("delete-ids").value.split(/\s+/).filter(Boolean), source: $("delete-source").value.trim() || null};
}

async function reviewDeletion() {
  const box = $("delete-preview"), request = deletion();
  try {
    const preview = await api("/ui/api/documents/preview-delete", request);
    const triples = preview.passages.reduce((n, p) => n + p.triples, 0);
    const panel = el("div", {class: "box"},
      el("p", {}, el("strong", {text: preview.passages.length
        ? `These ${preview.passages.length} passage(s) and their ${triples} triple(s) will be deleted:`
        : "Nothing matches: no passage would be deleted."})),
      el("ul", {}, ...preview.passages.map((p) => el("li", {}, `${p.title} `, el("span", {class: "id", text: p.id}),
        ` · ${p.source || "no source"} · ${p.triples} triple(s)`))));
    if (preview.unknown_ids.length) panel.append(el("p", {class: "error", text: `Unknown ids: ${preview.unknown_ids.join(", ")}`}));
    const cancel = el("button", {type: "button", class: "secondary", text: "Cancel", onclick: () => box.replaceChildren()});
    const row = el("div", {class: "row"});
    if (preview.passages.length) {
      row.append(el("button", {type: "button", class: "danger", id: "confirm-delete",
        text: `Delete ${preview.passages.length} passage(s)`, onclick: async () => {
          try {
            const done = await api("/ui/api/documents/delete", request);
            box.replaceChildren(el("p", {role: "status", text: `deleted ${done.deleted.length} passage(s); ` +
              `${done.passages.toLocaleString()} passages and ${done.triples.toLocaleString()} triples remain`}));
            $("delete-form").reset(); loadHealth(); loadDocuments();
          } catch (error) {
            box.append(el("p", {class: "error", role: "alert", text: error.message}));
          }
        }}));
    }
    row.append(cancel);
    panel.append(row);
    box.replaceChildren(panel);
    (panel.querySelector("#confirm-delete") || cancel).focus();
  } catch (error) {
    box.replaceChildren(el("p", {class: "error", role: "alert", text: error.message}));
  }
}
$("delete-form").addEventListener("submit", (event) => { event.preventDefault(); reviewDeletion(); });

// ---- start ------------------------------------------------------------------------------------
(async () => {
  try {
    const config = await api("/ui/api/config");
    $("retriever").replaceChildren(...config.retrievers.map((name) =>
      el("option", {value: name, text: name === "gear" ? "gear (the agent: answer with citations)" : name})));
    $("k").value = config.default_k;
    $("question").maxLength = config.max_question_chars;
    $("model").textContent = `${config.backend} index · ${config.llm_model || "no chat model"}`;
    if (config.no_agent) $("ask").prepend(el("p", {id: "ask-note", class: "muted", role: "note", text: config.no_agent}));
    readOnly = Boolean(config.read_only);
    if (readOnly) { $("add-form").hidden = true; $("delete-form").hidden = true; }
  } catch (error) {
    $("thread").append(el("p", {class: "error", role: "alert", text: `the server did not answer: ${error.message}`}));
  }
  tabFromHash();
})();
function tabFromHash() {  // #ask, #explore, #documents open that page (links, back button)
  const tab = tabs.find((t) => "#" + t.getAttribute("aria-controls") === location.hash);
  if (tab && tab.getAttribute("aria-selected") !== "true") showTab(tab);
}
window.addEventListener("hashchange", tabFromHash);
