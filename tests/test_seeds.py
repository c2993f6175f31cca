"""The three source articles, run as written (with `mxnet` spelled `straightdope`), and what
each of them says about the results.

  000  "HybridBlocks终极指南"               : HybridSequential, a custom HybridBlock, a training loop
  002  "使用 Apache MXNet Gluon 创建神经网络" : Dense, Sequential, Block, Parameter, LeNet,
                                             HybridBlock, benchmark, save/load, export/imports,
                                             summary (MXNet 2.0 style: np, npx, forward)
  003  "Hybridize:更快更好地移植"            : hybridize, bench, Symbol input and JSON, prints that
                                             happen only while tracing (MXNet 1.x style: nd, F)

The article's own code is kept as it is, inside the test functions; the asserts after it
check what the article states. The plain-Python warm-up of article 003 (an `add` function
and `compile`/`exec` of a string) does not touch the library and is left out.
"""
import json
import os
import re
import warnings
from collections import namedtuple
from time import time

import numpy
import pytest

import straightdope as mx
import straightdope.gluon as gn
import straightdope.ndarray as nd
import straightdope.symbol as symbol
from straightdope import autograd, gluon
from straightdope import np, npx
from straightdope.gluon import HybridBlock, Parameter, nn



@pytest.fixture(autouse=True)
def in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)      # save_parameters/export write into the current folder


@pytest.fixture(autouse=True)
def seed_mode(request):
    """Each article is a program of its own: 002 starts with `npx.set_np()`, 000 and 003
    run in MXNet's default mode. (Set for each test, not once at import: an import-time
    set_np() leaked into every test module collected after this one.)"""
    if request.node.name.startswith("test_002_"):
        npx.set_np()  # Change MXNet to the numpy-like mode.
    else:
        npx.reset_np()
    yield
    npx.reset_np()


# ======================================================================= 000
def test_000_hybrid_sequential_basic_use():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(256, activation='relu'))
    net.add(gluon.nn.Dense(10))

    # 编译网络以获得性能提升
    net.hybridize()

    # 训练和推理
    net.initialize()
    output = net(mx.nd.random.uniform(shape=(32, 784)))

    assert output.shape == (32, 10)
    assert net.trace_count == 1


def test_000_custom_hybrid_layer():
    class CustomLayer(gluon.HybridBlock):
        def __init__(self, units, **kwargs):
            super(CustomLayer, self).__init__(**kwargs)
            self.units = units

        def hybrid_forward(self, F, x):
            # F可以是mx.nd（命令式）或mx.sym（符号式）
            return F.relu(x)

    layer = CustomLayer(8)
    x = mx.nd.random.normal(shape=(4, 8))
    imperative = layer(x)
    layer.hybridize()
    hybridized = layer(x)
    numpy.testing.assert_allclose(hybridized.asnumpy(), numpy.maximum(x.asnumpy(), 0))
    numpy.testing.assert_allclose(imperative.asnumpy(), hybridized.asnumpy())
    assert isinstance(layer(mx.sym.var('data')), mx.sym.Symbol)


def test_000_training_loop_sketch():
    pytest.importorskip("straightdope.gluon.loss")
    pytest.importorskip("straightdope.gluon.trainer")
    # What the sketch leaves out ("... 添加ResNet层 ...", the data, loss and trainer):
    Batch = namedtuple("Batch", "data label")
    rng = numpy.random.RandomState(0)
    centers = rng.normal(size=(3, 20)) * 2
    labels = rng.randint(0, 3, size=(4, 16))
    data_loader = [Batch(mx.nd.array(centers[y] + rng.normal(size=(16, 20))), mx.nd.array(y))
                   for y in labels]
    num_epochs, batch_size = 4, 16
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

    # 构建混合化ResNet
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(32, activation='relu'), gluon.nn.Dense(3))  # a small stand-in
    net.initialize()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    net.hybridize()

    losses = []
    # 训练阶段：享受命令式编程的灵活性
    for epoch in range(num_epochs):
        for batch in data_loader:
            with autograd.record():
                output = net(batch.data)
                loss = loss_fn(output, batch.label)
            loss.backward()
            trainer.step(batch_size)
            losses.append(loss.mean().asscalar())

    # 部署阶段：享受符号式编程的性能
    compiled_net = net  # 已混合化，可直接部署

    assert losses[-1] < losses[0] * 0.5
    assert compiled_net.trace_count == 1


