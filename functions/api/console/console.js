// acx console: a person's view of the memory service over its own HTTP API.
//
// Authority: the bearer token lives in this tab's sessionStorage and goes out in the Authorization
// header of each fetch; no cookie carries it, so a form or page on another site cannot act with it
// (CSRF). Every text that comes from the service is rendered with textContent, never as markup.
"use strict";

(function () {
  const KEY = "acx.console.token";
  const API = new URL("./", window.location.href); // /console -> the API's root (works under a stage prefix too)
  const $ = (id) => document.getElementById(id);
  const state = { pkg: null, items: [], cursor: null, index: 0, inFlight: 0, decided: 0, local: false };

  function token() { return window.sessionStorage.getItem(KEY); }

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function say(text) { $("status").textContent = text; }

  function alertText(text, where) {
    const box = $(where || "alert");
    box.textContent = text || "";
    box.hidden = !text;
  }

  // One failed answer as a sentence for a person: the scope a 403 names, what to do on a 401.
  function explain(status, body, what) {
    const err = (body && body.error) || {};
    const scope = (body && body.scope) || err.scope;
    if (status === 401) return what + ": your token is missing, expired or not accepted here. Log in again.";
    if (status === 403 && scope) return what + ": your token lacks the scope " + scope + ". Ask for a token with " + scope + ".";
    if (status === 403) return what + ": refused (" + (err.message || body.message || "forbidden") + ").";
    return what + ": " + (err.message || (body && body.message) || "the service answered " + status) + " (HTTP " + status + ")";
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    const t = token();
    if (t) headers.Authorization = "Bearer " + t;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(new URL(path, API), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "omit", cache: "no-store", redirect: "error",
    });
    let doc = null;
    try { doc = await res.json(); } catch (_) { doc = null; }
    return { status: res.status, ok: res.ok, body: doc };
  }

  function claims(t) {
    try {
      const part = t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(atob(part + "===".slice((part.length + 3) % 4)));
    } catch (_) { return {}; }
  }

  // --- log in / out
  function showLogin() {
    $("login").hidden = false;
    $("app").hidden = true;
    $("who").hidden = true;
    $("logout").hidden = true;
  }

  async function start() {
    const t = token();
    if (!t) { showLogin(); return; }
    const c = claims(t);
    $("who").textContent = "tenant " + (c.tenant || "?") + " · " + (c.sub || "?") + " · scopes: " + (c.scope || c.scp || "");
    $("who").hidden = false;
    $("logout").hidden = false;
    $("login").hidden = true;
    $("app").hidden = false;
    $("main").focus(); // the next Tab goes through the packages, then the package's views
    await loadPackages(false);
  }

  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim().replace(/^Bearer\s+/i, "");
    if (!t) return;
    window.sessionStorage.setItem(KEY, t);
    $("token").value = "";
    alertText("");
    start();
  });

  $("local-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const res = await api("POST", "local/token", { tenant: $("local-tenant").value.trim(), sub: $("local-sub").value.trim() });
    if (!res.ok) { alertText(explain(res.status, res.body, "Local token")); return; }
    window.sessionStorage.setItem(KEY, res.body.token);
    alertText("");
    start();
  });

  $("logout").addEventListener("click", () => {
    window.sessionStorage.removeItem(KEY);
    state.pkg = null;
    say("Logged out.");
    showLogin();
    $("token").focus();
  });

  // The local stack answers GET /local/jwks.json; AWS does not (its gateway refuses without a token).
  async function probeLocal() {
    try {
      const res = await fetch(new URL("local/jwks.json", API), { credentials: "omit", cache: "no-store" });
      state.local = res.ok;
    } catch (_) { state.local = false; }
    $("local-form").hidden = !state.local;
  }

  // --- packages
  async function loadPackages(quiet) {
    if (!quiet) say("Loading packages...");
    const res = await api("GET", "v1/packages?limit=200");
    const tbody = $("packages");
    tbody.replaceChildren();
    if (!res.ok) {
      if (res.status === 401) showLogin();
      alertText(explain(res.status, res.body, "Packages"));
      say("");
      return;
    }
    for (const p of res.body.packages) {
      const tr = document.createElement("tr");
      const name = document.createElement("td");
      const open = el("button", p.package);
      open.type = "button";
      open.setAttribute("aria-label", "Open package " + p.package);
      open.addEventListener("click", () => openPackage(p.package));
      name.append(open);
      tr.dataset.pkg = p.package;
      if (p.package === state.pkg) tr.setAttribute("aria-current", "true");
      tr.append(name, el("td", p.records), el("td", p.logSize), el("td", p.locked ? "yes" : "no"));
      tbody.append(tr);
    }
    if (!quiet) say(res.body.packages.length + " package(s).");
    if (!state.pkg && res.body.packages.length === 1) openPackage(res.body.packages[0].package);
  }

  $("refresh").addEventListener("click", () => loadPackages(false));

  async function openPackage(pkg) {
    state.pkg = pkg;
    state.cursor = null;
    state.decided = 0;
    for (const tr of $("packages").children) tr.setAttribute("aria-current", String(tr.dataset.pkg === pkg));
    $("pkg-name").textContent = pkg;
    $("package").hidden = false;
    $("results").replaceChildren();
    alertText("");
    alertText("", "review-alert");
    await Promise.all([loadHealth(false), loadQueue()]);
  }

  // --- log health: head (size, checkpoint) and a verification run
  function checkpointFields(text) {
    const lines = String(text || "").split("\n");
    return { origin: lines[0] || "", size: lines[1] || "", root: lines[2] || "", head: (lines[3] || "").replace(/^chain-head /, "") };
  }

  function row(dl, term, value, cls) {
    dl.append(el("dt", term));
    dl.append(el("dd", value, cls));
  }

  async function loadHealth(verifyNow) {
    const dl = $("health-list");
    const pkg = encodeURIComponent(state.pkg);
    const head = await api("GET", "v1/packages/" + pkg + "/log");
    dl.replaceChildren();
    if (!head.ok) { row(dl, "log", explain(head.status, head.body, "Log"), "bad"); return; }
    const cp = checkpointFields(head.body.checkpoint);
    row(dl, "entries", head.body.size);
    row(dl, "checkpoint", cp.size ? "size " + cp.size + ", root " + cp.root.slice(0, 16) + "..." : "none yet");
    row(dl, "verifier key", String(head.body.verifierKey || "").slice(0, 40));
    say(verifyNow ? "Verifying the log..." : "Checking the log...");
    const v = await api("GET", "v1/packages/" + pkg + "/log/verify");
    if (!v.ok) { row(dl, "verification", explain(v.status, v.body, "Verify"), "bad"); say(""); return; }
    const b = v.body;
    row(dl, "last verification", b.status + " at " + new Date().toLocaleTimeString() + " (" + b.checked + " checked" + (b.incremental ? ", incremental" : "") + ")", b.status === "ok" ? "ok" : "bad");
    row(dl, "checkpoint covers", b.checkpointSize === null || b.checkpointSize === undefined ? "-" : b.checkpointSize + " entries");
    row(dl, "witness", b.witnessSize === null || b.witnessSize === undefined ? "not yet witnessed" : "size " + b.witnessSize);
    if (b.firstBadSeq !== null && b.firstBadSeq !== undefined) row(dl, "first bad entry", b.firstBadSeq + ": " + (b.reason || ""), "bad");
    say("Log " + b.status + ".");
  }

  $("verify").addEventListener("click", () => loadHealth(true));

  // --- review queue
  async function loadQueue() {
    const queue = $("queue");
    queue.replaceChildren();
    state.items = [];
    state.index = 0;
    const res = await api("GET", "v1/packages/" + encodeURIComponent(state.pkg) + "/review?limit=200"); // decided candidates leave the queue: the next page is the first again
    if (!res.ok) {
      $("review-state").textContent = explain(res.status, res.body, "Review queue");
      $("review-state").className = "bad";
      $("review-actions").hidden = true;
      return;
    }
    $("review-actions").hidden = false;
    $("review-state").className = "";
    state.items = res.body.items;
    state.cursor = res.body.cursor;
    renderQueue();
  }

  function renderQueue() {
    const queue = $("queue");
    queue.replaceChildren();
    state.items.forEach((item, i) => {
      const li = document.createElement("li");
      li.id = "cand-" + i;
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", String(i === state.index));
      const r = item.record || {};
      li.append(el("span", r.title || item.id, "item-title"));
      li.append(el("span", r.summary || "", "item-summary"));
      const who = item.author ? item.author.actor + (item.author.agent ? " (" + item.author.agent + ")" : "") : "?";
      li.append(el("span", "by " + who + (item.recordedAt ? " · " + item.recordedAt : "") + " · " + item.id, "item-meta"));
      if (item.nearBelief) li.append(el("span", "Nearly repeats belief: " + item.nearBelief.title, "near"));
      li.addEventListener("click", () => { state.index = i; select(); });
      queue.append(li);
    });
    queue.setAttribute("role", "listbox");
    queue.hidden = !state.items.length;
    $("review-actions").hidden = !state.items.length;
    progress();
    select();
  }

  function select() {
    const queue = $("queue");
    const n = state.items.length;
    if (state.index >= n) state.index = Math.max(0, n - 1);
    Array.from(queue.children).forEach((li, i) => li.setAttribute("aria-selected", String(i === state.index)));
    const current = queue.children[state.index];
    if (current) {
      queue.setAttribute("aria-activedescendant", current.id);
      current.scrollIntoView({ block: "nearest" });
    } else {
      queue.removeAttribute("aria-activedescendant");
    }
  }

  // A decision leaves the list at once and is sent in the background, one request after another
  // (the log takes one writer at a time), so a person typing a-a-a-a never waits for the network and
  // no keystroke is lost. A refused decision puts its candidate back at the top, with the reason.
  let sending = Promise.resolve();

  function progress() {
    const left = state.items.length;
    const saving = state.inFlight ? "; " + state.inFlight + " saving" : "";
    $("review-state").textContent = left
      ? left + " candidate(s) to review" + (state.cursor ? " (more after these)" : "") + "; " + state.decided + " decided in this session" + saving + "."
      : "The queue is clear. " + state.decided + " decided in this session" + saving + ".";
  }

  function decide(decision, record) {
    const item = state.items[state.index];
    if (!item) return;
    alertText("", "review-alert"); // a new action: the last refusal has been seen
    if (decision === "skip") {
      state.index = (state.index + 1) % state.items.length;
      say("Skipped " + (item.record.title || item.id) + ".");
      select();
      return;
    }
    if (decision === "edit" && !record) { openEditor(item); return; }
    const title = item.record.title || item.id;
    const pkg = state.pkg;
    const body = record ? { decision, record } : { decision };
    if (Number.isInteger(item.seq)) body.seq = item.seq; // the version shown: one changed since is refused (409)
    if (decision !== "edit") {
      state.items.splice(state.index, 1);
      renderQueue();
    }
    state.inFlight += 1;
    progress();
    sending = sending.then(async () => {
      const res = await api("POST", "v1/packages/" + encodeURIComponent(pkg) + "/review/" + encodeURIComponent(item.id), body);
      state.inFlight -= 1;
      if (pkg !== state.pkg) return;
      if (!res.ok) {
        alertText(explain(res.status, res.body, "Decision on " + title), decision === "edit" ? "edit-error" : "review-alert");
        if (decision !== "edit") { state.items.unshift(item); state.index = 0; renderQueue(); } else { progress(); }
        return;
      }
      if (decision === "edit") {
        const at = state.items.indexOf(item);
        if (at >= 0) state.items.splice(at, 1);
        closeEditor();
        renderQueue();
        $("queue").focus();
      }
      state.decided += 1;
      say((decision === "approve" ? "Approved " : decision === "reject" ? "Rejected " : "Edited and approved ") + title + ".");
      if (!state.inFlight) { loadHealth(false); loadPackages(true); } // the decisions are new log entries
      if (!state.items.length && state.cursor && !state.inFlight) { await loadQueue(); return; }
      progress();
    });
  }

  function openEditor(item) {
    $("edit-form").hidden = false;
    $("edit-title").value = item.record.title || "";
    $("edit-summary").value = item.record.summary || "";
    $("edit-title").focus();
  }

  function closeEditor() { $("edit-form").hidden = true; alertText("", "edit-error"); }

  $("edit-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const item = state.items[state.index];
    if (!item) return;
    const record = Object.assign({}, item.record, { title: $("edit-title").value, summary: $("edit-summary").value });
    decide("edit", record);
  });
  $("edit-cancel").addEventListener("click", () => { closeEditor(); $("queue").focus(); });
  $("edit-form").addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") { ev.preventDefault(); closeEditor(); $("queue").focus(); }
  });

  for (const b of $("review-actions").querySelectorAll("button")) {
    b.addEventListener("click", () => decide(b.dataset.decision));
  }

  const KEYS = { a: "approve", r: "reject", e: "edit", s: "skip" };
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !state.pkg || $("app").hidden) return;
    const tag = (ev.target && ev.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return; // typing is not a decision
    const k = ev.key;
    if (k === "j" || k === "k") {
      ev.preventDefault();
      const n = state.items.length;
      if (n) state.index = (state.index + (k === "j" ? 1 : n - 1)) % n;
      select();
    } else if (KEYS[k]) {
      ev.preventDefault();
      decide(KEYS[k]);
    }
  });

  // --- search and forget
  $("search-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const q = $("q").value.trim();
    if (!q || !state.pkg) return;
    const list = $("results");
    list.replaceChildren();
    const res = await api("GET", "v1/packages/" + encodeURIComponent(state.pkg) + "/memories/search?k=20&trust=" + encodeURIComponent($("trust").value) + "&q=" + encodeURIComponent(q));
    if (!res.ok) { alertText(explain(res.status, res.body, "Search")); return; }
    alertText("");
    for (const hit of res.body.results) {
      const r = hit.record || {};
      const li = document.createElement("li");
      li.append(el("span", r.title || hit.id, "item-title"));
      li.append(el("span", r.summary || "", "item-summary"));
      li.append(el("span", hit.trust + " · score " + Number(hit.score).toFixed(3) + " · " + hit.id, "item-meta"));
      const forget = el("button", "Forget");
      forget.type = "button";
      forget.setAttribute("aria-label", "Forget " + (r.title || hit.id));
      forget.addEventListener("click", () => forgetMemory(hit.id, r.title || hit.id, li));
      li.append(forget);
      list.append(li);
    }
    say(res.body.results.length + " result(s) for " + q + ".");
  });

  async function forgetMemory(id, title, li) {
    if (!window.confirm("Forget " + title + "? It is erased everywhere and refused if it comes back. This cannot be undone.")) return;
    const res = await api("DELETE", "v1/packages/" + encodeURIComponent(state.pkg) + "/memories/" + encodeURIComponent(id));
    if (!res.ok) { alertText(explain(res.status, res.body, "Forget " + title)); return; }
    alertText("");
    li.remove();
    await loadHealth(false); // the forget is a new log entry
    say("Forgot " + title + (res.body.alsoForgotten && res.body.alsoForgotten.length ? " and " + res.body.alsoForgotten.length + " copy(ies)." : "."));
  }

  probeLocal();
  start();
})();
