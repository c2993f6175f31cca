// Continuation slides: a slide taller than the deck's canvas (Reveal's `height`) is cut
// into vertical sub-slides, each one screen tall. Runs in the deck once Reveal is ready,
// after MathJax, the widgets and the images are drawn, because only then are the
// heights known. Cuts fall between elements: Markdown blocks (paragraph, list item,
// table, admonition paragraph), a code cell's input and each of its outputs; a heading
// moves with what follows it. A code listing or text output longer than a slide is cut
// between lines. Anything else taller than a slide (a figure, a widget) is scaled down
// to fit, and says so in `data-fit-zoom`.
//
// fitSlides(Reveal) returns a promise of the number of slides added; the template keeps
// it in window.slidesFitted (the tests wait for it).
(function () {
  "use strict";

  // Elements a cut may go into; every other element is kept whole.
  const CONTAINERS = [".jp-Cell", ".jp-Cell-inputWrapper", ".jp-Cell-outputWrapper",
    ".jp-InputArea", ".jp-OutputArea", ".jp-RenderedMarkdown", ".admonition",
    ".jp-RenderedMarkdown > ul", ".jp-RenderedMarkdown > ol",
    ".admonition > ul", ".admonition > ol"].join(", ");
  // Elements with no height of their own (prompts stretch to their cell's height).
  const IGNORED = ".jp-Collapser, .jp-InputPrompt, .jp-OutputPrompt, script, style, aside.notes";
  // Listings that may be cut between lines: code, and text outputs (print, repr).
  const LISTINGS = ".jp-InputArea-editor pre, .jp-RenderedText pre";
  const PLACEHOLDERS = ".jp-Collapser, .jp-InputPrompt, .jp-OutputPrompt";
  const MIN_LINES = 4;    // a listing cut leaves at least this many lines on each slide

  const LOADED_HASH = location.hash;    // before Reveal reads it and moves to a slide that exists
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  // Wait until MathJax has typeset, every widget is drawn and the slides' heights stop
  // changing (widgets lay themselves out again once their slide is displayed).
  async function settled(timeoutMs) {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      await MathJax.startup.promise;
    }
    const deadline = Date.now() + timeoutMs;
    const pending = () => [...document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"]')].filter((tag) => {
      const area = tag.previousElementSibling;
      return !(area && area.classList.contains("widget-subarea") && area.childElementCount);
    }).length;
    while (pending() && Date.now() < deadline) await sleep(100);
    await Promise.all([...document.images].map((img) => img.decode().catch(() => null)));
    const heights = () => Reveal.getSlides().map((s) => s.scrollHeight).join();
    let last = null;
    while (Date.now() < deadline) {
      await sleep(300);
      const now = heights();
      if (now === last) break;
      last = now;
    }
  }

  function leaves(node, out = []) {
    for (const child of node.children) {
      if (child.matches(IGNORED) || child.offsetParent === null) continue;
      if (child.matches(CONTAINERS) && child.childElementCount) leaves(child, out);
      else out.push(child);
    }
    return out;
  }

  function firstContent(parent) {
    for (const n of parent.childNodes) {
      if (n.nodeType === Node.TEXT_NODE ? n.data.trim() : !n.matches(IGNORED)) return n;
    }
    return null;
  }

  // Move `node`, everything after it in `section`, and copies of its ancestors into a
  // new section; returns the new section.
  function splitBefore(node, section) {
    // Leave no empty shell behind: cut before the outermost element `node` starts.
    while (node.parentNode !== section && firstContent(node.parentNode) === node) {
      node = node.parentNode;
    }
    let moving = [];
    for (let n = node; n; n = n.nextSibling) moving.push(n);
    let child = node;
    for (let parent = node.parentNode; parent !== section; parent = parent.parentNode) {
      const shell = parent.cloneNode(false);
      shell.removeAttribute("id");
      // Empty prompts and collapsers keep the continued cell where it was on the slide.
      for (const n of parent.children) {
        if (n === child || moving.includes(n)) break;
        if (n.matches(PLACEHOLDERS)) shell.appendChild(n.cloneNode(false));
      }
      moving.forEach((n) => shell.appendChild(n));
      child = parent;
      moving = [shell];
      for (let n = parent.nextSibling; n; n = n.nextSibling) moving.push(n);
    }
    const rest = document.createElement("section");
    for (const name of section.getAttributeNames()) {
      if (name.startsWith("data-") && name !== "data-fit-continued") {
        rest.setAttribute(name, section.getAttribute(name));
      }
    }
    rest.setAttribute("data-fit-continued", "");
    moving.forEach((n) => rest.appendChild(n));
    return rest;
  }

  // The text node and offset just after the newline that ends line `k` of `pre`.
  function lineStart(pre, k) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      let at = -1;
      while ((at = text.data.indexOf("\n", at + 1)) !== -1) {
        if (--k === 0) return [text, at + 1];
      }
    }
    return null;
  }

  // Cut the listing in `leaf` after the lines that fit above `bottom`; null if it cannot.
  function splitLines(leaf, section, bottom, scale) {
    const pre = leaf.querySelector(LISTINGS);
    if (!pre || pre.closest(".widget-subarea")) return null;
    const box = pre.getBoundingClientRect();
    const lines = pre.textContent.replace(/\n$/, "").split("\n").length;
    const lineHeight = box.height / scale / lines;
    const fit = Math.floor((bottom - box.top / scale) / lineHeight) - 1;
    if (fit < MIN_LINES || lines - fit < 1) return null;
    const start = lineStart(pre, fit);
    if (!start) return null;
    const [text, offset] = start;
    return splitBefore(text.splitText(offset), section);
  }

  // Cut `section` until every piece fits; returns how many pieces were added.
  function fit(section, height, scale) {
    let added = 0;
    for (let guard = 0; guard < 100; guard++) {
      const top = section.getBoundingClientRect().top / scale;
      const items = leaves(section);
      if (!items.length) return added;
      // Room for what closes after the last element (an admonition's or a cell's padding).
      const tail = section.scrollHeight -
        (items[items.length - 1].getBoundingClientRect().bottom / scale - top);
      const bottom = top + height - Math.max(0, tail);
      const k = items.findIndex((el) => el.getBoundingClientRect().bottom / scale > bottom + 0.5);
      let rest = null;
      if (k !== -1) {
        let at = k;
        while (at > 0 && /^H[1-6]$/.test(items[at - 1].tagName)) at--;
        if (at > 0) rest = splitBefore(items[at], section);
        else rest = splitLines(items[k], section, bottom, scale);
        if (!rest) {
          if (items[k].hasAttribute("data-fit-zoom")) return added;
          // One element taller than the slide on its own: scale it to the room left.
          const box = items[k].getBoundingClientRect();
          const room = bottom - box.top / scale;
          // (A transform, not CSS zoom: zoom gives a widget more width, and it lays out anew.)
          const tall = box.height / scale;
          const zoom = Math.max(0.3, room / tall);
          Object.assign(items[k].style, {transform: `scale(${zoom.toFixed(3)})`,
            transformOrigin: "top left", marginBottom: `${-(tall * (1 - zoom)).toFixed(1)}px`});
          items[k].setAttribute("data-fit-zoom", zoom.toFixed(3));
          continue;                              // then cut what follows it
        }
      }
      if (!rest) return added;
      // A top-level slide becomes the first of a vertical stack.
      if (section.parentElement.matches(".slides")) {
        const stack = document.createElement("section");
        section.replaceWith(stack);
        stack.appendChild(section);
      }
      section.after(rest);
      rest.style.display = "block";            // measured next; Reveal shows it later
      section = rest;
      added += 1;
    }
    return added;
  }

  window.fitSlides = async function (Reveal, timeoutMs = 20000) {
    const hashAtReady = location.hash;
    // Every slide displayed while it is measured and cut (Reveal shows only a few).
    const slides = Reveal.getSlides();
    const shown = [...new Set(slides.flatMap((s) => [s, s.parentElement]))]
      .filter((el) => el.matches("section"));
    const displays = shown.map((el) => [el, el.style.display]);
    shown.forEach((el) => { el.style.display = "block"; });
    await settled(timeoutMs);
    const { height } = Reveal.getConfig();
    const scale = Reveal.getScale();
    // The slide to show after cutting: the page's URL named it (#/h/v, maybe a
    // continuation slide, which did not exist when Reveal read the URL), unless the
    // lecturer moved on meanwhile.
    const wanted = location.hash === hashAtReady && LOADED_HASH.match(/^#\/(\d+)(?:\/(\d+))?/);
    const current = wanted ? {h: +wanted[1], v: +(wanted[2] || 0)} : Reveal.getIndices();
    let added = 0;
    for (const section of slides) added += fit(section, height, scale);
    displays.forEach(([el, display]) => { el.style.display = display; });
    document.querySelectorAll(".reveal .slides section[data-fit-continued]")
      .forEach((el) => { el.style.display = ""; });
    Reveal.sync();
    Reveal.slide(current.h, current.v || 0);
    Reveal.layout();
    return added;
  };
})();