# ======================================================================= 002
class MLP(nn.Block):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(5, activation='relu')
        self.dense2 = nn.Dense(25, activation='relu')
        self.dense3 = nn.Dense(2)

    def forward(self, x):
        layer1 = self.dense1(x)
        layer2 = self.dense2(layer1)
        layer3 = self.dense3(layer2)
        return layer3


class custom_layer(nn.Block):
    def __init__(self, out_units, in_units=0):
        super().__init__()
        self.weight = Parameter("weight", shape=(in_units, out_units), allow_deferred_init=True)
        self.bias = Parameter("bias", shape=(out_units,), allow_deferred_init=True)

    def forward(self, x):
        return np.dot(x, self.weight.data()) + self.bias.data()


class LeNet(nn.Block):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(channels=6, kernel_size=3, activation='relu')
        self.pool1 = nn.MaxPool2D(pool_size=2, strides=2)
        self.conv2 = nn.Conv2D(channels=16, kernel_size=3, activation='relu')
        self.pool2 = nn.MaxPool2D(pool_size=2, strides=2)
        self.dense1 = nn.Dense(120, activation="relu")
        self.dense2 = nn.Dense(84, activation="relu")
        self.dense3 = nn.Dense(10)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool1(x)
        x = self.conv2(x)
        x = self.pool2(x)
        x = self.dense1(x)
        x = self.dense2(x)
        x = self.dense3(x)
        return x


class LeNet_custom(nn.Block):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(channels=6, kernel_size=3, activation='relu')
        self.pool1 = nn.MaxPool2D(pool_size=2, strides=2)
        self.conv2 = nn.Conv2D(channels=16, kernel_size=3, activation='relu')
        self.pool2 = nn.MaxPool2D(pool_size=2, strides=2)
        self.dense1 = nn.Dense(120, activation="relu")
        self.dense2 = nn.Dense(84, activation="relu")
        self.dense3 = custom_layer(10, 84)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pool1(x)
        x = self.conv2(x)
        x = self.pool2(x)
        x = self.dense1(x)
        x = self.dense2(x)
        x = self.dense3(x)
        return x


class CustomLayer(nn.HybridBlock):
    def __init__(self, out_units, in_units=-1):
        super().__init__()
        self.weight = Parameter("weight", shape=(in_units, out_units), allow_deferred_init=True)
        self.bias = Parameter("bias", shape=(out_units,), allow_deferred_init=True)

    def forward(self, x):
        print(self.weight.shape, self.bias.shape)
        return np.dot(x, self.weight.data()) + self.bias.data()

    def infer_shape(self, x):
        print(self.weight.shape, x.shape)
        self.weight.shape = (x.shape[-1], self.weight.shape[1])


class MLP_Hybrid(HybridBlock):
    def __init__(self):
        super().__init__()
        self.dense1 = nn.Dense(256, activation='relu')
        self.dense2 = nn.Dense(128, activation='relu')
        self.dense3 = nn.Dense(2)

    def forward(self, x):
        layer1 = self.dense1(x)
        layer2 = self.dense2(layer1)
        layer3 = self.dense3(layer2)
        return layer3


def benchmark(net, x):
    y = net(x)
    start = time()
    for i in range(1, 1000):
        y = net(x)
    return time() - start


def test_002_dense_layer():
    layer = nn.Dense(5)
    assert repr(layer) == "Dense(-1 -> 5, linear)"      # output: Dense(-1 -> 5, linear)
    layer = nn.Dense(5, in_units=3)
    assert repr(layer) == "Dense(3 -> 5, linear)"
    layer = nn.Dense(5, in_units=3, activation='relu')
    assert repr(layer) == "Dense(3 -> 5, Activation(relu))"

    layer.initialize()
    x = np.random.uniform(-1, 1, (10, 3))
    out = layer(x)
    assert out.shape == (10, 5)                         # 输入为(10, 3)，输出形状为(10, 5)
    assert (out.asnumpy() >= 0).all()                   # relu
    params = layer.params
    assert re.fullmatch(r"dense\d+_ \(\n  Parameter dense\d+_weight \(shape=\(5, 3\), "
                        r"dtype=float32\)\n  Parameter dense\d+_bias \(shape=\(5,\), "
                        r"dtype=float32\)\n\)", repr(params))
    w = layer.weight.data()
    assert w.shape == (5, 3) and numpy.abs(w.asnumpy()).max() <= 0.07   # Uniform(0.07)

    deferred = nn.Dense(5)                              # in_units inferred from the data
    deferred.initialize()
    deferred(np.random.uniform(-1, 1, (10, 7)))
    assert deferred.weight.shape == (5, 7)


