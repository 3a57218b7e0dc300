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
