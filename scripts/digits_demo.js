// The drawing pad of chapter 26 (Deploying a hybridized model): the reader draws a digit,
// ONNX Runtime Web (WebAssembly, served from this book's _static/onnxruntime/) runs the
// LeNet that the chapter exported to ONNX, and the page shows the prediction and the
// probabilities. No Python runs here and nothing is requested from another host.
//
// The chapter's output holds <div class="sd-digits" data-model=... data-mean=... data-std=...
// data-size=...>; scripts/build_book.sh copies this file and onnxruntime-web into _static/.
// After each prediction, window.sdDigitsLast = {pixels, probabilities, prediction}: the
// pixels are the model's input before normalisation (what the browser test feeds Python).
(function () {
  "use strict";

  function setUp(root) {
    const size = Number(root.dataset.size);          // the model's input is size x size
    const mean = Number(root.dataset.mean), std = Number(root.dataset.std);
    const pad = root.querySelector("canvas.sd-pad");
    const status = root.querySelector(".sd-status");
    const bars = root.querySelector(".sd-bars");
    const ink = pad.getContext("2d");
    let session = null, drawing = false, last = null;

    function clear() {
      ink.fillStyle = "black";
      ink.fillRect(0, 0, pad.width, pad.height);
      last = null;
    }

    // Digits are white on black, scaled to fill their box: crop the drawing to its
    // bounding square (plus a margin) and shrink it to size x size, grey levels in [0, 1].
    function pixels() {
      const image = ink.getImageData(0, 0, pad.width, pad.height).data;
      let top = pad.height, left = pad.width, bottom = -1, right = -1;
      for (let y = 0; y < pad.height; y++) {
        for (let x = 0; x < pad.width; x++) {
          if (image[4 * (y * pad.width + x)] > 0) {
            top = Math.min(top, y); bottom = Math.max(bottom, y);
            left = Math.min(left, x); right = Math.max(right, x);
          }
        }
      }
      if (bottom < 0) return null;
      const side = 1.2 * Math.max(bottom - top + 1, right - left + 1);
      const cx = (left + right + 1) / 2, cy = (top + bottom + 1) / 2;
      const small = document.createElement("canvas");
      small.width = small.height = size;
      const smallInk = small.getContext("2d");
      smallInk.fillStyle = "black";
      smallInk.fillRect(0, 0, size, size);
      smallInk.drawImage(pad, cx - side / 2, cy - side / 2, side, side, 0, 0, size, size);
      const grey = smallInk.getImageData(0, 0, size, size).data;
      const out = new Float32Array(size * size);
      for (let i = 0; i < out.length; i++) out[i] = grey[4 * i] / 255;
      return out;
    }

    function softmax(logits) {
      const top = Math.max(...logits);
      const e = logits.map((v) => Math.exp(v - top));
      const total = e.reduce((a, b) => a + b, 0);
      return e.map((v) => v / total);
    }

    function show(probabilities, prediction) {
      root.querySelector(".sd-prediction").textContent = String(prediction);
      bars.innerHTML = "";
      probabilities.forEach((p, digit) => {
        const row = document.createElement("div");
        row.className = "sd-bar";
        row.dataset.digit = String(digit);
        row.dataset.probability = p.toFixed(6);
        row.innerHTML = `<span>${digit}</span><span class="sd-fill" style="width:${
          (100 * p).toFixed(1)}%"></span><span>${(100 * p).toFixed(1)}%</span>`;
        bars.appendChild(row);
      });
    }

    async function predict() {
      const input = pixels();
      if (!input || !session) return;
      const normalised = input.map((v) => (v - mean) / std);
      const tensor = new ort.Tensor("float32", normalised, [1, 1, size, size]);
      const result = await session.run({ [session.inputNames[0]]: tensor });
      const logits = Array.from(result[session.outputNames[0]].data);
      const probabilities = softmax(logits);
      const prediction = probabilities.indexOf(Math.max(...probabilities));
      show(probabilities, prediction);
      window.sdDigitsLast = { pixels: Array.from(input), probabilities, prediction };
      root.dataset.predictions = String(Number(root.dataset.predictions || 0) + 1);
    }

    function at(event) {
      const box = pad.getBoundingClientRect();
      return [(event.clientX - box.left) * pad.width / box.width,
              (event.clientY - box.top) * pad.height / box.height];
    }

    pad.addEventListener("pointerdown", (event) => {
      drawing = true; last = at(event);
    });
    pad.addEventListener("pointermove", (event) => {
      if (!drawing) return;
      const point = at(event);
      ink.strokeStyle = "white";
      ink.lineWidth = pad.width / 12;
      ink.lineCap = ink.lineJoin = "round";
      ink.beginPath();
      ink.moveTo(...last);
      ink.lineTo(...point);
      ink.stroke();
      last = point;
    });
    window.addEventListener("pointerup", () => {
      if (drawing) { drawing = false; predict(); }
    });
    root.querySelector(".sd-clear").addEventListener("click", () => {
      clear(); bars.innerHTML = ""; root.querySelector(".sd-prediction").textContent = "-";
    });
    clear();

    if (typeof ort === "undefined") {
      status.textContent = say("noRuntime");
      return;
    }
    ort.env.wasm.wasmPaths = new URL("_static/onnxruntime/", document.baseURI).href;
    ort.env.wasm.numThreads = 1;          // threads would need cross-origin isolation
    ort.InferenceSession.create(root.dataset.model, { executionProviders: ["wasm"] })
      .then((created) => {
        session = created;
        root.dataset.ready = "true";
        status.textContent = say("loaded");
      })
      .catch((error) => {
        status.textContent = say("failed") + error;
      });
  }

  // The pad's messages in the page's language (the Chinese edition's pages say lang="zh-CN").
  const MESSAGES = {
    en: {noRuntime: "ONNX Runtime Web did not load: open this page from the built book " +
                    "over http (python -m http.server -d _build/html), not inside JupyterLab.",
         loaded: "Model loaded (ONNX Runtime Web, WebAssembly). Draw a digit.",
         failed: "Could not load the model: "},
    zh: {noRuntime: "ONNX Runtime Web 没有加载：请通过 http 打开构建好的书" +
                    "（python -m http.server -d _build/html），不要在 JupyterLab 里打开。",
         loaded: "模型已加载（ONNX Runtime Web，WebAssembly）。请画一个数字。",
         failed: "无法加载模型："},
  };
  function say(key) {
    const lang = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
    return MESSAGES[lang][key];
  }

  document.querySelectorAll(".sd-digits").forEach(setUp);
})();
