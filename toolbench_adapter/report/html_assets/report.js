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
  var RANK_TEXT = {2: "outcome differs", 1: "same outcome, different trace", 0: "the same", "-1": "missing from a run"};
  var nav = {keys: [], open: null};  // the shown list's query keys, for previous / next (buttons, j / k keys)
  var state = {};
  var views = {};
  var detailCache = {};
  var textCache = {};

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
  function labelText(l) { return l === "none" ? "unjudged" : l; }  // "none" is no verdict: say so
  function labelBadge(l) { return badge(labelText(l), l === "none" ? "unjudged" : l); }
  function outcomeBadge(q) {
    if (q.o === "infra_failure") return badge("infra: " + (q.fk || "unknown"), "bad");
    return q.o === "finished" ? badge("finished", "") : badge("outcome unknown", "unjudged");
  }
  function badge(text, cls) { return el("span", {cls: "badge " + (cls || ""), text: String(text)}); }
  function short(text, n) { text = String(text || ""); return text.length > n ? text.slice(0, n) + "…" : text; }
  function fmt(x) {
    if (x === null || x === undefined) return "–";
    if (typeof x === "number" && !Number.isInteger(x)) return x.toFixed(3);
    if (Array.isArray(x)) return x.length ? x.map(fmt).join(", ") : "none";
    if (typeof x === "object") {  // e.g. totals.infra_failures_by_kind: {"tool_server": 2}
      var keys = Object.keys(x);
      return keys.length ? keys.map(function (k) { return k + " " + fmt(x[k]); }).join(", ") : "none";
    }
    return String(x);
  }
  // a status code as people read it: its number and its name (toolbench_adapter/protocol/env.py STATUS_NAMES)
  function statusText(s) { return STATUS_NAMES[s] ? s + " " + STATUS_NAMES[s] : String(s); }
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
      // the search reads outputs and observations, not the prompts (every query's would match a tool name)
      var text = block ? block.textContent : "";
      var cut = text.indexOf(',"prompts":');
      textCache[key] = (cut < 0 ? text : text.slice(0, cut)).toLowerCase();
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
    tabs.hidden = !many;  // one run: its name heads the page, a lone tab would only repeat it
    if (many) DATA.runs.forEach(function (run, i) {
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
    // the first screen: what ran, how well, then the queries; set-up details fold below them
    root.appendChild(firstScreen(run));
    root.appendChild(el("h2", {text: "Queries", id: "queries-title"}));
    var controls = filterBar(r);
    root.appendChild(controls.root);
    var list = el("div", {id: "list"});
    root.appendChild(list);
    var setup = el("details", {cls: "overview", id: "setup"}, el("summary", {text: "Set-up details: manifest, leaderboard, error taxonomy, figures"}));
    setup.appendChild(el("p", {cls: "meta path", text: run.path}));
    setup.appendChild(manifestView(run));
    setup.appendChild(section("Leaderboard"));
    if (!run.boards.length) setup.appendChild(el("p", {cls: "muted", id: "not-evaluated", text: "Not evaluated: no judge labels, so no pass rate. Run `tba evaluate " + run.path + "` and render again."}));
    run.boards.forEach(function (b) { setup.appendChild(boardView(b)); });
    if (run.judges.length) setup.appendChild(el("p", {cls: "meta", text: "Judge: " + run.judges.join("; ")}));
    setup.appendChild(section("Error taxonomy"));
    setup.appendChild(taxonomyView(r));
    setup.appendChild(section("Figures"));
    setup.appendChild(figures(run.figs));
    root.appendChild(setup);
    return {root: root, update: function () { controls.sync(); renderList(r, list); }};
  }

  function firstScreen(run) {
    var f = run.facts || {}, h = run.headline || {}, ev = run.evaluation;
    var box = el("section", {cls: "first", id: "first-screen"});
    box.appendChild(el("h2", {cls: "run-name", text: run.name}));
    var facts = [["model", f.model], ["method", f.method], ["dialect / parser", (f.dialect || "unknown") + " / " + (f.parser || "unknown")],
      ["judge", f.judge || (run.boards.length ? "not recorded" : "not judged")],
      ["evaluation", ev ? ev.id + (ev.count > 1 ? " (" + ev.why + "; " + ev.count + " evaluations)" : "") : null],
      ["compat", f.compat], ["structured output", f.structured], ["date", f.date]];
    box.appendChild(el("p", {cls: "facts", id: "facts"}, facts.filter(function (x) { return x[1]; }).map(function (x) {
      return el("span", {cls: "fact"}, el("span", {cls: "muted", text: x[0] + " "}), el("b", {text: String(x[1])}));
    })));
    var cards = el("div", {cls: "headline", id: "headline"});
    var words = h.words || {};  // evaluation/counts.py's DEFINITIONS: one meaning per word on every card
    var sopr = h.sopr || {};
    ["upstream", "strict"].forEach(function (mode) {
      var s = sopr[mode];
      var note = mode === "upstream" ? "denominator: judged queries (every answer file)" : "denominator: whole test set";
      // upstream divides by the queries judged; strict by the whole test set, a missing answer counting Unsolved
      // "answered" is counts.py's one meaning (a give_answer): the strict n counts test ids with an answer file
      var sub = !s ? "" : mode === "upstream" ? "n " + s.n + " of " + s.N + " queries judged" : "n " + (s.n - s.missing) + " of " + s.n + " test ids with an answer file";
      // not the score of a complete evaluation (failed judgements left out): the tables' mark, and its footnote below
      if (s) cards.appendChild(card("SoPR " + mode, s.text + (s.mark ? " " + s.mark : ""), sub,
        note + (s.mark ? "; " + s.mark + " " + s.markWhy : ""), "sopr-" + mode));
    });
    if (!sopr.upstream && !sopr.strict) cards.appendChild(card("SoPR", "not judged", "run `tba evaluate`", "no judge labels in this folder", "sopr-none"));
    // a set of trials (tba run --trials): the SoPR cards read SoPR over trials [95% CI]; pass@K / pass^K beside them
    var tr = h.trials;
    if (tr && tr.text) cards.appendChild(card("over " + tr.count + " trials", "pass@" + tr.k + " " + fmtPct(tr.passAt) +
      " · pass^" + tr.k + " " + fmtPct(tr.passHat), "flip rate " + fmtPct(tr.flip) + " · " + tr.variance, tr.definition, "trials"));
    else if (tr) cards.appendChild(card("over " + tr.count + " trials", "not judged", "run `tba evaluate` on the set", tr.definition, "trials"));
    // the run summary's counts (evaluation/counts.py): the same words and numbers as tba run prints
    var counted = h.answered === undefined ? "" : " · answered " + h.answered + ", win " + h.win;
    cards.appendChild(card("valid answers", h.valid + " / " + h.queries, pct(h.valid, h.queries) + counted,
      ["valid", "answered", "win"].map(function (w) { return w + ": " + words[w]; }).join("; "), "valid"));
    var infraText = h.infra + " / " + h.queries;
    var kinds = Object.keys(h.infra_kinds || {}).map(function (k) { return k + " " + h.infra_kinds[k]; }).join(", ");
    var infraSub = h.outcome_unknown === h.queries ? "unknown: run written before outcomes were recorded" : (kinds || "none");
    cards.appendChild(card("infrastructure failures", h.outcome_unknown === h.queries ? "unknown" : infraText, infraSub,
      "model endpoint, tool server, replay gap or harness error: not the model's fault", "infra", h.infra ? "bad" : ""));
    // an outcome of finished queries (the model's limit), counted as the run summary and the taxonomy count it
    if (h.context_length) cards.appendChild(card("context length", h.context_length + " / " + h.queries,
      "finished at the model's context limit", "the model endpoint refused a request as longer than the model's " +
      "context: the chain ended there, as upstream's does (not an infrastructure failure)", "context-length"));
    var jf = run.judgeFailures || [0, null];  // [failed judgements, judgements (null: unknown)]
    // labels given by upstream's rule (no Finish) counted apart from the judge's (evaluation/counts.py): a card
    // never says the judge gave verdicts it was never asked for
    var lc = run.labelCounts;
    if (run.boards.length || jf[1]) {
      cards.appendChild(card("failed judgements", lc ? jf[0] + " / " + lc.by_judge + " judge calls" :
        jf[1] === null ? String(jf[0]) : jf[0] + " / " + jf[1], lc ? lc.text : jf[0] ? "JudgeError: no verdict" : "",
        "by rule: " + words["by rule"] + "; by the judge: " + words["by the judge"], "judge-failures", jf[0] ? "bad" : ""));
    }
    box.appendChild(cards);
    // against the StableToolBench leaderboard's setup (evaluation/comparability.py): on every first screen
    if (h.comparability) box.appendChild(el("p", {cls: /^comparable/.test(h.comparability) ? "meta" : "warning", id: "comparability", text: h.comparability}));
    if (h.judgeCard) box.appendChild(el("p", {cls: "meta", id: "judge-card", text: h.judgeCard}));
    // what the run cost and how fast its model answered (runs/cost.py): money only from a --prices file
    if (h.cost) box.appendChild(el("p", {cls: "meta", id: "cost", text: "cost: " + h.cost}));
    var marked = ["upstream", "strict"].map(function (mode) { return sopr[mode]; }).filter(function (s) { return s && s.mark; });
    if (marked.length) box.appendChild(el("p", {cls: "meta", id: "sopr-mark", text: marked[0].mark + " SoPR: " + marked[0].markWhy}));
    // evaluations are kept apart per judge (evaluation/evaluations.py): say whose labels these are
    if (ev && ev.selfJudged) {
      box.insertBefore(el("p", {cls: "warning", id: "self-judged-warning"}, el("b", {text: "Self-judged: "}),
        "the run's own model judged its answers (" + ev.selfJudgedHow + "). A model grading itself gives no StableToolBench number: " +
        "judge the run with another model for one (tba evaluate " + run.path + " --judge-url URL --judge-model NAME)."), cards);
    }
    if (ev && ev.laterFailed.length) {
      box.insertBefore(el("p", {cls: "warning", id: "evaluation-warning"}, el("b", {text: "A later evaluation failed: "}),
        ev.laterFailed.map(function (x) { return x.summary; }).join("; ") + ". It replaced nothing: shown is " + ev.id +
        " (" + ev.why + "). tba report --judge-id " + ev.laterFailed[0].id + " shows the failed one."), cards);
    }
    if (jf[0]) {
      box.insertBefore(el("p", {cls: "warning", id: "judge-warning"}, el("b", {text: "Warning: "}),
        (jf[1] === null ? jf[0] : jf[0] + " of " + jf[1]) + " judgements failed (JudgeError: the judge gave no verdict after its retries). ",
        "A failed judgement says nothing about the answer: ", link({label: "JudgeError"}, "the queries labelled JudgeError"),
        ", then judge again once the judge works: tba evaluate " + run.path), cards);
    }
    if (run.notes.length) box.appendChild(el("ul", {cls: "notes"}, run.notes.map(function (n) { return el("li", {text: n}); })));
    return box;
  }

  function fmtPct(x) { return x === null || x === undefined ? "–" : Number(x).toFixed(1); }

  function card(title, value, sub, why, id, cls) {
    return el("div", {cls: "card " + (cls || ""), id: "card-" + id, title: why},
      el("div", {cls: "card-title", text: title}), el("div", {cls: "card-value", text: value}), el("div", {cls: "card-sub", text: sub}));
  }
  function pct(a, b) { return b ? (100 * a / b).toFixed(1) + "%" : "–"; }

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
    (board.comparability || []).forEach(function (line) { wrap.appendChild(el("p", {cls: "meta comparability", text: line})); });
    wrap.appendChild(el("table", {cls: "board"},
      el("tr", null, board.header.map(function (h, i) { return el("th", {cls: i ? "num" : "", text: h}); })),
      board.rows.map(function (row) { return el("tr", null, row.map(function (c, i) { return el("td", {cls: i ? "num" : "", text: c}); })); })));
    if (board.footnote) wrap.appendChild(el("p", {cls: "meta board-foot", text: board.footnote}));  // one note a line
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
        var label = part[2] === "status" ? statusText(kind) : kind;
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
    // a chart with nothing or one bar to show is left out; one line says which and why
    var drawn = figs.filter(function (f) { return f.png; });
    var hidden = figs.filter(function (f) { return !f.png; });
    var box = el("div", {cls: "figs-wrap"});
    if (drawn.length) box.appendChild(el("div", {cls: "figs"}, drawn.map(function (f) {
      return el("figure", null, el("img", {src: "data:image/png;base64," + f.png, alt: f.title}), el("figcaption", {text: f.title}));
    })));
    if (hidden.length) box.appendChild(el("p", {cls: "muted figs-hidden", text: "Not drawn: " + hidden.map(function (f) { return f.title + " (" + f.why + ")"; }).join("; ") + "."}));
    return box;
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
      add("rank", "rows", [2, 1, 0, -1], [RANK_TEXT[2], RANK_TEXT[1], RANK_TEXT[0], RANK_TEXT[-1]]);
    } else {
      add("label", "label", LABELS, LABELS.map(labelText));
      add("error", "error kind", run.errorKinds);
      add("status", "status", run.statusCodes.map(String), run.statusCodes.map(statusText));
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
    nav.keys = shown.map(function (i) { return run.groups[run.queries[i].g] + "/" + run.queries[i].id; });
    host.textContent = "";
    var pages = pager(shown.length);
    host.appendChild(pages.box);
    var trials = run.queries.length && run.queries[0].tr !== undefined;  // a set of trials: "Solved in c of K trials"
    var heads = ["group", "id", "query", "outcome", "win", "valid", "label"].concat(trials ? ["trials"] : [])
      .concat(["calls", "error kinds", "status codes", "wall s"]);
    var table = el("table", {cls: "queries"}, el("tr", null, heads.map(function (h) { return el("th", {text: h}); })));
    var opened = null;
    shown.slice(pages.start, pages.end).forEach(function (i) {
      var q = run.queries[i];
      var key = run.groups[q.g] + "/" + q.id;
      var row = el("tr", {cls: "qrow", "data-key": key, "data-index": String(i), tabindex: "0"},
        el("td", {text: run.groups[q.g]}), el("td", {text: q.id}), el("td", {cls: "qtext", text: short(q.q, 160)}),
        el("td", null, outcomeBadge(q)),
        el("td", null, badge(q.win ? "win" : "no", q.win ? "ok" : "bad")), el("td", null, badge(q.valid ? "valid" : "invalid", q.valid ? "ok" : "bad")),
        el("td", null, labelBadge(q.label)), trials ? el("td", {cls: "trials", text: q.tr}) : null,
        el("td", {cls: "num", text: fmt(q.calls)}),
        el("td", {cls: "kinds"}, q.err.map(function (e) { return badge(e, "bad"); })), el("td", {cls: "kinds"}, q.st.map(function (s) { return badge(statusText(s), statusClass(s)); })),
        el("td", {cls: "num", text: fmt(q.wall)}));
      table.appendChild(row);
      row.addEventListener("click", function () { openQuery(state.open === key ? "" : key); });
      if (state.open === key) {
        row.classList.add("open");
        table.appendChild(el("tr", {cls: "detail-row"}, el("td", {colspan: String(heads.length), cls: "detail"}, trajectory(r, i))));
        opened = row;
      }
    });
    host.appendChild(table);
    if (!shown.length) host.appendChild(el("p", {cls: "muted", id: "no-match", text: "No query matches these filters."}));
    scrollToOpened(opened);
  }

  // ------------------------------------------------------------------ one query open at a time: previous / next
  function openQuery(key) {
    var at = nav.keys.indexOf(key);
    var changes = {open: key};
    if (at >= 0) changes.page = Math.floor(at / PAGE_SIZE) || "";
    nav.scroll = Boolean(key);
    setState(changes, true);
  }
  function step(delta) {
    if (!nav.keys.length) return;
    var at = nav.keys.indexOf(state.open);
    var next = at < 0 ? (delta > 0 ? 0 : nav.keys.length - 1) : at + delta;
    if (next >= 0 && next < nav.keys.length) openQuery(nav.keys[next]);
  }
  function scrollToOpened(row) {
    if (row && nav.scroll) { nav.scroll = false; row.scrollIntoView({block: "start"}); }
  }
  function navBar(key) {
    var at = nav.keys.indexOf(key);
    return el("div", {cls: "qnav", id: "qnav"},
      el("button", {id: "prev-query", text: "◀ previous", title: "previous query (k or ←)", disabled: at <= 0 ? "" : null, onclick: function (e) { e.stopPropagation(); step(-1); }}),
      el("span", {cls: "muted", text: at >= 0 ? " query " + (at + 1) + " of " + nav.keys.length + " shown " : " "}),
      el("button", {id: "next-query", text: "next ▶", title: "next query (j or →)", disabled: at < 0 || at >= nav.keys.length - 1 ? "" : null, onclick: function (e) { e.stopPropagation(); step(1); }}),
      el("span", {cls: "muted keys", text: " keys: j / → next, k / ← previous, Esc close"}),
      el("button", {cls: "close", text: "close ✕", onclick: function (e) { e.stopPropagation(); openQuery(""); }}));
  }
  document.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (/^(INPUT|SELECT|TEXTAREA)$/.test(tag) || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "j" || event.key === "ArrowRight") step(1);
    else if (event.key === "k" || event.key === "ArrowLeft") step(-1);
    else if (event.key === "Escape" && state.open) openQuery("");
    else if (event.key === "Enter" && event.target.classList && event.target.classList.contains("qrow")) event.target.click();
    else return;
    event.preventDefault();
  });

  function statusClass(s) { return s === 3 ? "ok" : (s === 0 ? "" : (s === "no call" ? "warn" : "bad")); }

  // ------------------------------------------------------------------ one trajectory
  function trajectory(r, i, withNav) {
    var run = DATA.runs[r];
    var q = run.queries[i];
    var d = detail(r, i);
    var box = el("div", {cls: "trajectory", "data-key": run.groups[q.g] + "/" + q.id});
    if (withNav !== false) box.appendChild(navBar(run.groups[q.g] + "/" + q.id));
    var head = el("div", {cls: "traj-head"});
    if (q.o === "infra_failure") head.appendChild(el("p", {cls: "infra"}, badge("infrastructure failure: " + (q.fk || "unknown"), "bad"), " ",
      el("span", {text: q.fd || "no detail recorded"}), el("span", {cls: "muted", text: " · not the model's doing: rerunning the same `tba run` command redoes this query"})));
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
    var started = {};
    d.nodes.forEach(function (n) {
      if (n.k !== undefined && !started[n.k] && d.calls && d.calls[n.k]) { started[n.k] = true; box.appendChild(callView(d, n.k, n.z)); }
      box.appendChild(nodeView(n));
    });
    return box;
  }

  // one model call: its number, tokens and latency (when the run recorded them) and the prompt it received
  function callView(d, k, depth) {
    var call = d.calls[k];
    var parts = [el("b", {text: "model call " + (call.turn !== undefined ? call.turn : k + 1)})];
    if (call.pt !== undefined || call.ct !== undefined) parts.push(" · prompt tokens " + fmt(call.pt) + " · completion tokens " + fmt(call.ct));
    else parts.push(el("span", {cls: "muted", text: " · tokens: not recorded per call"}));
    parts.push(call.ml !== undefined ? " · latency " + fmt(call.ml) + " s" : el("span", {cls: "muted", text: " · latency: not recorded per call"}));
    if (call.fr) parts.push(" · finish reason " + call.fr);
    var box = el("div", {cls: "call", "data-call": String(k)}, el("div", {cls: "call-head"}, parts));
    box.style.marginLeft = Math.min(depth, 40) * 10 + "px";
    box.appendChild(promptView(d.prompts, call.mc));
    return box;
  }

  // a prompt block stores each call as [prefix shared with the previous call's prompt, its own rest]
  function promptAt(p, mc) {
    if (!p.decoded) p.decoded = [];
    for (var i = p.decoded.length; i <= mc; i++) {
      var previous = i ? p.decoded[i - 1] : (p.kind === "text" ? "" : []);
      var c = p.calls[i];
      p.decoded.push(p.kind === "text" ? previous.slice(0, c[0]) + c[1] : previous.slice(0, c[0]).concat(c[1]));
    }
    return p.decoded[mc];
  }
  function promptPart(p, mc, key) { var v = p.vary && p.vary[mc]; return v && key in v ? v[key] : p[key]; }

  function promptView(p, mc) {
    if (!p || mc === undefined || !p.calls[mc]) return el("p", {cls: "muted prompt-none", text: "prompt: not shown for this call (this run did not record its requests, and an older run's prompts are rebuilt only from the messages an answer file keeps along a valid answer's path, through a known dialect)"});
    var prompt = promptAt(p, mc);
    var stop = promptPart(p, mc, "stop"), prefill = promptPart(p, mc, "prefill"), tools = promptPart(p, mc, "tools");
    var how = p.how === "recorded" ? "recorded by the run as it was sent (steps.jsonl)"
      : p.how + " from the answer file's messages through the run's dialect (its recorded options), rendered by this page's toolbench-adapter" + (p.run_code ? "; the run was made by " + p.run_code : "");
    var body;
    if (p.kind === "text") {
      body = el("pre", {cls: "prompt-text", text: prompt});
    } else {
      body = el("div", {cls: "messages"}, prompt.map(function (m) {
        var text = m.content === null || m.content === undefined ? "" : (typeof m.content === "string" ? m.content : JSON.stringify(m.content, null, 1));
        if (m.tool_calls) text += (text ? "\n" : "") + "tool_calls: " + JSON.stringify(m.tool_calls, null, 1);
        return el("div", {cls: "msg"}, el("span", {cls: "badge role", text: m.role + (m.name ? " " + m.name : "")}), el("pre", {text: text}));
      }));
    }
    var size = prompt.length + (p.kind === "text" ? " characters" : " messages");
    var box = el("details", {cls: "prompt"}, el("summary", {text: "prompt sent (" + size + ", " + p.how + ")"}),
      el("p", {cls: "meta", text: how + (stop && stop.length ? " · stop " + JSON.stringify(stop) : "") + (prefill ? " · prefill " + JSON.stringify(prefill) : "")}), body);
    if (tools) box.appendChild(el("details", null, el("summary", {text: "tools sent (" + tools.length + ")"}), el("pre", {text: JSON.stringify(tools, null, 1)})));
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

  function toolCallView(rec) {
    if (!rec || rec.src === "finish" || rec.s === undefined) return null;
    var known = ["hs", "rk", "at", "tl"].some(function (k) { return rec[k] !== undefined; });
    if (!known) return el("div", {cls: "tool-call muted", text: "tool call: HTTP status, reply kind, attempts and latency unknown (not recorded by this run)"});
    return el("div", {cls: "tool-call"}, el("span", {text: "tool call: "}), badge("HTTP " + fmt(rec.hs), rec.hs && rec.hs >= 400 ? "bad" : ""),
      badge("reply " + fmt(rec.rk), rec.rk && rec.rk !== "json" && rec.rk !== "ok" ? "warn" : ""), badge(fmt(rec.at) + " attempt" + (rec.at === 1 ? "" : "s"), rec.at > 1 ? "warn" : ""),
      badge("latency " + fmt(rec.tl) + " s"));
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

  function readingText(p) {
    var calls = (p.calls || []).map(function (c) { return c[0]; });
    return (calls.length ? "call " + calls.join(", ") : (p.fa !== undefined ? "final answer" : "no call")) + " · error " + p.e + (p.r ? " · JSON rung " + p.r : "");
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
      if (n.parse) append(box, el("details", {cls: "reading", open: n.parse.e !== "none" ? "" : null}, el("summary", {text: "parser's reading: " + readingText(n.parse)}), parseView(n.parse)));
      append(box, recordView(n.rec));
    } else if (n.t === "A") {
      append(box, el("div", {cls: "nh"}, el("b", {text: "Action"}), " · depth " + n.z + " ", flags));
      append(box, el("div", null, el("code", {text: n.d})));
    } else {
      var code = n.c;
      append(box, el("div", {cls: "nh"}, el("b", {text: "Action Input"}), " · depth " + n.z + " ", flags,
        code !== undefined ? badge("status " + statusText(code), statusClass(code)) : null));
      append(box, el("pre", {cls: "args", text: n.d}));
      append(box, recordView(n.rec));
      append(box, toolCallView(n.rec));
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
    // what the runs differ in, named as such (parser, dialect, constrain, on-invalid, model, ...), and whose labels
    root.appendChild(el("p", {cls: "meta", id: "compare-axes", text: (cmp.axes && cmp.axes.length ? "the runs differ in: " + cmp.axes.join(", ") : "the runs differ in none of model, dialect, parser, constrain, on-invalid, method") + "; " + cmp.judges}));
    root.appendChild(el("table", {cls: "kv"}, DATA.runs.map(function (run, i) {
      var h = run.headline || {}, up = (h.sopr || {}).upstream;
      var ev = run.evaluation, judge = ev ? "judge " + (ev.model || ev.judge) + (ev.selfJudged ? " (self-judged)" : "") : "not judged";
      var differs = (cmp.axes || []).map(function (a) { return a + " " + ((cmp.settings[i] || {})[a] || "?"); }).join(", ");
      return el("tr", null, el("td", {text: "run " + (i + 1)}), el("td", null, el("a", {href: "#run=" + i, text: run.name}),
        " · " + h.queries + " queries · " + (up ? "SoPR upstream " + up.text + (up.mark ? " " + up.mark + " (" + up.markWhy + ")" : "") : "unjudged") +
        " · " + judge + (differs ? " · " + differs : ""),
        el("div", {cls: "muted comparability", text: h.comparability || ""})),
        el("td", {cls: "path muted", text: run.path}));
    })));
    var s = cmp.summary;
    var missing = (s.missing_per_run || []).map(function (n, i) { return n ? n + " not in " + DATA.runs[i].name : null; }).filter(Boolean).join(", ");
    root.appendChild(el("p", {id: "compare-summary"}, s.queries + " queries: ", badge(s.outcome_differs + " outcome differs", "rank2"), " ",
      badge(s.trace_differs + " same outcome, different trace", "rank1"), " ", badge(s.same + " the same"),
      s.missing ? [" ", badge(s.missing + " missing from a run", "rank-missing"), el("span", {cls: "muted", text: " (" + missing + ")"})] : null));
    root.appendChild(el("p", {cls: "meta", text: "Outcome = (finished or infrastructure failure, win, valid, judge label; the label counts only where every run was judged). Trace = the calls made (name, raw arguments, status) and the parse error kinds met. Disagreements come first; queries missing from a run are counted apart and listed last."}));
    root.appendChild(figures(cmp.figs));
    var controls = filterBar(0, true);
    root.appendChild(controls.root);
    var list = el("div", {id: "list"});
    root.appendChild(list);
    return {root: root, update: function () { controls.sync(); renderCompareList(list); }};
  }

  function cellText(run, index) {
    if (index === null) return [badge("not in this run", "unjudged")];
    var q = DATA.runs[run].queries[index];
    return [q.o === "infra_failure" ? outcomeBadge(q) : null, badge(q.win ? "win" : "no", q.win ? "ok" : "bad"), badge(q.valid ? "valid" : "invalid", q.valid ? "ok" : "bad"), labelBadge(q.label),
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
    nav.keys = shown.map(function (row) { return row.g + "/" + row.id; });
    var head = el("tr", null, el("th", {text: ""}), el("th", {text: "group"}), el("th", {text: "id"}), el("th", {text: "query"}),
      DATA.runs.map(function (run) { return el("th", {text: run.name}); }));
    var table = el("table", {cls: "queries compare"}, head);
    var opened = null;
    shown.slice(pages.start, pages.end).forEach(function (row) {
      var key = row.g + "/" + row.id;
      var tr = el("tr", {cls: "qrow crow", "data-key": key, "data-rank": String(row.rank), tabindex: "0"},
        el("td", null, badge(RANK_TEXT[row.rank], row.rank < 0 ? "rank-missing" : "rank" + row.rank)),
        el("td", {text: row.g}), el("td", {text: row.id}), el("td", {cls: "qtext", text: short(row.q, 120)}),
        row.cells.map(function (index, run) { return el("td", null, cellText(run, index)); }));
      tr.addEventListener("click", function () { openQuery(state.open === key ? "" : key); });
      table.appendChild(tr);
      if (state.open === key) {
        tr.classList.add("open");
        var side = el("div", {cls: "side"});
        side.style.gridTemplateColumns = "repeat(" + DATA.runs.length + ", minmax(0, 1fr))";
        row.cells.forEach(function (index, run) {
          side.appendChild(el("div", null, el("h3", {text: DATA.runs[run].name}), index === null ? el("p", {cls: "muted", text: "not in this run"}) : trajectory(run, index, false)));
        });
        table.appendChild(el("tr", {cls: "detail-row"}, el("td", {colspan: String(4 + DATA.runs.length), cls: "detail"}, navBar(key), side)));
        opened = tr;
      }
    });
    host.appendChild(table);
    scrollToOpened(opened);
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
