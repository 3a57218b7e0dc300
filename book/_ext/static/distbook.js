// Search result snippets show the chapter's prose: not the Colab set-up cell,
// not code, and not raw LaTeX (the page text a snippet is cut from is the
// HTML before MathJax typesets it). Loaded on every page by offline_book.py.
(function () {
  var GREEK = { alpha: "α", beta: "β", gamma: "γ", mu: "μ", times: "×", cdot: "·", le: "≤", ge: "≥",
                leq: "≤", geq: "≥", approx: "≈", ne: "≠", to: "→", infty: "∞", log: "log", ln: "ln" };
  function plainMath(tex) {
    return tex
      .replace(/^\\[\(\[]|\\[\)\]]$/g, "")
      .replace(/\\(?:mathrm|text|mathbf|operatorname)\{([^{}]*)\}/g, "$1")
      .replace(/\\frac\{([^{}]*)\}\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\([a-zA-Z]+)/g, function (_, name) { return GREEK[name] !== undefined ? GREEK[name] : ""; })
      .replace(/\\[,;:! ]/g, " ")
      .replace(/[{}]/g, "")
      .replace(/\s+/g, " ")
      .trim();
  }
  function install() {
    // searchtools.js declares "const Search": a global binding, not a window property
    var S = typeof Search !== "undefined" ? Search : window.Search;
    if (!S || !S.htmlToText || S.htmlToText.distbook) return;
    var original = S.htmlToText;
    var patched = function (htmlString, anchor) {
      var doc = new DOMParser().parseFromString(htmlString, "text/html");
      doc.querySelectorAll(".tag_colab-setup, .cell_input, .cell_output, script, style, .headerlink, " +
                           "nav, .bd-toc, .bd-sidebar-secondary, .onlyprint, .bd-header-article")
        .forEach(function (el) { el.remove(); });
      doc.querySelectorAll(".math").forEach(function (el) { el.textContent = plainMath(el.textContent); });
      return original(doc.documentElement.outerHTML, anchor);
    };
    patched.distbook = true;
    S.htmlToText = patched;
  }
  install();
  document.addEventListener("DOMContentLoaded", install);
})();

// The phone menu. pydata-sphinx-theme 0.17.1 (the release sphinx-book-theme
// 1.3.0 requires) binds its sidebar handlers to the first .primary-toggle and
// .secondary-toggle of the page, which under sphinx-book-theme is a hidden
// duplicate in the navbar (pydata-sphinx-theme#2451, sphinx-book-theme#988):
// the buttons a reader sees did nothing. A click on a visible one is passed
// to the first, which opens the sidebar on a phone and folds it on a desktop.
(function () {
  function forward() {
    ["primary", "secondary"].forEach(function (kind) {
      var buttons = document.querySelectorAll("." + kind + "-toggle");
      var bound = buttons[0];
      Array.prototype.slice.call(buttons, 1).forEach(function (b) {
        if (b.dataset.distbookForward) return;
        b.dataset.distbookForward = "1";
        b.addEventListener("click", function (e) { e.preventDefault(); e.stopPropagation(); bound.click(); });
      });
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", forward);
  else forward();
})();

// Boxes that scroll sideways (a printed table, a wide table, a display
// equation on a phone): marked, so distbook.css fades the edge with more to
// see, and kept up to date as the reader scrolls or turns the phone.
(function () {
  var SELECTOR = ".cell_output .output, .cell_output pre, .pst-scrollable-table-container, div.math, " +
                 "mjx-container[display='true']";
  function update(el) {
    var more = el.scrollWidth > el.clientWidth + 1;
    el.classList.toggle("distbook-scrolls", more);
    el.classList.toggle("distbook-at-start", !more || el.scrollLeft <= 1);
    el.classList.toggle("distbook-at-end", !more || el.scrollLeft + el.clientWidth >= el.scrollWidth - 1);
  }
  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      if (!el.dataset.distbookScroll) {
        el.dataset.distbookScroll = "1";
        el.addEventListener("scroll", function () { update(el); }, { passive: true });
      }
      update(el);
    });
  }
  window.addEventListener("load", function () {
    mark();
    setTimeout(mark, 1500);  // after MathJax has typeset the equations
  });
  window.addEventListener("resize", mark);
})();

