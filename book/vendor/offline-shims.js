// Loaded before the widget manager (embed.js) and before the theme's deferred
// Font Awesome, so both find what they expect.

// 1. With its default SVG replacement, Font Awesome swaps the <i> icons inside
//    ipywidgets' Play button for <svg> elements the widget code no longer
//    finds, and the button stops working. "nest" keeps the <i>.
window.FontAwesomeConfig = Object.assign(window.FontAwesomeConfig || {}, { autoReplaceSvg: "nest" });

// 2. The widget manager typesets labels with MathJax 2's MathJax.Hub.Queue;
//    the book ships MathJax 3, which has typesetPromise instead.
(function () {
  function install() {
    var mj = window.MathJax;
    if (!mj || mj.Hub) return;
    mj.Hub = {
      Queue: function (job) {
        var node = Array.isArray(job) ? job[2] : undefined;
        var m = window.MathJax;
        if (m && typeof m.typesetPromise === "function") {
          m.typesetPromise(node ? [node] : undefined).catch(function () {});
        }
      },
    };
  }
  window.MathJax = window.MathJax || {};
  install();
  document.addEventListener("DOMContentLoaded", install);
})();