def test_002_sequential():
    net = nn.Sequential()
    net.add(nn.Dense(5, in_units=3, activation='relu'),
            nn.Dense(25, activation='relu'),
            nn.Dense(2))
    assert repr(net) == ("Sequential(\n  (0): Dense(3 -> 5, Activation(relu))\n"
                         "  (1): Dense(-1 -> 25, Activation(relu))\n"
                         "  (2): Dense(-1 -> 2, linear)\n)")
    assert repr(net[1]) == "Dense(-1 -> 25, Activation(relu))"
    net.initialize()
    assert net(np.random.uniform(size=(4, 3))).shape == (4, 2)
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        net.hybridize()


def test_002_block_and_parameters():
    class Net(nn.Block):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return x

    x = np.ones((2, 2))
    assert Net()(x) is x

    net = MLP()
    assert repr(net).startswith("MLP(\n  (dense1): Dense(-1 -> 5, Activation(relu))")
    assert "weight (shape=(5, -1)" in repr(net.dense1.params)
    assert len(net.collect_params()) == 6               # collected from the whole tree

    weight = Parameter("custom_parameter_weight", shape=(5, -1))
    bias = Parameter("custom_parameter_bias", shape=(5, -1))
    assert repr((weight, bias)) == (
        "(Parameter custom_parameter_weight (shape=(5, -1), dtype=float32), "
        "Parameter custom_parameter_bias (shape=(5, -1), dtype=float32))")
    assert weight.grad_req == "write"

    dense = custom_layer(3, in_units=5)
    dense.initialize()
    out = dense(np.random.uniform(size=(4, 5)))
    assert out.shape == (4, 3)


def test_002_lenet_and_custom_lenet(capsys):
    lenet = LeNet()
    lenet_custom = LeNet_custom()
    image_data = np.random.uniform(-1, 1, (1, 1, 28, 28))
    lenet.initialize()
    lenet_custom.initialize()
    print("Lenet:")
    print(lenet(image_data))
    print("Custom Lenet:")
    print(lenet_custom(image_data))
    shapes = lenet.conv1.weight.data().shape, lenet.dense1.bias.data().shape

    out = capsys.readouterr().out
    assert out.startswith("Lenet:\n") and "\nCustom Lenet:\n" in out
    # under set_np() they are mx.np.ndarrays, printed as NumPy prints (as in MXNet): 1x10
    for printed in out[len("Lenet:\n"):].split("Custom Lenet:\n"):
        assert printed.startswith("[[") and printed.rstrip().endswith("]]")
        assert len(printed.replace("[", " ").replace("]", " ").split()) == 10
    assert lenet(image_data).shape == lenet_custom(image_data).shape == (1, 10)
    assert shapes == ((6, 1, 3, 3), (120,))
    assert lenet.dense1.weight.shape == (120, 16 * 5 * 5)


def test_002_model_zoo(monkeypatch):
    model_zoo = pytest.importorskip("straightdope.gluon.model_zoo")
    # Compiling a 50-layer graph with Numba takes minutes; the executors are compared in
    # test_hybridize.py, so this one runs on the NumPy reference executor.
    monkeypatch.setenv("STRAIGHTDOPE_EXECUTOR", "numpy")
    # pretrained=False: straightdope never downloads, and has no pretrained ResNet file.
    net = model_zoo.vision.resnet50_v2(pretrained=False)
    net.initialize()              # pretrained=True would have loaded the weights instead
    net.hybridize()
    dummy_input = np.ones(shape=(1, 3, 224, 224))
    output = net(dummy_input)
    assert output.shape == (1, 1000)


