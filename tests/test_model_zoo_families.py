"""The model zoo beyond ResNet: AlexNet, DenseNet, Inception-v3, MobileNet (V1, V2),
SqueezeNet and VGG, against real MXNet 1.9.1.

tests/fixtures/mxnet_zoo/ was written by MXNet 1.9.1 itself (make_fixtures.py there says
how): the parameter names and shapes of all 24 of its models, and for one small model per
family a `.params` file with MXNet's output for a fixed input. So these tests check our
builders against MXNet's, not against themselves. Big inputs are slow in NumPy (Inception
at 299x299 takes seconds), and Numba compiles take long on a small machine: one small model
per family is compiled, the others use the reference executor (executor='numpy').
"""
import json
import lzma
from pathlib import Path

import numpy as np
import pytest

import straightdope as mx
from straightdope import nd
from straightdope.gluon.model_zoo import model_store, vision

FIXTURES = Path(__file__).parent / "fixtures" / "mxnet_zoo"
MXNET_MODELS = json.loads(lzma.open(FIXTURES / "param_names.json.xz", "rt").read())

# One small model per family: (how the fixture was built, input size, fixture file).
FAMILIES = {
    "alexnet": (lambda: vision.alexnet(classes=10), 67),
    "densenet": (lambda: vision.DenseNet(8, 4, [2, 3], classes=10), 64),
    "inception": (lambda: vision.inception_v3(classes=10), 299),
    "mobilenet": (lambda: vision.mobilenet0_25(classes=10), 64),
    "mobilenetv2": (lambda: vision.mobilenet_v2_0_25(classes=10), 64),
    "squeezenet": (lambda: vision.squeezenet1_1(classes=10), 224),
    "vgg": (lambda: vision.VGG([1, 1, 2, 2, 2], [8, 8, 16, 16, 16], classes=10,
                               batch_norm=True), 32),
}
SLOW = {"alexnet", "inception"}     # tens of MB of weights, or 299x299 inputs
family_params = [pytest.param(f, marks=pytest.mark.slow) if f in SLOW else f for f in FAMILIES]


def fixture_input(size):
    return np.random.RandomState(1).uniform(0, 1, (2, 3, size, size)).astype("float32")


def mxnet_file(family, folder, name=None):
    """The MXNet-written .params (stored xz-compressed), unpacked into `folder` as
    `name`.params (default: the family); with MXNet's input size and output."""
    packed = FIXTURES / f"{family}.params.xz"
    if not packed.exists():
        packed = FIXTURES / f"{family}.params.legacy.xz"    # save_params: prefix-less names
    path = folder / f"{name or family}.params"
    path.write_bytes(lzma.decompress(packed.read_bytes()))
    io = np.load(FIXTURES / f"{family}_io.npz")
    return path, int(io["size"]), io["y"]


def test_get_model_knows_every_mxnet_zoo_name():
    assert set(MXNET_MODELS) | {n for n in vision._models if n.startswith("resnet")} \
        | {"lenet", "mlp"} == set(vision._models)
    assert len(MXNET_MODELS) == 24
    with pytest.raises(ValueError, match="'vgg12' is not in the model zoo; available: alexnet"):
        vision.get_model("vgg12")


@pytest.mark.parametrize("name", sorted(MXNET_MODELS))
def test_parameter_names_and_shapes_are_mxnets(name):
    # MXNet's rows: [structural key (save_parameters), name without the net's prefix
    # (save_params, MXNet's own zoo files), shape at the model's input size], in order.
    net = vision.get_model(name)
    size = 299 if name == "inceptionv3" else 224
    out = net(mx.sym.var("data"))
    args, _, auxs = out.infer_shape(data=(1, 3, size, size))
    shapes = dict(zip(out.list_arguments(), args))
    shapes.update(zip(out.list_auxiliary_states(), auxs))
    ours = [[key, p.name[len(net.prefix):], list(shapes[p.name])]
            for key, p in net._collect_params_with_prefix().items()]
    assert ours == MXNET_MODELS[name]


