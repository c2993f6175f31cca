"""gluon.model_zoo: ResNet V1/V2, LeNet, MLP; local pretrained weights, never a download.

The second article runs ``resnet50_v2(pretrained=True)``, hybridizes it and checks that a
(1, 3, 224, 224) input gives (1, 1000). Here the "pretrained" file is one this test writes
into a temporary root. ResNets are slow in NumPy (seconds per 224x224 call), so most checks
use small inputs: thumbnail=True (CIFAR-style stem) with 8x8 images still goes through all
four stages (8 -> 8 -> 4 -> 2 -> 1).
"""
import os
import time

import numpy as np
import pytest

import straightdope as mx
from straightdope import gluon, nd
from straightdope.gluon.model_zoo import model_store, vision
from straightdope.gluon.model_zoo.vision import resnet


def small_input(batch=2):
    return nd.array(np.random.default_rng(0).normal(size=(batch, 3, 8, 8)))


@pytest.mark.parametrize('name, feature_shape', [
    ('resnet18_v1', (2, 512, 1, 1)), ('resnet34_v1', (2, 512, 1, 1)),
    ('resnet50_v1', (2, 2048, 1, 1)), ('resnet18_v2', (2, 512)), ('resnet50_v2', (2, 2048))])
def test_resnet_shapes(name, feature_shape):
    net = vision.get_model(name, classes=10, thumbnail=True)
    net.initialize()
    # `features` ends with global pooling (V2 also flattens): reusable for transfer learning.
    features = net.features(small_input())
    assert features.shape == feature_shape
    assert isinstance(net.output, gluon.nn.Dense)
    assert net.output(features).shape == (2, 10)


def test_resnet_architecture_matches_mxnet():
    # Parameter counts of MXNet's resnet18_v1 / resnet50_v2 with 1000 classes (BatchNorm
    # running statistics included, as collect_params() lists them).
    for name, expected in (('resnet18_v1', 11_699_112), ('resnet50_v2', 25_595_060)):
        net = vision.get_model(name)
        net.initialize()
        net(nd.ones((1, 3, 32, 32)))        # 32x32 is enough to learn every shape
        total = sum(int(np.prod(p.shape)) for p in net.collect_params().values())
        assert total == expected, name
    blocks = [type(b).__name__ for b in vision.resnet18_v2().features._children.values()]
    assert blocks[0] == 'BatchNorm' and blocks[-2:] == ['GlobalAvgPool2D', 'Flatten']
    stage = vision.resnet50_v1().features[4]
    assert [type(b).__name__ for b in stage._children.values()] == ['BottleneckV1'] * 3


def test_hybridized_resnet_equals_imperative():
    net = vision.resnet18_v2(classes=10, thumbnail=True)
    net.initialize(mx.init.Xavier())
    x = small_input()
    imperative = net(x).asnumpy()
    net.hybridize(executor='numpy')
    np.testing.assert_allclose(net(x).asnumpy(), imperative, rtol=1e-4, atol=1e-5)
    assert net.trace_count == 1


def test_pretrained_round_trip_and_the_articles_224_call(tmp_path):
    # Write "pretrained" weights where pretrained=True looks for them.
    original = vision.resnet50_v2()
    original.initialize(mx.init.Xavier())
    probe = small_input(1)
    expected = original(probe).asnumpy()        # also fixes every deferred shape
    path = model_store.model_path('resnet50_v2', root=tmp_path)
    assert path == os.path.join(str(tmp_path), 'resnet50_v2.params')
    original.save_parameters(path)

    net = vision.resnet50_v2(pretrained=True, root=str(tmp_path))
    np.testing.assert_allclose(net(probe).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    # The article's cell: hybridize, then one (1, 3, 224, 224) batch of ones.
    net.hybridize(executor='numpy')
    start = time.perf_counter()
    output = net(mx.np.ones(shape=(1, 3, 224, 224)))
    seconds = time.perf_counter() - start
    assert output.shape == (1, 1000)
    assert np.isfinite(output.asnumpy()).all()
    print(f"\nresnet50_v2, one hybridized (NumPy executor) 224x224 call: {seconds:.1f} s")


def test_random_weights_224_call_without_pretrained():
    net = vision.resnet18_v1()            # pretrained=False: random weights, no file needed
    net.initialize()
    assert net(nd.ones((1, 3, 224, 224))).shape == (1, 1000)


def test_missing_weights_say_where_and_how(tmp_path, monkeypatch):
    monkeypatch.setenv('STRAIGHTDOPE_HOME', str(tmp_path / 'home'))
    expected = os.path.join(str(tmp_path / 'home'), 'models', 'resnet18_v1.params')
    assert model_store.model_path('resnet18_v1') == expected
    with pytest.raises(model_store.PretrainedWeightsMissing) as info:
        vision.resnet18_v1(pretrained=True)
    message = str(info.value)
    assert expected in message and 'never downloads' in message
    assert 'save_parameters' in message and 'pretrained=False' in message
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(model_store.PretrainedWeightsMissing, match='lenet.params'):
        vision.get_model('lenet', pretrained=True, root=str(tmp_path))


def test_weights_of_another_architecture_are_refused(tmp_path):
    net = vision.resnet18_v1(classes=10, thumbnail=True)
    net.initialize()
    net(small_input())
    net.save_parameters(model_store.model_path('resnet34_v1', tmp_path))
    with pytest.raises(ValueError, match='missing|not present'):
        vision.resnet34_v1(classes=10, thumbnail=True, pretrained=True, root=tmp_path)


@pytest.mark.parametrize('name, x_shape', [('lenet', (2, 1, 28, 28)), ('mlp', (2, 1, 28, 28))])
def test_small_nets_and_their_pretrained_files(tmp_path, name, x_shape):
    net = vision.get_model(name)
    net.initialize()
    x = nd.array(np.random.default_rng(1).normal(size=x_shape))
    out = net(x)
    assert out.shape == (2, 10)
    net.save_parameters(model_store.model_path(name, tmp_path))
    loaded = vision.get_model(name, pretrained=True, root=tmp_path)
    np.testing.assert_allclose(loaded(x).asnumpy(), out.asnumpy(), rtol=1e-6)
    loaded.hybridize(executor='numpy')
    np.testing.assert_allclose(loaded(x).asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)


def test_get_model_and_spec_errors():
    assert isinstance(vision.get_model('ResNet18_V1'), resnet.ResNetV1)
    assert isinstance(vision.get_model('mlp', hidden=(8,), classes=3), vision.MLP)
    with pytest.raises(ValueError, match="not in the model zoo.*resnet18_v1"):
        vision.get_model('resnet19_v1')
    with pytest.raises(ValueError, match="no ResNet with 19 layers"):
        resnet.get_resnet(1, 19)
    with pytest.raises(ValueError, match="version must be 1 or 2"):
        resnet.get_resnet(3, 18)
    with pytest.raises(ValueError, match="channel"):
        resnet.ResNetV1(resnet.BasicBlockV1, [2, 2], [64, 64])


def test_purge_removes_only_params_files(tmp_path):
    (tmp_path / 'a.params').write_bytes(b'x')
    (tmp_path / 'notes.txt').write_text('keep')
    model_store.purge(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['notes.txt']
