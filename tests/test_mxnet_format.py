"""MXNet's binary NDArray files (.params), both ways.

The files in tests/fixtures/mxnet/ were written by real MXNet 1.9.1 (its nd.save,
save_parameters and export), once, by tests/fixtures/mxnet/make_fixtures.py; that script's
docstring says exactly how (the mxnet 1.9.1 wheel in a scratch Python 3.11 venv with
numpy<1.24). MXNet is not a dependency: these tests only read the files. Since the
fixtures come from MXNet itself and not from our writer, reading them checks the reader
against MXNet, and re-encoding them checks the writer byte for byte. One more file is
built here by hand with struct.pack, field by field, from MXNet's source.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import straightdope as mx
from straightdope import gluon, mxnet_format, nd
from straightdope.gluon import nn
from straightdope.mxnet_format import MXNetFileError

FIXTURES = Path(__file__).parent / "fixtures" / "mxnet"
MXNET_FILES = ["nd_list", "nd_dict", "net", "net-0000", "net_io", "np_shape"]


def mxnet_net():
    """The architecture make_fixtures.py built in MXNet, built here the same way."""
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu", in_units=5), nn.BatchNorm(in_channels=4),
            nn.Dense(3, in_units=4))
    return net


def io():
    arrays = nd.load(str(FIXTURES / "net_io.params"))
    return arrays["x"], arrays["y"].asnumpy()


def test_nd_load_reads_mxnet_lists_and_dicts_with_their_dtypes():
    first, second, third = nd.load(str(FIXTURES / "nd_list.params"))
    np.testing.assert_array_equal(first.asnumpy(), np.arange(6, dtype="float32").reshape(2, 3))
    assert second.dtype == np.int64 and second.asnumpy().tolist() == [1, -2, 3, 2 ** 40]
    assert third.dtype == np.float64 and third.asnumpy().tolist() == [0.5, 0.25]
    named = nd.load(str(FIXTURES / "nd_dict.params"))
    assert list(named) == ["weight", "count", "pixels", "half"]
    assert named["pixels"].dtype == np.uint8 and named["pixels"].asnumpy().tolist() == [0, 128, 255]
    assert named["half"].dtype == np.float16 and named["half"].asnumpy().tolist() == [1.5, -2.0]
    assert named["count"].dtype == np.int32 and named["count"].asnumpy().tolist() == [7]


@pytest.mark.parametrize("name", MXNET_FILES)
def test_our_writer_gives_back_the_bytes_mxnet_wrote(name):
    raw = (FIXTURES / f"{name}.params").read_bytes()
    arrays, names = mxnet_format.load(FIXTURES / f"{name}.params")
    assert mxnet_format.encode(dict(zip(names, arrays)) if names else arrays) == raw


def hand_built_file():
    """One float32 array 'w' of shape (2, 1) = [[1.5], [-2]], field by field.
    Lines cited are apache/mxnet 1.9.1."""
    return b"".join([
        struct.pack("<Q", 0x112),          # kMXAPINDArrayListMagic, src/ndarray/ndarray.cc:1838
        struct.pack("<Q", 0),              # reserved, ndarray.cc:1843-1845
        struct.pack("<Q", 1),              # dmlc vector<NDArray>: u64 count, ndarray.cc:1846
        struct.pack("<I", 0xF993FAC9),     # NDARRAY_V2_MAGIC, ndarray.cc:1599, 1613
        struct.pack("<i", 0),              # storage type kDefaultStorage, ndarray.cc:1617-1618
        struct.pack("<i", 2),              # TShape::Save: int ndim, include/mxnet/tuple.h:731
        struct.pack("<qq", 2, 1),          # ... then int64 dims (dim_t), tuple.h:733
        struct.pack("<ii", 1, 0),          # Context::Save: dev_type kCPU=1, dev_id, base.h:156-158
        struct.pack("<i", 0),              # type flag kFloat32=0, ndarray.cc:1650-1651,
                                           #   3rdparty/mshadow/mshadow/base.h:359
        struct.pack("<2f", 1.5, -2.0),     # the values, ndarray.cc:1668
        struct.pack("<Q", 1),              # dmlc vector<string>: u64 count, ndarray.cc:1847
        struct.pack("<Q", 1) + b"w",       # each name: u64 length, bytes
    ])


def test_a_file_built_by_hand_from_mxnet_source_reads_and_writes_back(tmp_path):
    path = tmp_path / "hand.params"
    path.write_bytes(hand_built_file())
    loaded = nd.load(str(path))
    assert list(loaded) == ["w"]
    np.testing.assert_array_equal(loaded["w"].asnumpy(), np.array([[1.5], [-2.0]], "float32"))
    assert mxnet_format.encode({"w": np.array([[1.5], [-2.0]], "float32")}) == hand_built_file()


def test_load_parameters_reads_mxnet_save_parameters_and_computes_the_same():
    net = mxnet_net()
    net.load_parameters(str(FIXTURES / "net.params"))
    x, expected = io()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_symbolblock_imports_an_mxnet_export_and_computes_the_same():
    net = gluon.SymbolBlock.imports(str(FIXTURES / "net-symbol.json"), ["data"],
                                    str(FIXTURES / "net-0000.params"))
    x, expected = io()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_export_and_save_parameters_write_mxnet_files_on_request(tmp_path):
    net = mxnet_net()
    net.load_parameters(str(FIXTURES / "net.params"))
    net.save_parameters(str(tmp_path / "again.params"), params_format="mxnet")
    # Structural keys in MXNet's order: the very bytes MXNet's save_parameters wrote.
    assert (tmp_path / "again.params").read_bytes() == (FIXTURES / "net.params").read_bytes()
    net.hybridize()
    x, expected = io()
    net(x)
    sym_file, params_file = net.export(str(tmp_path / "ours"), params_format="mxnet")
    assert Path(params_file).read_bytes()[:8] == struct.pack("<Q", 0x112)
    names = mxnet_format.load(params_file)[1]
    assert {n.split(":")[0] for n in names} == {"arg", "aux"}
    back = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    np.testing.assert_allclose(back(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="params_format must be 'npz' or 'mxnet'"):
        net.export(str(tmp_path / "bad"), params_format="pickle")


def test_exported_json_writes_dtypes_as_mxnet_type_codes(tmp_path):
    """MXNet writes a variable's "__dtype__" as its type code ("0" is float32), as in the
    fixture MXNet exported; a name such as "float32" would not parse in MXNet."""
    import json

    from straightdope import sym
    mxnet_doc = json.loads((FIXTURES / "net-symbol.json").read_text())
    mxnet_codes = {n["attrs"]["__dtype__"] for n in mxnet_doc["nodes"]
                   if "__dtype__" in n.get("attrs", {})}
    net = mxnet_net()
    net.initialize()
    net.hybridize()
    net(io()[0])
    sym_file, _ = net.export(str(tmp_path / "ours"))
    ours = json.loads(Path(sym_file).read_text())
    our_codes = {n["attrs"]["__dtype__"] for n in ours["nodes"]
                 if "__dtype__" in n.get("attrs", {})}
    assert mxnet_codes == our_codes == {"0"}
    # read back (ours and MXNet's): the code becomes a dtype again, 64-bit too
    wide = sym.var("w", dtype="float64") * 2
    back = sym.load_json(wide.tojson())
    assert '"__dtype__": "1"' in wide.tojson() and back.get_internals()["w"].attr(
        "__dtype__") == "float64"
    assert back.infer_type(w="float64")[1] == [np.dtype("float64")]


def test_the_default_format_is_still_npz(tmp_path):
    net = mxnet_net()
    net.initialize()
    net.save_parameters(str(tmp_path / "n.params"))
    assert (tmp_path / "n.params").read_bytes()[:4] == b"PK\x03\x04"


def test_an_mxnet_export_converts_to_onnx_and_runs_in_onnx_runtime(tmp_path):
    onnx_export = pytest.importorskip("straightdope.onnx")
    ort = pytest.importorskip("onnxruntime")
    path = onnx_export.export_model(str(FIXTURES / "net-symbol.json"),
                                    str(FIXTURES / "net-0000.params"), [(2, 5)], np.float32,
                                    str(tmp_path / "net.onnx"))
    x, expected = io()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"data": x.asnumpy()})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------ bad files
def test_every_truncation_of_a_file_is_a_clear_error(tmp_path):
    raw = (FIXTURES / "nd_dict.params").read_bytes()
    path = tmp_path / "cut.params"
    for n in range(8, len(raw)):
        path.write_bytes(raw[:n])
        with pytest.raises(MXNetFileError, match="cut.params: .*bytes"):
            mxnet_format.load(path)


def patched(offset, fmt, value):
    raw = bytearray(hand_built_file())
    struct.pack_into("<" + fmt, raw, offset, value)
    return bytes(raw)


@pytest.mark.parametrize("offset, fmt, value, message", [
    (16, "Q", 2 ** 60, "announces 1152921504606846976 arrays"),     # count
    (36, "q", 2 ** 40, "values of shape .* needs 4398046511104 bytes"),  # 2**40 floats
    (36, "q", -3, "negative dims"),
    (32, "i", 999, "ndim 999"),
    (28, "i", 1, "sparse array"),
    (60, "i", 42, "unknown type flag 42"),
    (24, "I", 0xDEADBEEF, "unknown array magic"),
    (0, "Q", 0x113, "not an MXNet NDArray file"),
])
def test_a_damaged_header_is_refused_before_anything_is_allocated(tmp_path, offset, fmt, value,
                                                                  message):
    path = tmp_path / "bad.params"
    path.write_bytes(patched(offset, fmt, value))
    with pytest.raises(MXNetFileError, match=message):
        mxnet_format.load(path)


def test_extra_bytes_and_name_count_mismatches_are_refused(tmp_path):
    path = tmp_path / "bad.params"
    path.write_bytes(hand_built_file() + b"\0")
    with pytest.raises(MXNetFileError, match="1 unexpected bytes"):
        mxnet_format.load(path)
    path.write_bytes(patched(72, "Q", 2))
    with pytest.raises(MXNetFileError, match="2 names for 1 arrays"):
        mxnet_format.load(path)


def test_load_parameters_names_the_file_when_an_mxnet_file_is_damaged(tmp_path):
    path = tmp_path / "net.params"
    path.write_bytes((FIXTURES / "net.params").read_bytes()[:100])
    with pytest.raises(mxnet_format.MXNetFileError, match="net.params"):
        mxnet_net().load_parameters(str(path))


def test_0d_arrays_are_written_as_mxnet_writes_them_under_np_shape(tmp_path):
    # np_shape.params: MXNet 1.9.1's nd.save under mx.np_shape(True) of two 0-d arrays and a
    # (2, 3) one; every array then carries the V3 magic (see make_fixtures.py).
    mxnet_file = FIXTURES / "np_shape.params"
    data = {"step": nd.array(np.array(7), dtype="int64"),
            "loss": nd.array(np.array(0.25, dtype="float32")),
            "w": nd.array(np.arange(6, dtype="float32").reshape(2, 3))}
    nd.save(str(tmp_path / "ours.params"), data)             # no np_shape here: 0-d says so
    assert (tmp_path / "ours.params").read_bytes() == mxnet_file.read_bytes()
    with mx.np_shape(True):
        nd.save(str(tmp_path / "np.params"), {"w": data["w"]})
    assert struct.unpack_from("<I", (tmp_path / "np.params").read_bytes(), 24)[0] == 0xF993FACA
    with pytest.raises(mx.base.MXNetError, match="saved with NumPy shape semantics"):
        nd.load(str(mxnet_file))                              # as MXNet: only under them
    with mx.np_shape(True):
        back = nd.load(str(mxnet_file))
    assert back["step"].shape == () and back["step"].asnumpy() == 7
    assert back["loss"].dtype == np.float32 and back["loss"].asnumpy() == 0.25


def test_a_0d_array_is_refused_when_the_older_layout_is_asked_for(tmp_path):
    with pytest.raises(ValueError, match="has no 0-d arrays; pass np_shape=True"):
        mxnet_format.save(tmp_path / "s.params", {"s": np.float32(1.0)}, np_shape=False)
    assert not (tmp_path / "s.params").exists()


def test_nd_save_writes_mxnet_files_for_params_names_or_on_request(tmp_path):
    data = {"weight": nd.array(np.arange(4).reshape(2, 2) / 4, dtype="float32"),
            "count": nd.array([7], dtype="int32"),
            "pixels": nd.array([0, 128, 255], dtype="uint8"),
            "half": nd.array([1.5, -2.0], dtype="float16")}
    nd.save(str(tmp_path / "d.params"), data)           # the bytes MXNet's nd.save wrote
    assert (tmp_path / "d.params").read_bytes() == (FIXTURES / "nd_dict.params").read_bytes()
    nd.save(str(tmp_path / "d.bin"), data, format="mxnet")
    assert (tmp_path / "d.bin").read_bytes() == (FIXTURES / "nd_dict.params").read_bytes()
    nd.save(str(tmp_path / "d.npz"), data)
    nd.save(str(tmp_path / "e.params"), data, format="npz")
    for name in ("d.npz", "e.params"):
        assert (tmp_path / name).read_bytes()[:4] == b"PK\x03\x04"
        assert nd.load(str(tmp_path / name))["count"].asnumpy().tolist() == [7]
    nd.save(str(tmp_path / "l.params"), [data["weight"], data["count"]])
    assert [a.dtype for a in nd.load(str(tmp_path / "l.params"))] == [np.float32, np.int32]
    with pytest.raises(ValueError, match="format must be 'mxnet' or 'npz', got 'pickle'"):
        nd.save(str(tmp_path / "x.params"), data, format="pickle")
