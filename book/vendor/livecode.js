/* Live code: run a chapter page's cells on a Jupyter server on this machine
 * (the workshop's JupyterLab, started by scripts/workshop.sh), with Thebe.
 *
 * Everything loads from the book itself: thebe 0.9.3 and require.js (copied
 * from npm into <book>/thebe/ by scripts/fetch_vendor_js.sh) and the book's
 * MathJax 3 (through _static/mathjax2-adapter.js). Thebe fetches require.js
 * from a CDN before it shows any widget; the fetch is answered from the book.
 * The server must be on this machine (127.0.0.1 or localhost): no request
 * leaves it.
 *
 * Where the server is: workshop.sh prints a book URL ending in
 * "#jupyter=http://127.0.0.1:8888&token=..."; the page remembers it (local
 * storage) for the other chapters. The button shows only then: on the public
 * book no server can answer, so there is none. (Should the remembered server
 * be gone, the button asks for the JupyterLab URL with its token.)
 */
(function () {
  "use strict";
  var KEY = "distbook-live-server";
  var REQUIRE_CDN = "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js";
  var me = document.currentScript && document.currentScript.src;
  var root = me ? me.replace(/_static\/livecode\.js(\?.*)?$/, "") : "../";
  var started = false;

  function parseServer(text) {
    var url;
    try { url = new URL(String(text).trim()); } catch (e) { return null; }
    if (!/^https?:$/.test(url.protocol)) return null;
    if (["127.0.0.1", "localhost", "[::1]"].indexOf(url.hostname) < 0) return null;
    var token = url.searchParams.get("token") || "";
    return { baseUrl: url.origin, token: token };
  }

  function fromHash() {
    var m = /(?:^#|&)jupyter=([^&]+)(?:&token=([^&]*))?/.exec(location.hash);
    if (!m) return null;
    var server = parseServer(decodeURIComponent(m[1]));
    if (server && m[2] !== undefined) server.token = decodeURIComponent(m[2]);
    return server;
  }

  function remembered() {
    try { return JSON.parse(localStorage.getItem(KEY) || "null"); } catch (e) { return null; }
  }

  function remember(server) {
    try { localStorage.setItem(KEY, JSON.stringify(server)); } catch (e) { /* private mode */ }
  }

  function status(text, kind) {
    var el = document.getElementById("distbook-live-status");
    if (!el) return;
    el.textContent = text;
    el.className = "distbook-live-status " + (kind || "");
  }

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  // Thebe asks the CDN for require.js: answer from the book instead.
  function shimFetch() {
    if (window.fetch.distbookShim) return;
    var real = window.fetch.bind(window);
    var shim = function (input, init) {
      var url = typeof input === "string" ? input : (input && input.url) || "";
      if (url === REQUIRE_CDN) return real(root + "thebe/require.js", init);
      return real(input, init);
    };
    shim.distbookShim = true;
    window.fetch = shim;
  }

  // Thebe pairs the n-th source with the n-th output placeholder: give every
  // code cell exactly one of each, in page order.
  function markCells() {
    document.querySelectorAll("div.cell").forEach(function (cell) {
      var pre = cell.querySelector("div.cell_input pre");
      if (!pre) return;
      pre.setAttribute("data-executable", "true");
      var out = cell.querySelector("div.cell_output");
      if (!out) {
        out = document.createElement("div");
        out.className = "cell_output docutils container";
        cell.appendChild(out);
      }
      out.setAttribute("data-output", "true");
    });
  }

  function start(server) {
    if (started) return;
    started = true;
    status("connecting to " + server.baseUrl + " ...", "busy");
    shimFetch();
    var css = document.createElement("link");
    css.rel = "stylesheet";
    css.href = root + "thebe/thebe.css";
    document.head.appendChild(css);
    loadScript(root + "thebe/index.js")
      .then(function () {
        return window.thebe.bootstrap({
          useBinder: false,
          useJupyterLite: false,
          requestKernel: true,
          serverSettings: { baseUrl: server.baseUrl, token: server.token, appendToken: true },
          kernelOptions: { name: "python3", path: "." },
          selector: "[data-executable]",
          outputSelector: "[data-output]",
          mathjaxUrl: root + "_static/mathjax2-adapter.js",
          mathjaxConfig: "TeX-AMS_CHTML-full,Safe",
          mountStatusWidget: false,
          mountActivateWidget: false,
          preRenderHook: markCells,
        });
      })
      .then(function (live) {
        if (!live || !live.session) throw new Error("the server started no kernel");
        closeWithThePage(server, live.session);
        document.documentElement.classList.add("distbook-live");
        status("live: cells run on " + server.baseUrl + " (edit a cell, then 'run')", "ok");
      })
      .catch(function (err) {
        started = false;
        status("live code could not connect to " + server.baseUrl + ": " + (err && err.message || err) +
               ". Is scripts/workshop.sh running, and is the token right?", "error");
      });
  }

  // The kernel this page started ends with the page (tab closed, reload,
  // another page): a DELETE that the browser still sends while the page goes
  // (keepalive). workshop.sh also culls kernels left with no connection.
  function closeWithThePage(server, session) {
    var id = session.connection && session.connection.id;  // thebe's ThebeSession: the server's session
    if (!id) return;
    window.addEventListener("pagehide", function () {
      // deleting the session shuts down its kernel
      var url = server.baseUrl + "/api/sessions/" + encodeURIComponent(id) +
                (server.token ? "?token=" + encodeURIComponent(server.token) : "");
      try { fetch(url, { method: "DELETE", keepalive: true, mode: "cors" }); } catch (e) { /* the page is going */ }
    });
  }

  function onClick() {
    var server = fromHash() || remembered();
    if (!server) {
      var text = window.prompt(
        "Paste the JupyterLab URL that scripts/workshop.sh printed " +
        "(http://127.0.0.1:8888/lab?token=...):");
      if (text === null) return;
      server = parseServer(text);
      if (!server) {
        status("live code needs a Jupyter server on this machine: a URL starting " +
               "http://127.0.0.1: or http://localhost:", "error");
        return;
      }
    }
    remember(server);
    start(server);
  }

  function addButton() {
    // Remembered first: the address workshop.sh prints lands on the intro,
    // which has no code, and the chapters a reader clicks through to need it.
    var hashed = fromHash();
    if (hashed) remember(hashed);
    if (!document.querySelector("div.cell div.cell_input")) return;  // nothing to run here
    // Only where a kernel can answer: a page opened from the address
    // workshop.sh prints, or a later page of the same book (remembered in this
    // site's local storage). A reader of the public book never sees it.
    // Chapters only: the guide and the other book pages run nothing a room needs.
    if (!/\/notebooks\/[^\/]+\.html$/.test(location.pathname)) return;
    if (hashed) { show(); return; }
    // A remembered server shows the button only while it answers: the same address may later serve the
    // book from a plain file server, with no JupyterLab behind it (issue 40). The request goes only to the
    // remembered local address (parseServer allows no other), and an opaque answer is enough.
    var server = remembered();
    if (!server || !parseServer(server.baseUrl)) return;
    fetch(server.baseUrl + "/api", { mode: "no-cors", cache: "no-store" }).then(show, function () {});
  }

  function show() {
    if (document.getElementById("distbook-live-button")) return;
    var bar = document.createElement("div");
    bar.className = "distbook-live-bar";
    var button = document.createElement("button");
    button.type = "button";
    button.id = "distbook-live-button";
    button.className = "btn distbook-live-button";
    button.textContent = "Live code";
    button.title = "Run this page's code on your own JupyterLab (scripts/workshop.sh)";
    button.addEventListener("click", onClick);
    var note = document.createElement("span");
    note.id = "distbook-live-status";
    note.className = "distbook-live-status";
    note.textContent = "Cells run on a local JupyterLab (scripts/workshop.sh).";
    bar.appendChild(button);
    bar.appendChild(note);
    var article = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
    article.insertBefore(bar, article.firstChild);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", addButton);
  else addButton();
})();
