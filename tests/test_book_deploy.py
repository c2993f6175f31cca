"""Chapter 26 (Deploying a hybridized model) runs from top to bottom and shows what its
text says: ONNX Runtime agrees with the trained network, the .onnx file is published for
the page's drawing pad, and MXNet-format parameters load back. (The pad itself is tested
in Chromium by tests/test_book_html.py.)"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

pytest.importorskip("onnxruntime")
pytestmark = pytest.mark.slow

BOOK = Path(__file__).resolve().parent.parent / "book"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    from nbclient import NotebookClient
    nb = nbformat.read(BOOK / "26_deploying.ipynb", as_version=4)
    cwd = tmp_path_factory.mktemp("deploy")
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb, cwd


def text_of(nb):
    """What the cells printed (stdout chunks joined as written: a kernel may split one
    print into several stream messages, e.g. around a notice on stderr) and the plain
    text of their results."""
    parts = []
    for cell in nb.cells:
        outs = cell.get("outputs", [])
        parts.append("".join(out.get("text", "") for out in outs
                             if out.get("output_type") == "stream"
                             and out.get("name") == "stdout"))
        parts += [out["data"]["text/plain"] for out in outs
                  if "text/plain" in out.get("data", {})]
    return "\n".join(parts)


def test_chapter_26_checks_onnx_runtime_and_publishes_the_model(executed):
    nb, cwd = executed
    text = text_of(nb)
    assert "same predictions: 1.0" in text
    assert "one image: (1, 10) True" in text
    assert text.count("same outputs: True") == 2          # import_model, MXNet params
    assert "first bytes: 12 01 00 00 00 00 00 00" in text
    assert "OnnxExportError: node 'noisy' (Dropout)" in text
    # models from elsewhere: PyTorch's export imported, MXNet's own zoo file loaded
    assert "PyTorch's file, imported: same outputs as PyTorch: True" in text
    assert "MXNet's zoo file, loaded: same outputs as MXNet: True" in text
    assert (cwd / "static_js" / "models" / "digits_lenet.onnx").stat().st_size > 100_000
    accuracy = float(text.split("test accuracy: ")[1].split()[0])
    assert accuracy > 0.85


def test_chapter_26_puts_the_drawing_pad_in_its_output(executed):
    nb, _ = executed
    html = [out["data"]["text/html"] for cell in nb.cells for out in cell.get("outputs", [])
            if "text/html" in out.get("data", {})]
    pad = next(h for h in html if "sd-digits" in h)
    assert 'data-model="_static/models/digits_lenet.onnx"' in pad
    assert '_static/onnxruntime/ort.wasm.min.js' in pad and "_static/digits_demo.js" in pad
    assert "http" not in pad                       # nothing from another host