@pytest.mark.parametrize("family", family_params)
def test_an_mxnet_made_params_file_loads_and_computes_what_mxnet_computed(family, tmp_path):
    path, size, expected = mxnet_file(family, tmp_path)
    make, _ = FAMILIES[family]
    net = make()
    net.load_parameters(str(path))
    x = nd.array(fixture_input(size))
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-5)
    if family in SLOW:
        return
    net.hybridize(executor="numpy")     # the traced graph computes the same
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-5)


def test_pretrained_reads_mxnets_file_name_from_root(tmp_path):
    # MXNet's own zoo file names: squeezenet1.1.params, mobilenet0.25.params, ...
    path, size, expected = mxnet_file("squeezenet", tmp_path, "squeezenet1.1")
    assert model_store.model_path("squeezenet1.1", tmp_path) == str(path)
    net = vision.get_model("squeezenet1.1", classes=10, pretrained=True, root=tmp_path)
    np.testing.assert_allclose(net(nd.array(fixture_input(size))).asnumpy(), expected,
                               rtol=1e-4, atol=1e-5)
    _, size, expected = mxnet_file("mobilenet", tmp_path, "mobilenet0.25")
    net = vision.get_model("mobilenet0.25", classes=10, pretrained=True, root=tmp_path)
    np.testing.assert_allclose(net(nd.array(fixture_input(size))).asnumpy(), expected,
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(model_store.PretrainedWeightsMissing, match="vgg11_bn.params"):
        vision.vgg11(batch_norm=True, pretrained=True, root=tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["densenet", "mobilenet", "mobilenetv2", "vgg", "squeezenet"])
def test_one_small_model_per_family_compiles_and_computes_what_mxnet_computed(family,
                                                                              tmp_path):
    path, size, expected = mxnet_file(family, tmp_path)
    net = FAMILIES[family][0]()
    net.load_parameters(str(path))
    net.hybridize(compile="sync")
    x = nd.array(fixture_input(size))
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-5)
    assert net.trace_count == 1


def test_feature_and_output_shapes_at_imagenet_sizes():
    # Shapes only (no weights): every family ends in a (batch, classes) score.
    for name, size in (("alexnet", 224), ("densenet121", 224), ("inceptionv3", 299),
                       ("mobilenet1.0", 224), ("mobilenetv2_1.0", 224), ("squeezenet1.0", 224),
                       ("vgg16_bn", 224)):
        out = vision.get_model(name, classes=7)(mx.sym.var("data"))
        assert out.infer_shape(data=(2, 3, size, size))[1] == [(2, 7)], name


def test_bad_configurations_say_what_to_choose():
    with pytest.raises(ValueError, match=r"no VGG with 12 layers; choose one of \[11, 13"):
        vision.get_vgg(12)
    with pytest.raises(ValueError, match="VGG: 2 blocks .* but 1 filter sizes"):
        vision.VGG([1, 1], [8])
    with pytest.raises(ValueError, match=r"no DenseNet with 100 layers; choose one of \[121"):
        vision.get_densenet(100)
    with pytest.raises(ValueError, match="SqueezeNet version must be '1.0' or '1.1', got '2.0'"):
        vision.SqueezeNet("2.0")


ONNX_SLOW = SLOW | {"vgg", "squeezenet"}     # a 4096x4096 Dense; 224x224 inputs


@pytest.mark.parametrize("family", [pytest.param(f, marks=pytest.mark.slow) if f in ONNX_SLOW
                                    else f for f in FAMILIES])
def test_one_model_per_family_exports_to_onnx_and_matches_onnx_runtime(family, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from test_onnx import assert_same_as_ort
    path, size, _ = mxnet_file(family, tmp_path)
    net = FAMILIES[family][0]()
    net.load_parameters(str(path))      # MXNet's weights, non-trivial BatchNorm statistics
    assert_same_as_ort(net, (1, 3, size, size), tmp_path, batches=(1, 2), executor="numpy")
