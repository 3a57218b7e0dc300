/* Thebe (0.9) typesets LaTeX outputs through the MathJax 2 API and would load
 * MathJax 2 from a CDN. The book already has MathJax 3 (served from _static),
 * so this file, given to thebe as its `mathjaxUrl`, answers the few MathJax 2
 * calls thebe makes with MathJax 3's typesetter. No request leaves the page. */
(function () {
  "use strict";
  var mj = window.MathJax = window.MathJax || {};
  function typeset(el) {
    if (typeof mj.typesetPromise === "function") {
      mj.typesetPromise(el ? [el] : undefined).catch(function (e) { console.warn("MathJax:", e); });
    }
  }
  // Something may already have put a partial Hub on MathJax: fill in what
  // thebe calls, keeping whatever is there.
  var hub = mj.Hub = mj.Hub || {};
  var calls = {
    Config: function () {},
    Configured: function () {},
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var cmd = arguments[i];
        if (Array.isArray(cmd) && cmd[0] === "Typeset") typeset(cmd[2]);
      }
    },
  };
  Object.keys(calls).forEach(function (name) {
    if (typeof hub[name] !== "function") hub[name] = calls[name];
  });
  hub.Register = hub.Register || {};
  if (typeof hub.Register.StartupHook !== "function") {
    hub.Register.StartupHook = function (name, fn) { if (typeof fn === "function") fn(); };
  }
  hub.config = hub.config || {};
  mj.Ajax = mj.Ajax || {};
  mj.InputJax = mj.InputJax || { TeX: { resetEquationNumbers: function () {} } };
})();
