/* tba report: renders the embedded run data. Vanilla JS, no network. The query list is paginated and a
   query's trajectory is parsed from its own JSON block only when it is opened, so large runs open fast.
   State lives in location.hash: run, view, group, label, error, status, rank, q, open, page. */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("report-data").textContent);
  var PAGE_SIZE = 50;
  var FILTER_KEYS = ["group", "label", "error", "status", "rank", "q"];
  var STATUS_NAMES = DATA.statusNames || {};
  var LABELS = ["Solved", "Unsure", "Unsolved", "JudgeError", "none"];
  var state = {};
  var views = {};
  var detailCache = {};
  var textCache = {};
  var openRows = {};

  // ------------------------------------------------------------------ helpers
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var key in attrs) {
        var value = attrs[key];
        if (value === undefined || value === null) continue;
        if (key === "text") node.textContent = value;
        else if (key === "cls") node.className = value;
        else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
        else node.setAttribute(key, value);
      }
    }
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false || child === "") return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  function badge(text, cls) { return el("span", {cls: "badge " + (cls || ""), text: String(text)}); }
  function short(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, n) + "…" : text; }
  function fmt(x) { return x === null || x === undefined ? "–" : (typeof x === "number" && !Number.isInteger(x) ? x.toFixed(3) : String(x)); }
  function hashOf(obj) {
    var parts = [];
    Object.keys(obj).forEach(function (k) {
      if (obj[k] !== undefined && obj[k] !== null && obj[k] !== "") parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(obj[k]));
    });
    return "#" + parts.join("&");
  }
  function link(changes, text) {
    var target = {run: state.run};
    for (var k in changes) target[k] = changes[k];
    return el("a", {href: hashOf(target), text: String(text)});
  }
  function readHash() {
    var out = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
      if (!pair) return;
      var at = pair.indexOf("=");
      var key = decodeURIComponent(at < 0 ? pair : pair.slice(0, at));
      out[key] = at < 0 ? "" : decodeURIComponent(pair.slice(at + 1).replace(/\+/g, " "));
    });
    return out;
  }
  function setState(changes, keepPage) {
    for (var k in changes) state[k] = changes[k];
    if (!keepPage) state.page = 0;
    var clean = {};
    ["run", "view", "group", "label", "error", "status", "rank", "q", "open", "page"].forEach(function (k) {
      if (state[k] !== undefined && state[k] !== "" && !(k === "page" && !state.page)) clean[k] = state[k];
    });
    history.replaceState(null, "", hashOf(clean));
    render();
  }

  // ------------------------------------------------------------------ data access
  function detail(run, index) {
    var key = run + "_" + index;
    if (!detailCache[key]) {
      var block = document.getElementById("d" + key);
      detailCache[key] = block ? JSON.parse(block.textContent) : {nodes: []};
    }
    return detailCache[key];
  }
  function rawText(run, index) {
    var key = run + "_" + index;
    if (textCache[key] === undefined) {
      var block = document.getElementById("d" + key);
      textCache[key] = block ? block.textContent.toLowerCase() : "";
    }
    return textCache[key];
  }
  function needles(q) {
    var plain = q.toLowerCase();
    var escaped = JSON.stringify(plain).slice(1, -1).replace(/</g, "\\u003c");
    return escaped === plain ? [plain] : [plain, escaped];
  }
  function matches(run, index, query, f, search) {
    if (f.group && DATA.runs[run].groups[query.g] !== f.group) return false;
    if (f.label && query.label !== f.label) return false;
    if (f.error && query.err.indexOf(f.error) < 0) return false;
    if (f.status && query.st.map(String).indexOf(f.status) < 0) return false;
    if (search) {
      var head = (query.q + "\n" + query.fa + "\n" + query.id).toLowerCase();
      var text = null;
      return search.some(function (n) {
        if (head.indexOf(n) >= 0) return true;
        if (text === null) text = rawText(run, index);
        return text.indexOf(n) >= 0;
      });
    }
    return true;
  }

  // ------------------------------------------------------------------ page
  function render() {
    var tabs = document.getElementById("tabs");
    tabs.textContent = "";
    var many = DATA.runs.length > 1;
    if (DATA.compare) tabs.appendChild(el("a", {href: "#view=compare", cls: state.view === "compare" ? "active" : "", text: "Compare " + DATA.runs.length + " runs"}));
    if (many || !DATA.compare) DATA.runs.forEach(function (run, i) {
      tabs.appendChild(el("a", {href: "#run=" + i, cls: state.view !== "compare" && Number(state.run) === i ? "active" : "", text: run.name}));
    });
    var main = document.getElementById("main");
    var key = state.view === "compare" ? "compare" : "run" + state.run;
    if (!views[key]) views[key] = state.view === "compare" ? buildCompare() : buildRun(Number(state.run));
    if (main.firstChild !== views[key].root) { main.textContent = ""; main.appendChild(views[key].root); }
    views[key].update();
  }

  function section(title) { return el("h2", {text: title}); }

  function buildRun(r) {
    var run = DATA.runs[r];
    var root = el("div", {id: "run-" + r});
    root.appendChild(section("Run " + run.name));
    root.appendChild(el("p", {cls: "meta", text: run.path}));
    if (run.notes.length) root.appendChild(el("ul", {cls: "notes"}, run.notes.map(function (n) { return el("li", {text: n}); })));
    // a link that names a query (#open=...) folds the overview away so the query is in view
    var overview = el("details", {cls: "overview", open: state.open ? null : ""}, el("summary", {text: "Overview: manifest, leaderboard, error taxonomy, figures"}));
    root.appendChild(overview);
    var top = root;
    root = overview;
    root.appendChild(manifestView(run));
    root.appendChild(section("Leaderboard"));
    if (!run.boards.length) root.appendChild(el("p", {cls: "muted", id: "not-evaluated", text: "Not evaluated: no judge labels, so no pass rate. Run `tba evaluate " + run.path + "` and render again."}));
    run.boards.forEach(function (b) { root.appendChild(boardView(b)); });
    if (run.judges.length) root.appendChild(el("p", {cls: "meta", text: "Judge: " + run.judges.join("; ")}));
    root.appendChild(section("Error taxonomy"));
    root.appendChild(taxonomyView(r));
    root.appendChild(section("Figures"));
    root.appendChild(figures(run.figs));
    root = top;
    root.appendChild(section("Queries"));
    var controls = filterBar(r);
    root.appendChild(controls.root);
    var list = el("div", {id: "list"});
    root.appendChild(list);
    return {root: root, update: function () { controls.sync(); renderList(r, list); }};
  }

  function manifestView(run) {
    var box = el("details", {open: ""}, el("summary", {text: "Manifest"}));
    var m = run.manifest;
    if (!m) { box.appendChild(el("p", {cls: "muted", text: "No manifest.json in this folder."})); return box; }
    var cfg = m.config || {};
    var dialect = m.dialect && typeof m.dialect === "object" ? m.dialect.name : m.dialect;
    var rows = [["model", m.model], ["backend", m.backend], ["method", cfg.method], ["dialect", dialect],
      ["parser", m.parser], ["compat", m.compat && m.compat.mode], ["server", cfg.server], ["groups", (cfg.groups || []).join(", ")],
      ["seed", m.seed], ["code", m.code_version]];
    var totals = m.totals || {};
    Object.keys(totals).forEach(function (k) { rows.push(["totals." + k, totals[k]]); });
    var lines = [];
    for (var i = 0; i < rows.length; i += 3) {
      lines.push(el("tr", null, rows.slice(i, i + 3).map(function (row) { return [el("td", {text: row[0]}), el("td", {text: fmt(row[1])})]; })));
    }
    box.appendChild(el("table", {cls: "kv"}, lines));
    box.appendChild(el("details", null, el("summary", {text: "full manifest.json"}), el("pre", {text: JSON.stringify(m, null, 2)})));
    return box;
  }

  function boardView(board) {
    var wrap = el("div");
    wrap.appendChild(el("p", {cls: "meta", text: board.caption}));
    wrap.appendChild(el("table", {cls: "board"},
      el("tr", null, board.header.map(function (h, i) { return el("th", {cls: i ? "num" : "", text: h}); })),
      board.rows.map(function (row) { return el("tr", null, row.map(function (c, i) { return el("td", {cls: i ? "num" : "", text: c}); })); })));
    if (board.footnote) wrap.appendChild(el("p", {cls: "meta", text: board.footnote}));
    return wrap;
  }

  function taxonomyView(r) {
    var run = DATA.runs[r];
    var wrap = el("div");
    [["Parse error kinds (steps)", run.tax.errors, "error", run.tax.errorQueries],
     ["Status codes (steps)", run.tax.status, "status", run.tax.statusQueries]].forEach(function (part) {
      var kinds = Object.keys(part[1]);
      wrap.appendChild(el("h3", {text: part[0]}));
      if (!kinds.length) { wrap.appendChild(el("p", {cls: "muted", text: "none recorded"})); return; }
      var head = el("tr", null, el("th", {text: part[2] === "error" ? "error kind" : "status"}),
        run.groups.map(function (g) { return el("th", {cls: "num", text: g}); }), el("th", {cls: "num", text: "total"}), el("th", {cls: "num", text: "queries"}));
      var rows = kinds.map(function (kind) {
        var counts = part[1][kind];
        var total = 0;
        var label = part[2] === "status" ? kind + (STATUS_NAMES[kind] ? " " + STATUS_NAMES[kind] : "") : kind;
        var cells = run.groups.map(function (g) {
          var n = counts[g] || 0; total += n;
          var change = {group: g}; change[part[2]] = kind;
          return el("td", {cls: "num"}, n ? link(change, n) : "0");
        });
        var all = {}; all[part[2]] = kind;
        var filterable = part[3][kind] !== undefined;
        return el("tr", null, el("td", {text: label}), cells, el("td", {cls: "num", text: String(total)}),
          el("td", {cls: "num"}, filterable ? link(all, part[3][kind]) : "–"));
      });
      wrap.appendChild(el("table", {cls: "tax"}, head, rows));
    });
    wrap.appendChild(el("p", {cls: "meta", text: "Counts are steps; a link shows the queries with at least one such step."}));
    return wrap;
  }

  function figures(figs) {
    return el("div", {cls: "figs"}, figs.map(function (f) {
      return el("figure", null, f.png ? el("img", {src: "data:image/png;base64," + f.png, alt: f.title}) : el("div", {cls: "none", text: f.title + ": " + f.why}),
        el("figcaption", {text: f.title}));
    }));
  }

  function options(select, values, current, labels) {
    select.textContent = "";
    select.appendChild(el("option", {value: "", text: "all"}));
    values.forEach(function (v, i) { select.appendChild(el("option", {value: String(v), text: labels ? labels[i] : String(v)})); });
    select.value = current || "";
  }

  function filterBar(r, compareMode) {
    var run = DATA.runs[r] || DATA.runs[0];
    var root = el("div", {cls: "filters"});
    var controls = {};
    function add(key, label, values, labels) {
      var select = el("select", {id: "f-" + key, onchange: function () { var c = {}; c[key] = select.value; setState(c); }});
      options(select, values, state[key], labels);
      controls[key] = select;
      root.appendChild(el("label", {"for": "f-" + key, text: label}));
      root.appendChild(select);
    }
    var groups = compareMode ? DATA.compare.groups : run.groups;
    add("group", "group", groups);
    if (compareMode) {
      add("rank", "rows", [2, 1, 0], ["outcome differs", "trace differs", "same"]);
    } else {
      add("label", "label", LABELS);
      add("error", "error kind", run.errorKinds);
      add("status", "status", run.statusCodes.map(String), run.statusCodes.map(function (c) { return c + (STATUS_NAMES[c] ? " " + STATUS_NAMES[c] : ""); }));
    }
    var search = el("input", {type: "search", id: "f-q", placeholder: "search queries, raw outputs, observations"});
    var timer = null;
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { setState({q: search.value}); }, 250); });
    root.appendChild(el("label", {"for": "f-q", text: "search"}));
    root.appendChild(search);
    root.appendChild(el("a", {href: compareMode ? "#view=compare" : "#run=" + r, text: "clear"}));
    var count = el("span", {id: "count", cls: "count"});
    root.appendChild(count);
    return {root: root, count: count, sync: function () {
      Object.keys(controls).forEach(function (k) { controls[k].value = state[k] || ""; });
      if (document.activeElement !== search) search.value = state.q || "";
    }};
  }

  function pager(total, rerender) {
    var pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    var page = Math.min(Number(state.page || 0), pages - 1);
    var box = el("div", {cls: "pager"});
    if (pages > 1) {
      box.appendChild(el("button", {text: "◀ prev", disabled: page === 0 ? "" : null, onclick: function () { setState({page: page - 1}, true); }}));
      box.appendChild(el("span", {text: " page " + (page + 1) + " of " + pages + " "}));
      box.appendChild(el("button", {text: "next ▶", disabled: page >= pages - 1 ? "" : null, onclick: function () { setState({page: page + 1}, true); }}));
    }
    return {box: box, start: page * PAGE_SIZE, end: Math.min(total, (page + 1) * PAGE_SIZE)};
  }

  function renderList(r, host) {
    var run = DATA.runs[r];
    var f = {group: state.group, label: state.label, error: state.error, status: state.status};
    var search = state.q ? needles(state.q) : null;
    var shown = [];
    run.queries.forEach(function (query, i) { if (matches(r, i, query, f, search)) shown.push(i); });
    document.getElementById("count").textContent = shown.length + " of " + run.queries.length + " queries";
    host.textContent = "";
    var pages = pager(shown.length);
    host.appendChild(pages.box);
    var table = el("table", {cls: "queries"}, el("tr", null, ["group", "id", "query", "win", "valid", "label", "calls", "error kinds", "status codes", "wall s"].map(function (h) { return el("th", {text: h}); })));
    shown.slice(pages.start, pages.end).forEach(function (i) {
      var q = run.queries[i];
      var key = run.groups[q.g] + "/" + q.id;
      var row = el("tr", {cls: "qrow", "data-key": key, "data-index": String(i)},
        el("td", {text: run.groups[q.g]}), el("td", {text: q.id}), el("td", {cls: "qtext", text: short(q.q, 160)}),
        el("td", null, badge(q.win ? "win" : "no", q.win ? "ok" : "bad")), el("td", null, badge(q.valid ? "valid" : "invalid", q.valid ? "ok" : "bad")),
        el("td", null, badge(q.label, q.label)), el("td", {cls: "num", text: fmt(q.calls)}),
        el("td", null, q.err.map(function (e) { return badge(e, "bad"); })), el("td", null, q.st.map(function (s) { return badge(s, statusClass(s)); })),
        el("td", {cls: "num", text: fmt(q.wall)}));
      table.appendChild(row);
      var holder = el("tr", {cls: "detail-row"});
      holder.hidden = true;
      table.appendChild(holder);
      function toggle() {
        var open = holder.hidden;
        holder.hidden = !open;
        row.classList.toggle("open", open);
        if (open && !holder.firstChild) holder.appendChild(el("td", {colspan: "10", cls: "detail"}, trajectory(r, i)));
        if (open) openRows[key] = true; else delete openRows[key];
      }
      row.addEventListener("click", function () { toggle(); history.replaceState(null, "", location.hash.replace(/&?open=[^&]*/, "") + (row.classList.contains("open") ? "&open=" + encodeURIComponent(key) : "")); });
      if (state.open === key || openRows[key]) toggle();
    });
    host.appendChild(table);
    if (!shown.length) host.appendChild(el("p", {cls: "muted", id: "no-match", text: "No query matches these filters."}));
  }

  function statusClass(s) { return s === 3 ? "ok" : (s === 0 ? "" : (s === "no call" ? "warn" : "bad")); }

  // ------------------------------------------------------------------ one trajectory
  function trajectory(r, i) {
    var run = DATA.runs[r];
    var q = run.queries[i];
    var d = detail(r, i);
    var box = el("div", {cls: "trajectory", "data-key": run.groups[q.g] + "/" + q.id});
    var head = el("div", {cls: "traj-head"});
    head.appendChild(el("p", null, el("b", {text: "Query " + q.id + " (" + run.groups[q.g] + ", " + q.m + "): "}), q.q));
    var stats = ["model calls " + fmt(q.calls), "tokens " + fmt(q.tok), "wall " + fmt(q.wall) + " s"];
    if (q.ms !== undefined) stats.push("model " + fmt(q.ms) + " s");
    if (q.es !== undefined) stats.push("env " + fmt(q.es) + " s");
    head.appendChild(el("p", {cls: "meta", text: stats.join(" · ")}));
    head.appendChild(el("p", null, el("b", {text: "Final answer"}), q.ft ? " (" + q.ft + ")" : "", ": ",
      q.valid ? "" : badge("invalid: no final answer", "bad")));
    if (q.fa) head.appendChild(el("pre", {cls: "final", text: q.fa}));
    if (d.fa_raw && d.fa_raw !== q.fa) head.appendChild(el("details", null, el("summary", {text: "raw Finish arguments"}), el("pre", {text: d.fa_raw})));
    if (q.labels.length) {
      head.appendChild(el("p", null, el("b", {text: "Judge labels: "}), badge(q.label, q.label), " (per repeat below)"));
      head.appendChild(el("table", {cls: "labels"}, q.labels.map(function (l, k) {
        return el("tr", null, el("td", {text: "repeat " + k}), el("td", null, badge(l, l)), el("td", {text: q.reasons[k] || ""}));
      })));
    } else {
      head.appendChild(el("p", {cls: "muted", text: "No judge labels for this query."}));
    }
    box.appendChild(head);
    box.appendChild(el("p", {cls: "legend"}, "highlights: ", el("mark", {cls: "hl-name", text: "call name"}), el("mark", {cls: "hl-args", text: "arguments"}),
      el("mark", {cls: "hl-bad", text: "where JSON failed"}), el("mark", {cls: "hl-cut", text: "text cut / not allowed"}), el("mark", {cls: "hl-miss", text: "no call found"})));
    if (!d.nodes.length) box.appendChild(el("p", {cls: "muted", text: "empty trajectory"}));
    d.nodes.forEach(function (n) { box.appendChild(nodeView(n)); });
    return box;
  }

  function highlighted(text, spans) {
    var pre = el("pre", {cls: "raw"});
    var at = 0;
    (spans || []).forEach(function (s) {
      if (s[0] > at) pre.appendChild(document.createTextNode(text.slice(at, s[0])));
      pre.appendChild(el("mark", {cls: "hl-" + s[2], title: s[2], text: text.slice(s[0], s[1])}));
      at = s[1];
    });
    if (at < text.length) pre.appendChild(document.createTextNode(text.slice(at)));
    if (!text) pre.appendChild(el("span", {cls: "muted", text: "(empty)"}));
    return pre;
  }

  function recordView(rec) {
    if (!rec) return null;
    var parts = [el("span", {text: "step record: "}), badge("error " + (rec.e || "none"), rec.e && rec.e !== "none" ? "bad" : "")];
    if (rec.r) parts.push(badge("rung " + rec.r));
    if (rec.src) parts.push(badge("source " + rec.src));
    if (rec.sm) parts.push(badge("suffix match differs", "warn"));
    if (rec.det) parts.push(el("span", {cls: "muted", text: " " + rec.det}));
    return el("div", {cls: "parse"}, parts);
  }

  function parseView(p) {
    var rows = [el("tr", null, el("td", {text: "error kind"}), el("td", null, badge(p.e, p.e === "none" ? "ok" : "bad"), p.r ? badge("rung " + p.r) : null))];
    if (p.th) rows.push(el("tr", null, el("td", {text: "thought"}), el("td", {text: short(p.th, 600)})));
    (p.calls || []).forEach(function (c) {
      rows.push(el("tr", null, el("td", {text: "call"}), el("td", null, el("b", {text: c[0]}), " ", badge(c[2] ? "arguments decoded" : "arguments not decoded", c[2] ? "ok" : "bad"), el("pre", {text: c[1]}))));
    });
    if (p.fa !== undefined) rows.push(el("tr", null, el("td", {text: "final answer"}), el("td", {text: p.fa})));
    (p.det || []).forEach(function (t) { rows.push(el("tr", null, el("td", {text: "note"}), el("td", {text: t}))); });
    return el("table", {cls: "parse"}, rows);
  }

  function nodeView(n) {
    if (n.t === "try") return el("div", {cls: "node try"}, n.d + (n.win ? " (win)" : ""));
    var box = el("div", {cls: "node " + n.t + (n.pr ? " pruned" : "")});
    box.style.marginLeft = Math.min(n.z, 40) * 10 + "px";
    var flags = [n.pr ? badge("pruned", "warn") : null, n.fin ? badge("on the answer path", "ok") : null];
    if (n.t === "T") {
      append(box, el("div", {cls: "nh"}, el("b", {text: "Thought"}), " · raw model output · depth " + n.z + " ", flags));
      append(box, highlighted(n.d, n.parse ? n.parse.sp : null));
      if (n.parse) append(box, el("details", {open: n.parse.e !== "none" ? "" : null}, el("summary", {text: "parse: " + n.parse.e + (n.parse.r ? " · rung " + n.parse.r : "")}), parseView(n.parse)));
      append(box, recordView(n.rec));
    } else if (n.t === "A") {
      append(box, el("div", {cls: "nh"}, el("b", {text: "Action"}), " · depth " + n.z + " ", flags));
      append(box, el("div", null, el("code", {text: n.d})));
    } else {
      var code = n.c;
      append(box, el("div", {cls: "nh"}, el("b", {text: "Action Input"}), " · depth " + n.z + " ", flags,
        code !== undefined ? badge("status " + code + (STATUS_NAMES[code] ? " " + STATUS_NAMES[code] : ""), statusClass(code)) : null));
      append(box, el("pre", {cls: "args", text: n.d}));
      append(box, recordView(n.rec));
      if (n.o !== undefined) append(box, el("div", {cls: "nh", text: "observation"}));
      if (n.o !== undefined) append(box, el("pre", {cls: "obs", text: n.o}));
    }
    return box;
  }

  // ------------------------------------------------------------------ comparison
  function buildCompare() {
    var cmp = DATA.compare;
    var root = el("div", {id: "compare"});
    root.appendChild(section("Comparison of " + DATA.runs.length + " runs"));
    root.appendChild(el("table", {cls: "kv"}, DATA.runs.map(function (run, i) {
      return el("tr", null, el("td", {text: "run " + (i + 1)}), el("td", null, el("a", {href: "#run=" + i, text: run.name}), " · " + run.path + " · parser " + (run.parser || "?")));
    })));
    var s = cmp.summary;
    root.appendChild(el("p", {id: "compare-summary"}, s.queries + " queries: ", badge(s.outcome_differs + " outcome differs", "rank2"), " ",
      badge(s.trace_differs + " same outcome, different trace", "rank1"), " ", badge(s.same + " the same")));
    root.appendChild(el("p", {cls: "meta", text: "Outcome = (win, valid, judge label). Trace = the calls made (name, raw arguments, status) and the parse error kinds met. Disagreements come first."}));
    root.appendChild(figures(cmp.figs));
    var controls = filterBar(0, true);
    root.appendChild(controls.root);
    var list = el("div", {id: "list"});
    root.appendChild(list);
    return {root: root, update: function () { controls.sync(); renderCompareList(list); }};
  }

  function cellText(run, index) {
    if (index === null) return [badge("missing", "bad")];
    var q = DATA.runs[run].queries[index];
    return [badge(q.win ? "win" : "no", q.win ? "ok" : "bad"), badge(q.valid ? "valid" : "invalid", q.valid ? "ok" : "bad"), badge(q.label, q.label),
      " " + fmt(q.calls) + " calls ", q.err.map(function (e) { return badge(e, "bad"); })];
  }

  function renderCompareList(host) {
    var cmp = DATA.compare;
    var search = state.q ? needles(state.q) : null;
    var shown = cmp.rows.filter(function (row) {
      if (state.group && row.g !== state.group) return false;
      if (state.rank !== undefined && state.rank !== "" && String(row.rank) !== String(state.rank)) return false;
      if (search) {
        return row.cells.some(function (index, run) { return index !== null && matches(run, index, DATA.runs[run].queries[index], {}, search); });
      }
      return true;
    });
    document.getElementById("count").textContent = shown.length + " of " + cmp.rows.length + " queries";
    host.textContent = "";
    var pages = pager(shown.length);
    host.appendChild(pages.box);
    var head = el("tr", null, el("th", {text: ""}), el("th", {text: "group"}), el("th", {text: "id"}), el("th", {text: "query"}),
      DATA.runs.map(function (run) { return el("th", {text: run.name}); }));
    var table = el("table", {cls: "queries compare"}, head);
    var rankText = {2: "outcome differs", 1: "trace differs", 0: "same"};
    shown.slice(pages.start, pages.end).forEach(function (row) {
      var key = row.g + "/" + row.id;
      var tr = el("tr", {cls: "qrow crow", "data-key": key, "data-rank": String(row.rank)}, el("td", null, badge(rankText[row.rank], "rank" + row.rank)),
        el("td", {text: row.g}), el("td", {text: row.id}), el("td", {cls: "qtext", text: short(row.q, 120)}),
        row.cells.map(function (index, run) { return el("td", null, cellText(run, index)); }));
      var holder = el("tr");
      holder.hidden = true;
      tr.addEventListener("click", function () {
        holder.hidden = !holder.hidden;
        tr.classList.toggle("open", !holder.hidden);
        if (!holder.hidden && !holder.firstChild) {
          var side = el("div", {cls: "side"});
          side.style.gridTemplateColumns = "repeat(" + DATA.runs.length + ", minmax(0, 1fr))";
          row.cells.forEach(function (index, run) {
            side.appendChild(el("div", null, el("h3", {text: DATA.runs[run].name}), index === null ? el("p", {cls: "muted", text: "not in this run"}) : trajectory(run, index)));
          });
          holder.appendChild(el("td", {colspan: String(4 + DATA.runs.length), cls: "detail"}, side));
        }
      });
      table.appendChild(tr);
      table.appendChild(holder);
      if (state.open === key) tr.click();
    });
    host.appendChild(table);
  }

  // ------------------------------------------------------------------ start
  function readState() {
    state = readHash();
    if (state.run === undefined || !DATA.runs[Number(state.run)]) state.run = "0";
    if (!state.view && DATA.compare && location.hash.indexOf("run=") < 0) state.view = "compare";
  }
  window.addEventListener("hashchange", function () { readState(); render(); });
  readState();
  render();
  document.getElementById("render-ms").textContent = "rendered in " + Math.round(performance.now()) + " ms";
  document.body.setAttribute("data-ready", "1");
})();