// The keyboard (issue 40). A skip link after the theme's "Skip to main
// content", on pages with a widget, takes focus to the first widget's first
// control that works here (158 Tab presses led to chapter 11's otherwise). A
// group of toggle buttons is one Tab stop, the chosen option, and the arrow
// keys choose another, as a radio group does (WAI-ARIA's pattern); before,
// every option was a Tab stop and arrows did nothing. The widgets are drawn
// by the widget manager after the page loads, so both wait for them.
(function () {
  var LIVE = "input:not([disabled]), select:not([disabled]), button:not([disabled]), [tabindex='0']";

  function usable(el) {
    return !el.closest(".distlib-fixed") && el.offsetParent !== null && el.tabIndex >= 0;
  }

  function firstControl() {
    var widget = document.querySelector(".distlib-widget");
    if (!widget) return null;
    var all = widget.querySelectorAll(LIVE);
    for (var i = 0; i < all.length; i++) if (usable(all[i])) return all[i];
    return null;
  }

  function addSkip() {
    var widget = document.querySelector(".distlib-widget");
    if (!widget || document.getElementById("distbook-skip-widget")) return;
    if (!widget.id) widget.id = "distbook-first-widget";
    var a = document.createElement("a");
    a.id = "distbook-skip-widget";
    a.className = "distbook-skip";
    a.href = "#" + widget.id;
    a.textContent = "Skip to the interactive figure";
    a.addEventListener("click", function (e) {
      var control = firstControl();
      if (!control) return;
      e.preventDefault();
      control.focus();
      control.scrollIntoView({ block: "center" });
    });
    var theirs = document.querySelector("#pst-skip-link, .skip-link");
    if (theirs && theirs.parentNode) theirs.parentNode.insertBefore(a, theirs.nextSibling);
    else document.body.insertBefore(a, document.body.firstChild);
  }

  function buttons(group) {
    return Array.prototype.filter.call(group.querySelectorAll("button"), function (b) { return !b.disabled; });
  }

  function rove(group) {
    var all = buttons(group);
    if (!all.length || group.closest(".distlib-fixed")) return;
    var chosen = all.filter(function (b) { return b.classList.contains("mod-active"); })[0] || all[0];
    group.setAttribute("role", "radiogroup");
    all.forEach(function (b) {
      b.setAttribute("role", "radio");
      b.setAttribute("aria-checked", b === chosen ? "true" : "false");
      b.tabIndex = b === chosen ? 0 : -1;
    });
  }

  function roveAll() {
    document.querySelectorAll(".distlib-widget .widget-toggle-buttons").forEach(rove);
  }

  document.addEventListener("keydown", function (e) {
    var b = e.target;
    if (!b || b.tagName !== "BUTTON") return;
    var group = b.closest(".distlib-widget .widget-toggle-buttons");
    if (!group) return;
    var step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
    if (!step) return;
    var all = buttons(group);
    var next = all[(all.indexOf(b) + step + all.length) % all.length];
    e.preventDefault();
    next.click();  // the click listener below moves the Tab stop
    next.focus();
  });
  document.addEventListener("click", function (e) {
    var group = e.target && e.target.closest && e.target.closest(".distlib-widget .widget-toggle-buttons");
    if (group) setTimeout(function () { rove(group); }, 0);
  });

  var pending = false;
  function refresh() {
    if (pending) return;
    pending = true;
    setTimeout(function () { pending = false; addSkip(); roveAll(); }, 100);
  }
  function start() {
    refresh();
    new MutationObserver(refresh).observe(document.body, { childList: true, subtree: true });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

// The frames a control shows next are fetched before it moves (issue 40). A
// widget's Stack puts only its chosen frame in the page, so a frame used to be
// fetched when a control first chose it, and the reader saw the old picture
// (or none) until it came. Once the page has loaded, and whenever a widget is
// on screen, has the focus or the pointer, or shows a new frame, the frames
// one step away along each of its live controls (the Stack beside the shown
// one at every level of its grid) are fetched and decoded, for the viewport's
// size (the <source>'s media), and held. The first view stays as it was: no
// frame is fetched before the load event, nor for a widget off screen.
// widget.dataset.distbookNext lists what was fetched for the tests.
(function () {
  var graph = null;
  var held = {};  // url -> Image: decoded, and kept so the browser keeps it in memory
  var MAX_PER_WIDGET = 24;

  function ref(s) { return typeof s === "string" ? s.replace(/^IPY_MODEL_/, "") : null; }

  function build() {
    var models = {}, parents = {}, pictures = {}, bySrc = {}, control = {};
    document.querySelectorAll('script[type="application/vnd.jupyter.widget-state+json"]').forEach(function (s) {
      try {
        var state = JSON.parse(s.textContent).state || {};
        Object.keys(state).forEach(function (id) { models[id] = state[id]; });
      } catch (e) { /* a state the widget manager reads too: it reports its own errors */ }
    });
    Object.keys(models).forEach(function (id) {
      var m = models[id], st = m.state || {};
      (st.children || []).forEach(function (c, i) {
        var k = ref(c);
        (parents[k] = parents[k] || []).push({ p: id, i: i });
      });
      if (m.model_name === "LinkModel" && st.target && st.target[1] === "selected_index") {
        control[ref(st.target[0])] = ref(st.source[0]);
      }
      if (m.model_name === "HTMLModel" && typeof st.value === "string" && st.value.indexOf("distlib-frame") >= 0) {
        var v = st.value, src = /<img[^>]* src="([^"]+)"/.exec(v), set = /srcset="([^"]+)"/.exec(v),
            media = /media="([^"]+)"/.exec(v);
        if (!src) return;
        pictures[id] = { wide: src[1], narrow: set ? set[1] : src[1], media: media ? media[1] : null };
        (bySrc[src[1]] = bySrc[src[1]] || []).push(id);
      }
    });
    return { models: models, parents: parents, pictures: pictures, bySrc: bySrc, control: control };
  }

  // every way down from a top widget to model id: the Stacks passed and the child taken in each
  function paths(id, seen) {
    var ps = graph.parents[id] || [];
    if (!ps.length) return [[]];
    var out = [];
    ps.forEach(function (e) {
      if (out.length > 64 || seen[e.p]) return;
      seen[e.p] = true;
      paths(e.p, seen).forEach(function (path) {
        out.push(graph.models[e.p].model_name === "StackModel" ? path.concat([{ s: e.p, i: e.i }]) : path);
      });
      seen[e.p] = false;
    });
    return out;
  }

  // the frames model id shows when its Stacks take the same children as ``path`` below ``depth``
  function framesUnder(id, path, depth) {
    if (graph.pictures[id]) return [id];
    var m = graph.models[id];
    if (!m) return [];
    var kids = (m.state && m.state.children) || [];
    if (m.model_name === "StackModel") {
      if (!kids.length) return [];
      var here = path[depth], i = m.state.selected_index || 0;
      // a Stack under the same control as the shown one at this depth takes its child; another (a control
      // drawn inside each branch) keeps its own
      if (here && graph.control[here.s] && graph.control[here.s] === graph.control[id]) i = here.i;
      return framesUnder(ref(kids[Math.min(i, kids.length - 1)]), path, depth + 1);
    }
    var out = [];
    kids.forEach(function (c) { out = out.concat(framesUnder(ref(c), path, depth)); });
    return out;
  }

  function nextFrames(path) {
    var out = [];
    path.forEach(function (step, d) {
      var kids = graph.models[step.s].state.children, n = kids.length;
      // a row of buttons: the arrow keys go round (last to first), as above
      var ctl = graph.models[graph.control[step.s]], round = ctl && ctl.model_name === "ToggleButtonsModel";
      [step.i - 1, step.i + 1].forEach(function (j) {
        if (round) j = (j + n) % n;
        if (j >= 0 && j < n && j !== step.i) out = out.concat(framesUnder(ref(kids[j]), path, d + 1));
      });
    });
    return out;
  }

  function url(pic) {
    return pic.media && window.matchMedia(pic.media).matches ? pic.narrow : pic.wide;
  }

  function fetchFrame(u) {
    if (held[u]) return;
    var im = new Image();
    im.decoding = "async";
    im.src = u;
    held[u] = im;
    if (im.decode) im.decode().catch(function () {});
  }

  function prepare(widget) {
    if (!graph) graph = build();
    var shown = Array.prototype.filter.call(widget.querySelectorAll("img.distlib-frame"),
                                            function (img) { return img.offsetParent !== null; });
    var want = [], seen = {};
    shown.forEach(function (img) { seen[img.getAttribute("src")] = seen[img.currentSrc] = true; });
    shown.forEach(function (img) {
      if (img.loading === "lazy") img.loading = "eager";  // on screen now: no wait for the lazy loader
      (graph.bySrc[img.getAttribute("src")] || []).forEach(function (pid) {
        paths(pid, {}).forEach(function (path) {
          nextFrames(path).forEach(function (f) {
            var u = url(graph.pictures[f]);
            if (!seen[u] && !seen[new URL(u, document.baseURI).href] && want.length < MAX_PER_WIDGET) {
              seen[u] = true;
              want.push(u);
            }
          });
        });
      });
    });
    want.forEach(fetchFrame);
    var before = widget.dataset.distbookNext ? widget.dataset.distbookNext.split(" ") : [];
    widget.dataset.distbookNext = before.concat(want.filter(function (u) { return before.indexOf(u) < 0; })).join(" ");
  }

  var queued = [], timer = null;
  function schedule(widget) {
    if (queued.indexOf(widget) < 0) queued.push(widget);
    if (timer !== null) return;
    var go = function () {
      timer = null;
      var todo = queued;
      queued = [];
      todo.forEach(prepare);
    };
    var later = function () {
      timer = window.requestIdleCallback ? window.requestIdleCallback(go, { timeout: 200 }) : setTimeout(go, 50);
    };
    timer = -1;
    if (document.readyState === "complete") later();
    else window.addEventListener("load", later, { once: true });
  }

  var onScreen = typeof IntersectionObserver === "undefined" ? null : new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      e.target.dataset.distbookOnScreen = e.isIntersecting ? "1" : "";
      if (e.isIntersecting) schedule(e.target);
    });
  });

  function widgetOf(e) { return e.target && e.target.closest ? e.target.closest(".distlib-widget") : null; }
  ["focusin", "pointerover"].forEach(function (type) {
    document.addEventListener(type, function (e) {
      var w = widgetOf(e);
      if (w) schedule(w);
    }, { passive: true });
  });

  var look = null;
  function watch() {
    look = null;
    document.querySelectorAll(".distlib-widget").forEach(function (w) {
      if (onScreen && !w.dataset.distbookWatched) {
        w.dataset.distbookWatched = "1";
        onScreen.observe(w);
      }
      // a control moved: the widget shows a new frame, whose neighbours are next
      var src = Array.prototype.map.call(w.querySelectorAll("img.distlib-frame"), function (i) {
        return i.offsetParent !== null ? i.getAttribute("src") : "";
      }).join(" ");
      if (src !== (w.dataset.distbookShown || "")) {
        w.dataset.distbookShown = src;
        if (w.dataset.distbookOnScreen || w.contains(document.activeElement)) schedule(w);
      }
    });
  }
  function start() {
    new MutationObserver(function () { if (look === null) look = setTimeout(watch, 30); })
      .observe(document.body, { childList: true, subtree: true });
    watch();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
