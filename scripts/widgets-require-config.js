// Copied into book/static_js/ by scripts/build_book.sh; jupyter_book.yml
// (nb_ipywidgets_js) loads it after require.js and before embed-amd.js on every
// page that shows widgets.
(function () {
  "use strict";

  // 1. embed-amd.js (@jupyter-widgets/html-manager 1.x) loads its icon fonts
  //    relative to the URL of its AMD module "@jupyter-widgets/html-manager/dist/
  //    libembed-amd". Map "@jupyter-widgets" into _static/, where build_book.sh
  //    copies the fonts.
  var root = document.documentElement.dataset.content_root || "./";
  require.config({ paths: { "@jupyter-widgets": root + "_static/jupyter-widgets" } });

  // 2. The widgets typeset their labels with the MathJax 2 API
  //    (MathJax.Hub.Queue(["Typeset", MathJax.Hub, element])); the book serves
  //    MathJax 3, which has no Hub ("Cannot read properties of undefined (reading
  //    'Queue')"). Give every object that becomes window.MathJax a small Hub that
  //    forwards to MathJax 3's typesetPromise.
  function typesetLater(element, triesLeft) {
    var MJ = window.MathJax;
    if (MJ && MJ.startup && MJ.startup.promise && MJ.typesetPromise) {
      // myst-nb marks notebook sections `mathjax_ignore` (only its .math spans
      // are typeset); opt the widget's element back in.
      if (element && element.classList) element.classList.add("mathjax_process");
      MJ.startup.promise
        .then(function () { return MJ.typesetPromise(element ? [element] : undefined); })
        .catch(function (err) { console.warn("MathJax typeset of a widget failed:", err); });
    } else if (triesLeft > 0) {
      setTimeout(function () { typesetLater(element, triesLeft - 1); }, 100);
    }
  }

  var hub = {
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var job = arguments[i];
        if (Array.isArray(job) && job[0] === "Typeset") typesetLater(job[2], 100);
      }
    },
  };

  function addHub(value) {
    if (value && typeof value === "object" && !value.Hub) {
      try {
        // Not enumerable: MathJax 3 copies the keys of its configuration object.
        Object.defineProperty(value, "Hub", { value: hub, configurable: true });
      } catch (err) { /* frozen object: leave it */ }
    }
    return value;
  }

  var current = addHub(window.MathJax);
  try {
    Object.defineProperty(window, "MathJax", {
      configurable: true,
      enumerable: true,
      get: function () { return current; },
      set: function (value) { current = addHub(value); },
    });
  } catch (err) { /* already non-configurable: nothing to do */ }
})();
