"""The pages' skeleton, style sheet and script, inlined into every page (groundkit/reports/html.py, the report;
groundkit/reports/sweep_page.py, the sweep view).

Kept as Python strings so the report stage's code dependencies (its import closure) include them.
"""

from groundkit._version import __version__
from groundkit.reports.charts import escape_html

# The page may run its own inline script and style and load nothing at all, so a browser refuses any
# request even if a document's text were to smuggle markup past the escaping.
POLICY = """<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">"""

STYLE = """
:root{--run:#1f6feb;--base:#9a6700;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--mark:#fff3a3;--bg:#fff}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg);margin:0 auto;max-width:1280px;padding:16px 24px}
h1{font-size:22px;margin:8px 0}h2{font-size:17px;margin:24px 0 8px;border-bottom:1px solid var(--line)}
.facts,.method,figcaption,footer{color:var(--muted)}.note{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{border:1px solid var(--line);border-radius:6px;padding:10px 14px;
min-width:190px}.card .name{color:var(--muted)}.card .value{font-size:26px;font-weight:600}.card .delta{font-size:12px}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f6f8fa}table.metrics{width:auto}tr.headline td{font-weight:600}
.better{color:#1a7f37;font-weight:600}.worse{color:#cf222e;font-weight:600}.traded{color:#0e6b73;font-weight:600}
.verdict{font-size:1.15em;padding:8px 12px;border-radius:6px;border:1px solid var(--border,#d0d7de);margin:10px 0 4px}
.verdict.better{background:#dafbe1}.verdict.worse{background:#ffebe9}.verdict.mixed{background:#fff8c5}
.verdict.traded{background:#d3f5f0;border-color:#1b7c83}
.verdict.neutral{background:#f6f8fa;font-weight:400}.mde{margin:4px 0 10px}
.charts{display:flex;flex-wrap:wrap;gap:16px}figure{margin:0}svg.chart{max-width:100%;height:auto}
svg .grid{stroke:#eaeef2}svg .axis{stroke:#59636e}svg text{font:11px system-ui,sans-serif;fill:#59636e}
svg .label{font-size:12px;fill:#1f2328}svg .legend{font-size:12px;fill:#1f2328}
.filters{display:flex;gap:16px;align-items:center;margin:8px 0;flex-wrap:wrap}
#query-table th[data-key]{cursor:pointer;user-select:none}#query-table th.sorted-asc::after{content:" ▲"}
#query-table th.sorted-desc::after{content:" ▼"}
#query-table tbody tr.q{cursor:pointer}#query-table tbody tr.q:hover{background:#f6f8fa}
tr.q.open{background:#ddf4ff}.tag{display:inline-block;border-radius:10px;padding:0 7px;font-size:12px;margin-right:4px}
.prefix{background:#eaeef2;color:#57606a;font-style:italic}.tag.up{background:#dafbe1;color:#1a7f37}.tag.down{background:#ffebe9;color:#cf222e}.tag.missed{background:#fff1e5;
color:#bc4c00}.tag.no_answer{background:#eaeef2}.detail td{background:#fbfcfd;padding:12px 16px}
.detail h4{margin:12px 0 4px}.quote,.passage{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:12.5px;
border-left:3px solid var(--line);padding:4px 8px;margin:4px 0}mark{background:var(--mark);padding:0}
mark.gold{background:#ffe270;outline:1px solid #d4a72c}span.term{font-weight:700;color:#0a3069}.tag.grade{background:#ddf4ff}.cols{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.cols.one{grid-template-columns:1fr}.meta{color:var(--muted);font-size:12px}.flag{color:#bc4c00;font-weight:600}
.hit{border-left-color:#1a7f37}.empty{color:var(--muted);font-style:italic}
"""

