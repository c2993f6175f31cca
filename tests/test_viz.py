"""mx.viz (plot_network, print_summary) and mx.image (read, resize, crop, normalise)."""
import subprocess
import sys

import numpy as np
import pytest

import straightdope as mx
from straightdope import image, viz

graphviz = pytest.importorskip("graphviz")


def mlp_symbol():
    x = mx.sym.var('data')
    h = mx.sym.FullyConnected(x, num_hidden=128, name='fc1')
    h = mx.sym.BatchNorm(h, name='bn1')
    h = mx.sym.Activation(h, act_type='relu', name='relu1')
    return mx.sym.FullyConnected(h, num_hidden=10, name='fc2')


# ------------------------------------------------------------------ plot_network
def test_plot_network_returns_digraph_with_labels_and_shapes():
    dot = viz.plot_network(mlp_symbol(), shape={'data': (32, 784)})
    assert isinstance(dot, graphviz.Digraph)
    src = dot.source
    assert 'FullyConnected\\n128' in src and 'Activation\\nrelu' in src
    assert 'label=784' in src and 'label=128' in src
    # Weights and BatchNorm states are hidden by default, data is drawn.
    assert 'fc1_weight' not in src and 'bn1_moving_mean' not in src
    assert 'label=data' in src
    svg = dot.pipe('svg').decode()
    assert svg.lstrip().startswith('<?xml') or '<svg' in svg
    assert 'FullyConnected' in svg and '>784<' in svg


def test_plot_network_hide_weights_false_shows_parameter_shapes():
    src = viz.plot_network(mlp_symbol(), shape={'data': (1, 784)}, hide_weights=False).source
    assert 'fc1_weight' in src and 'bn1_moving_var' in src
    assert 'label="128x784"' in src          # parameters keep their full shape


def test_plot_network_without_shapes_and_custom_attrs():
    dot = viz.plot_network(mlp_symbol(), title='mlp', save_format='svg',
                           node_attrs={'shape': 'oval', 'fixedsize': 'false'})
    assert dot.name == 'mlp' and dot.format == 'svg'
    assert 'shape=oval' in dot.source and '->' in dot.source
    assert 'label=784' not in dot.source      # no shapes were given
    dot.pipe('svg')


def test_plot_network_errors_name_the_fix():
    with pytest.raises(ValueError, match=r"not inputs of this symbol.*data"):
        viz.plot_network(mlp_symbol(), shape={'date': (1, 784)})
    with pytest.raises(TypeError, match="sym.var"):
        viz.plot_network(mx.nd.ones((2, 2)))


def test_import_straightdope_does_not_import_graphviz():
    code = ("import sys, straightdope as mx; mx.viz; "
            "assert 'graphviz' not in sys.modules, 'core imported graphviz'")
    subprocess.run([sys.executable, '-c', code], check=True)


# ----------------------------------------------------------------- print_summary
def test_print_summary_counts_parameters(capsys):
    total = viz.print_summary(mlp_symbol(), shape={'data': (2, 784)})
    out = capsys.readouterr().out
    fc1, bn1, fc2 = 784 * 128 + 128, 4 * 128, 128 * 10 + 10
    assert total == fc1 + bn1 + fc2
    assert f"Total params: {total}" in out
    for line, count in [('fc1(FullyConnected)', fc1), ('bn1(BatchNorm)', bn1),
                        ('fc2(FullyConnected)', fc2)]:
        row = next(r for r in out.splitlines() if r.startswith(line))
        assert str(count) in row.split()
    assert 'relu1(Activation)' in out and 'bn1' in out


def test_print_summary_without_shapes(capsys):
    assert viz.print_summary(mlp_symbol()) is None
    assert 'unknown' in capsys.readouterr().out


# -------------------------------------------------------------------------- image
@pytest.fixture
def png_file(tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    path = tmp_path / 'img.png'
    PIL.fromarray(pixels).save(path)
    return path, pixels


def test_imread_and_imdecode(png_file):
    path, pixels = png_file
    img = image.imread(str(path))
    assert img.shape == (5, 7, 3) and img.dtype == np.uint8
    np.testing.assert_array_equal(img.asnumpy(), pixels)
    np.testing.assert_array_equal(image.imread(path, to_rgb=False).asnumpy(), pixels[:, :, ::-1])
    gray = image.imread(path, flag=0)
    assert gray.shape == (5, 7, 1)
    np.testing.assert_array_equal(image.imdecode(path.read_bytes()).asnumpy(), pixels)
    with pytest.raises(FileNotFoundError, match='no such file'):
        image.imread(str(path) + '.missing')
    with pytest.raises(ValueError, match='not an image'):
        image.imdecode(b'not a png at all')


def test_imresize_bilinear_and_nearest():
    ramp = np.tile(np.arange(4, dtype=np.float32), (4, 1))[:, :, None]    # x = 0..3
    same = image.imresize(ramp, 4, 4)
    np.testing.assert_allclose(same.asnumpy(), ramp)
    up = image.imresize(ramp, 8, 2).asnumpy()
    assert up.shape == (2, 8, 1)
    # Half-pixel centres: output x samples input (x + 0.5) / 2 - 0.5, clamped to [0, 3].
    expected = np.clip((np.arange(8) + 0.5) / 2 - 0.5, 0, 3)
    np.testing.assert_allclose(up[0, :, 0], expected, rtol=1e-6)
    img = np.arange(16, dtype=np.uint8).reshape(4, 4, 1)
    down = image.imresize(img, 2, 2, interp=0).asnumpy()
    assert down.dtype == np.uint8
    np.testing.assert_array_equal(down[:, :, 0], img[1::2, 1::2, 0])
    with pytest.raises(ValueError, match=r'\(H, W, C\)'):
        image.imresize(np.zeros((4, 4)), 2, 2)


def test_crops_and_normalize():
    img = mx.nd.array(np.arange(6 * 8 * 3).reshape(6, 8, 3), dtype='float32')
    out, box = image.center_crop(img, (4, 2))
    assert box == (2, 2, 4, 2) and out.shape == (2, 4, 3)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[2:4, 2:6])
    crop = image.fixed_crop(img, 1, 0, 4, 4, size=(2, 2))
    assert crop.shape == (2, 2, 3)
    with pytest.raises(ValueError, match='outside'):
        image.fixed_crop(img, 6, 0, 4, 4)
    out, (x0, y0, w, h) = image.random_crop(img, (3, 3))
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[y0:y0 + 3, x0:x0 + 3])
    assert image.resize_short(img, 3).shape == (3, 4, 3)
    assert image.scale_down((8, 6), (10, 10)) == (6, 6)
    mean, std = mx.nd.array([1., 2., 3.]), mx.nd.array([2., 2., 4.])
    norm = image.color_normalize(img, mean, std)
    np.testing.assert_allclose(norm.asnumpy(), (img.asnumpy() - [1, 2, 3]) / [2, 2, 4])
    assert img.asnumpy()[0, 0, 0] == 0       # the input is left alone