def test_002_hybrid_sequential_and_custom_hybrid_layer(capsys):
    net_hybrid_seq = nn.HybridSequential()
    net_hybrid_seq.add(nn.Dense(5, in_units=3, activation='relu'),
                       nn.Dense(25, activation='relu'),
                       nn.Dense(2))
    assert repr(net_hybrid_seq).startswith("HybridSequential(\n  (0): Dense(3 -> 5")
    net_hybrid_seq.hybridize()
    net_hybrid_seq.initialize()
    assert net_hybrid_seq(np.ones((4, 3))).shape == (4, 2)

    dense = CustomLayer(3)
    dense.initialize()
    out = dense(np.random.uniform(size=(4, 5)))
    assert out.shape == (4, 3)
    # forward sees the unknown shape, infer_shape fills it in, forward runs again
    assert capsys.readouterr().out == "(-1, 3) (3,)\n(-1, 3) (4, 5)\n(5, 3) (3,)\n"


def test_002_benchmark(capsys):
    x_bench = np.random.normal(size=(1, 512))
    net_hybrid_seq = nn.HybridSequential()
    net_hybrid_seq.add(nn.Dense(256, activation='relu'),
                       nn.Dense(128, activation='relu'),
                       nn.Dense(2))
    net_hybrid_seq.initialize()
    print('Before hybridizing: %.4f sec' % (benchmark(net_hybrid_seq, x_bench)))
    before = net_hybrid_seq(x_bench).asnumpy()
    net_hybrid_seq.hybridize()
    print('After hybridizing: %.4f sec' % (benchmark(net_hybrid_seq, x_bench)))

    out = capsys.readouterr().out
    assert re.fullmatch(r"Before hybridizing: \d+\.\d{4} sec\nAfter hybridizing: "
                        r"\d+\.\d{4} sec\n", out)
    assert net_hybrid_seq.trace_count == 1 and net_hybrid_seq._cached_op.calls == 1000
    numpy.testing.assert_allclose(net_hybrid_seq(x_bench).asnumpy(), before, rtol=1e-4,
                                  atol=1e-6)


def test_002_save_load_export_imports_summary(capsys):
    x = np.random.uniform(-1, 1, (10, 3))
    layer = nn.Dense(5, in_units=3, activation='relu')
    layer.initialize()

    # 方式一：仅保存 / 加载模型参数
    file_name = "layer.params"
    layer.save_parameters(file_name)

    def build_model():
        layer = nn.Dense(5, in_units=3, activation="relu")
        return layer

    layer_new = build_model()
    layer_new.load_parameters("layer.params")
    numpy.testing.assert_array_equal(layer_new(x).asnumpy(), layer(x).asnumpy())

    # 方式二：同时保存 / 加载模型参数与架构
    x_bench = np.random.normal(size=(1, 512))
    net_hybrid = MLP_Hybrid()
    net_hybrid.initialize()
    with pytest.raises(RuntimeError, match=r"hybridize\(\).*forward"):   # not yet traced
        net_hybrid.export("MLP_hybrid")
    benchmark(net_hybrid, x_bench)
    net_hybrid.hybridize()
    benchmark(net_hybrid, x_bench)
    files = net_hybrid.export("MLP_hybrid")
    assert files == ("MLP_hybrid-symbol.json", "MLP_hybrid-0000.params")
    assert os.path.exists("MLP_hybrid-symbol.json") and os.path.exists("MLP_hybrid-0000.params")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net_loaded = nn.SymbolBlock.imports("MLP_hybrid-symbol.json", ['data'],
                                            "MLP_hybrid-0000.params", device=None)
    out_loaded = net_loaded(x_bench)
    numpy.testing.assert_allclose(out_loaded.asnumpy(), net_hybrid(x_bench).asnumpy(),
                                  rtol=1e-5, atol=1e-7)
    capsys.readouterr()

    # 可视化模型结构：summary()
    layer.summary(x)
    lenet = LeNet()
    lenet.initialize()
    image_data = np.random.uniform(-1, 1, (1, 1, 28, 28))
    lenet.summary(image_data)
    out = capsys.readouterr().out
    assert out.count("Layer (type)") == 2
    assert "Total params: 20" in out                       # 3 * 5 + 5
    assert f"Total params: {60 + 880 + 48120 + 10164 + 850}" in out
    assert re.search(r"Conv2D-\d+\s+\(1, 6, 26, 26\)\s+60", out)

    with pytest.raises(AssertionError, match=r"summary\(\) before hybridize\(\)"):
        net_hybrid.summary(x_bench)

    net_hybrid_summary = MLP_Hybrid()
    net_hybrid_summary.initialize()
    net_hybrid_summary.summary(x_bench)
    net_hybrid_summary.hybridize()
    assert "Total params: 164482" in capsys.readouterr().out