# Builds the query table and each query's view from the JSON above with textContent only.
SCRIPT = r"""
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const tbody = document.querySelector("#query-table tbody");
  const byId = new Map(data.queries.map((q) => [q.id, q]));
  const hasBase = data.baseline !== null;
  let sortKey = "id", sortDir = 1;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v; else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }
  const rankText = (r) => (r === null ? "none" : String(r));
  // Offsets count code points, as Python's do; a JavaScript string counts UTF-16 units, in which a character
  // above U+FFFF (an emoji) takes two. So text is cut as arrays of code points, never with String.slice.
  const points = (text) => Array.from(text);
  // The page keeps only the document text it shows, as [start, text] pieces.
  const pieces = new Map(Object.entries(data.text).map(([doc, found]) =>
    [doc, found.map(([at, text]) => [at, points(text)])]));
  function slice(doc, start, end) {
    for (const [at, chars] of pieces.get(doc) || []) {
      if (at <= start && start < at + chars.length) {
        return chars.slice(start - at, Math.min(end, at + chars.length) - at).join("");
      }
    }
    return "";
  }
  const num = (v) => (v === null ? "n/a" : v.toFixed(4));
  function statusOf(q) {
    if (q.category === "no_answer") return "no_answer";
    if (q.move) return q.move;
    return q.missed ? "missed" : "";
  }
  function tags(q) {
    const out = el("span");
    if (q.category === "no_answer") {
      out.append(el("span", {class: "tag no_answer"}, q.abstained[1] ? "abstained" : "returned passages"));
      return out;
    }
    if (q.move) out.append(el("span", {class: "tag " + q.move}, q.move === "up" ? "moved up" : "moved down"));
    if (q.missed) out.append(el("span", {class: "tag missed"}, "missed"));
    return out;
  }
  function sortValue(q, key) {
    if (key === "rank") return q.rank[1] === null ? Infinity : q.rank[1];
    if (key === "ndcg") return q.ndcg[1] === null ? -1 : q.ndcg[1];
    if (key === "status") return statusOf(q);
    return q[key];
  }

  function marked(text, offset, ranges, terms) {
    // text starts at document offset `offset`; ranges are [start, end) document offsets of gold to mark, terms
    // those of the query's words (a passage's words BM25 matched), shown bold, inside the gold mark or not.
    const frag = document.createDocumentFragment();
    const chars = points(text);
    const state = new Uint8Array(chars.length);  // 1: gold, 2: a query word
    const paint = (list, bit) => (list || []).forEach(([s, e]) => {
      for (let i = Math.max(s - offset, 0); i < Math.min(e - offset, chars.length); i++) state[i] |= bit;
    });
    paint(ranges, 1);
    paint(terms, 2);
    // One mark per stretch of gold (a query word inside it does not split it), query words as spans within.
    const runs = (from, to, bit) => {
      const out = [];
      for (let at = from; at < to;) {
        let end = at;
        while (end < to && (state[end] & bit) === (state[at] & bit)) end++;
        out.push([at, end, (state[at] & bit) !== 0]);
        at = end;
      }
      return out;
    };
    for (const [from, to, gold] of runs(0, chars.length, 1)) {
      const box = gold ? el("mark", {class: "gold"}) : frag;
      for (const [s, e, term] of runs(from, to, 2)) {
        const piece = chars.slice(s, e).join("");
        box.append(term ? el("span", {class: "term"}, piece) : document.createTextNode(piece));
      }
      if (gold) frag.append(box);
    }
    return frag;
  }

  function goldView(q) {
    const box = el("div");
    box.append(el("h4", {}, "Gold quotes"));
    if (!q.gold || q.gold.length === 0) {
      box.append(el("p", {class: "empty"}, q.category === "no_answer" ? "None: no passage answers this query." :
        "Not shown (the run's artifacts were not found)."));
      return box;
    }
    q.gold.forEach((g, n) => {
      // The qrel grade, where the judgments grade their quotes (any grade but 1 among this query's).
      const graded = q.gold.some((x) => x.grade !== 1);
      const meta = el("div", {class: "meta"}, `quote ${n + 1}: ${g.doc} [${g.start}, ${g.end})`);
      if (graded) meta.append(" ", el("span", {class: "tag grade"}, `grade ${g.grade}`));
      [[g.held[0], data.baseline], [g.held[1], data.run]].forEach(([held, name]) => {
        if (!held) return;
        const line = el("div", {class: "meta"}, `${name}: `);
        if (held.length > 1) line.append(el("span", {class: "flag"},
          `split by a chunk boundary across ${held.length} chunks`), "; ");
        line.append(held.map(([s, e, r]) => `chunk [${s}, ${e}) ${r === null ? "not retrieved" :
          "at rank " + r}`).join("; ") || "no chunk holds it");
        meta.append(line);
      });
      const lim = data.limits, cut = g.end - g.start > lim.quote;
      const before = slice(g.doc, Math.max(0, g.start - lim.context), g.start);
      const after = cut ? "" : slice(g.doc, g.end, g.end + lim.context);
      const quote = el("div", {class: "quote"});
      // An ellipsis only where the document goes on beyond the context shown.
      quote.append(g.start > lim.context ? "…" + before : before, el("mark", {class: "gold"}, slice(g.doc, g.start,
        cut ? g.start + lim.quote : g.end)), cut ? " … (cut)" : "", points(after).length === lim.context ? after + "…" : after);
      box.append(meta, quote);
    });
    return box;
  }

  // A word is a maximal run of Python's \w characters: [A-Za-z0-9_], and the characters beyond ASCII that the
  // report found in words of the text it holds (data.wordCharacters); any other character separates words.
  // Which words are the query's was decided in Python, by the run's tokenizer (stemmer included): q.words
  // holds an ASCII word lower-cased (toLowerCase does to ASCII what Python's lower does), any other as written.
  const wordCharacters = new Set(Array.from(data.wordCharacters || ""));
  const asciiWord = /^[A-Za-z0-9_]$/;
  function wordRanges(chars, offset, words) {
    // [start, end) document offsets of the words of `chars` (code points from `offset`) that `words` holds.
    const out = [];
    for (let at = 0; at < chars.length;) {
      let end = at, ascii = true;
      for (; end < chars.length; end++) {
        if (asciiWord.test(chars[end])) continue;
        if (!wordCharacters.has(chars[end])) break;
        ascii = false;
      }
      if (end === at) { at++; continue; }
      const word = chars.slice(at, end).join("");
      if (words.has(ascii ? word.toLowerCase() : word)) out.push([offset + at, offset + end]);
      at = end;
    }
    return out;
  }

  function passageList(q, rows, title, otherName, queryWords) {
    const box = el("div");
    box.append(el("h4", {}, title));
    if (!rows) {
      box.append(el("p", {class: "empty"}, "Not shown: this run's passages were not found (see the note above)."));
      return box;
    }
    if (rows.length === 0) {
      box.append(el("p", {class: "empty"}, "Nothing retrieved: the retriever abstained."));
      return box;
    }
    const gold = q.gold || [];
    const words = new Set(queryWords || []);
    rows.forEach(([id, otherRank], i) => {
      const [doc, start, end, prefix] = data.passages[id];
      const p = {doc, start, end, cut: end - start > data.limits.passage};
      p.text = slice(doc, start, p.cut ? start + data.limits.passage : end);
      const overlaps = gold.map((g, n) => [g, n]).filter(([g]) => g.doc === p.doc && g.start < p.end && p.start < g.end);
      const meta = el("div", {class: "meta"}, `#${i + 1} · ${p.doc} [${p.start}, ${p.end})`);
      if (otherName !== null) meta.append(` · ${otherName}: ${otherRank === null ? "not in its ranking" : "#" + otherRank}`);
      for (const [g, n] of overlaps) {
        if (g.start < p.start || g.end > p.end) meta.append(" ", el("span", {class: "flag"},
          `holds only part of quote ${n + 1}: a chunk boundary cuts it`));
        else meta.append(" ", el("span", {class: "tag up"}, `holds quote ${n + 1}`));
      }
      const text = el("div", {class: "passage" + (overlaps.length ? " hit" : "")});
      if (prefix) text.append(el("span", {class: "prefix", title: "context prefix (chunk.context): indexed and read, "
        + "never gold"}, prefix));
      text.append(marked(p.text, p.start, overlaps.map(([g]) => [g.start, g.end]),
        wordRanges(points(p.text), p.start, words)));
      if (p.cut) text.append(" … (cut)");
      box.append(meta, text);
    });
    return box;
  }

  function detail(q) {
    const cell = el("td", {colspan: "6"});
    const head = el("p", {}, el("strong", {}, q.id + ": "), q.query);
    const ranks = hasBase ? `first gold rank ${rankText(q.rank[0])} → ${rankText(q.rank[1])}` :
      `first gold rank ${rankText(q.rank[1])}`;
    cell.append(head, el("p", {class: "meta"}, `${q.category} · ${ranks}`), goldView(q));
    const cols = el("div", {class: hasBase ? "cols" : "cols one"});
    if (hasBase) cols.append(passageList(q, q.baseTop, `Top ${data.k}: ${data.baseline}`, data.run, q.baseWords));
    cols.append(passageList(q, q.top, `Top ${data.k}: ${data.run}`, hasBase ? data.baseline : null, q.words));
    cell.append(cols);
    return el("tr", {class: "detail", "data-for": q.id}, cell);
  }

  function toggle(row) {
    const open = row.nextElementSibling && row.nextElementSibling.classList.contains("detail");
    if (open) { row.nextElementSibling.remove(); row.classList.remove("open"); return; }
    row.after(detail(byId.get(row.dataset.id)));
    row.classList.add("open");
  }

  function render() {
    const cat = document.getElementById("f-category").value;
    const status = document.getElementById("f-status").value;
    const text = document.getElementById("f-text").value.trim().toLowerCase();
    const shown = data.queries.filter((q) => (!cat || q.category === cat) &&
      (!status || (status === "missed" ? q.missed : statusOf(q) === status)) &&
      (!text || q.id.toLowerCase().includes(text) || q.query.toLowerCase().includes(text)));
    shown.sort((a, b) => {
      const x = sortValue(a, sortKey), y = sortValue(b, sortKey);
      return (x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : 1) * sortDir;
    });
    tbody.replaceChildren(...shown.map((q) => {
      const rank = hasBase ? `${rankText(q.rank[0])} → ${rankText(q.rank[1])}` : rankText(q.rank[1]);
      const ndcg = hasBase ? `${num(q.ndcg[0])} → ${num(q.ndcg[1])}` : num(q.ndcg[1]);
      return el("tr", {class: "q", "data-id": q.id}, el("td", {}, q.id), el("td", {}, q.category),
        el("td", {}, q.query), el("td", {}, rank), el("td", {}, ndcg), el("td", {}, tags(q)));
    }));
    document.getElementById("f-count").textContent = `${shown.length} of ${data.queries.length} queries`;
  }

  const categories = [...new Set(data.queries.map((q) => q.category))].sort();
  const select = document.getElementById("f-category");
  for (const c of categories) select.append(el("option", {value: c}, c));
  if (!hasBase) for (const v of ["up", "down"]) document.querySelector(`#f-status option[value="${v}"]`).remove();
  for (const id of ["f-category", "f-status", "f-text"]) document.getElementById(id).addEventListener("input", render);
  document.querySelectorAll("#query-table th[data-key]").forEach((th) => th.addEventListener("click", () => {
    sortDir = sortKey === th.dataset.key ? -sortDir : 1;
    sortKey = th.dataset.key;
    document.querySelectorAll("#query-table th").forEach((h) => h.classList.remove("sorted-asc", "sorted-desc"));
    th.classList.add(sortDir === 1 ? "sorted-asc" : "sorted-desc");
    render();
  }));
  tbody.addEventListener("click", (event) => {
    const row = event.target.closest("tr.q");
    if (row) toggle(row);
  });
  render();
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted && byId.has(wanted)) {
    const row = tbody.querySelector(`tr.q[data-id="${CSS.escape(wanted)}"]`);
    if (row) { toggle(row); row.scrollIntoView(); }
  }
})();
"""


FOOTER = (f"<footer>groundkit {escape_html(__version__)}. Self-contained: this file loads nothing.</footer>")
"""The last line of every page's body: which groundkit wrote it, and that it fetches nothing."""


def page(*, marker: str, title: str, body: str, style: str = STYLE, scripts: str = "") -> str:
    """The skeleton of every page groundkit writes (the report and the sweep view): one self-contained HTML file
    under :data:`POLICY`, named by ``marker`` (how a later run recognises its own file), titled ``title``
    (already escaped), with ``body`` and, after it, ``scripts`` (each line ending in a newline)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
{marker}
{POLICY}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
{scripts}</body>
</html>
"""