# ======================================================================= 003
def get_net():
    net = gn.nn.HybridSequential()
    with net.name_scope():
        net.add(gn.nn.Dense(128, activation="relu"))
        net.add(gn.nn.Dense(64, activation="relu"))
        net.add(gn.nn.Dense(2))
    return net


def test_003_same_results_with_and_without_hybridize(capsys):
    net = get_net()
    net.initialize()
    x = nd.random_normal(shape=(1, 512))
    # print(net(x)) #不使用Hybridize
    print("不使用Hybridize后的结果为:", net(x))
    net.hybridize()  # 使用Hybridize

    print("使用Hybridize后的结果为:", net(x))

    first, second = capsys.readouterr().out.split("使用Hybridize后的结果为:")[-2:]
    assert first.split("[[")[1] == second.split("[[")[1]          # 计算结果其实都是一样的
    assert net.trace_count == 1


def test_003_bench(capsys):
    def bench(net, x):
        start = time()
        for i in range(1000):
            y = net(x)
        nd.waitall()   # 等待所有计算完成
        return time() - start

    net = get_net()
    net.initialize()
    x = nd.random_normal(shape=(1, 512))
    print("不使用Hybridize后的运行时间为：%.4f s" % (bench(net, x)))
    net.hybridize()
    print("使用Hybridize后的运行时间为：%.4f s" % (bench(net, x)))
    out = capsys.readouterr().out
    assert len(re.findall(r"\d+\.\d{4} s", out)) == 2


def test_003_symbol_input_and_json(capsys):
    net = get_net()
    net.initialize()
    net.hybridize()
    net(nd.random_normal(shape=(1, 512)))

    k = symbol.var(name="data")  # 声明一个变量
    print(net(k))
    print(net(k).tojson())  # 查看json文件

    out = capsys.readouterr().out
    first_line, rest = out.split("\n", 1)
    assert re.fullmatch(r"<Symbol hybridsequential\d+_dense2_fwd>", first_line)
    doc = json.loads(rest)
    ops = [n["op"] for n in doc["nodes"]]
    assert ops.count("FullyConnected") == 3 and ops.count("Activation") == 2
    assert doc["nodes"][0]["name"] == "data"


def test_003_prints_happen_only_while_tracing(capsys):
    class Hybridize_net(gn.nn.HybridBlock):
        def __init__(self, **kwargs):
            super(Hybridize_net, self).__init__(**kwargs)
            self.d1 = gn.nn.Dense(10)
            self.out = gn.nn.Dense(2)

        def hybrid_forward(self, F, x):  # 如果使用了Hybridize，F就是一个变量，否则，就是一个ndArray
            print("F:", F)
            print("x:", x)
            x = F.relu(self.d1(x))
            print("hidden:", x)
            return self.out(x)

    # 不使用Hybridize
    net = Hybridize_net()
    net.initialize()
    x = nd.random_normal(shape=(1, 3))
    print(net(x))
    imperative = capsys.readouterr().out
    assert imperative.startswith("F: <module 'straightdope.ndarray'")
    assert "x: \n[[" in imperative and "<NDArray 1x3 @cpu(0)>" in imperative
    assert "hidden: \n[[" in imperative and "<NDArray 1x10 @cpu(0)>" in imperative

    # 使用Hybridize
    net.hybridize()
    print(net(x))
    traced = capsys.readouterr().out
    assert traced.startswith("F: <module 'straightdope.symbol'")
    assert "x: <Symbol data>" in traced
    assert re.search(r"hidden: <Symbol hybridize_net\d+_relu0>", traced)

    print(net(x))                        # 再次执行的时候，就只有输出了
    again = capsys.readouterr().out
    assert "F:" not in again and "hidden:" not in again
    assert again.strip().endswith("<NDArray 1x2 @cpu(0)>")
    assert imperative.split("\n[[")[-1] == traced.split("\n[[")[-1] == again.split("\n[[")[-1]
    assert net.trace_count == 1
