"""Ready-made vision networks: MXNet 1.9.1 Gluon's whole model zoo (ResNet, AlexNet, DenseNet,
Inception-v3, MobileNet V1/V2, SqueezeNet, VGG), with MXNet's structure and parameter names,
so MXNet's own .params files load; plus the book's LeNet and MLP.

    from straightdope.gluon.model_zoo import vision
    net = vision.resnet18_v1(classes=10, thumbnail=True)    # random weights
    net = vision.get_model('resnet50_v2', pretrained=True)  # weights from a local file
    net = vision.get_model('mobilenetv2_0.5', classes=10)   # MXNet's names

``pretrained=True`` never downloads: it reads ``{root}/{name}.params`` (see ``model_store``).
"""
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .simple import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403
from . import resnet as _resnet, simple as _simple
from .. import model_store  # noqa: F401

# MXNet's names (get_model's keys), which are also the .params file names pretrained=True reads.
# (The modules alexnet and inception are shadowed by their functions, hence no module lookups.)
_models = {name: getattr(_resnet, name) for name in _resnet.__all__
           if name.startswith('resnet') and name[6:].split('_')[0].isdigit()}
_models.update({
    'vgg11': vgg11, 'vgg13': vgg13, 'vgg16': vgg16, 'vgg19': vgg19,              # noqa: F405
    'vgg11_bn': vgg11_bn, 'vgg13_bn': vgg13_bn, 'vgg16_bn': vgg16_bn,           # noqa: F405
    'vgg19_bn': vgg19_bn, 'alexnet': alexnet,                                   # noqa: F405
    'densenet121': densenet121, 'densenet161': densenet161,                     # noqa: F405
    'densenet169': densenet169, 'densenet201': densenet201,                     # noqa: F405
    'squeezenet1.0': squeezenet1_0, 'squeezenet1.1': squeezenet1_1,             # noqa: F405
    'inceptionv3': inception_v3,                                                # noqa: F405
    'mobilenet1.0': mobilenet1_0, 'mobilenet0.75': mobilenet0_75,               # noqa: F405
    'mobilenet0.5': mobilenet0_5, 'mobilenet0.25': mobilenet0_25,               # noqa: F405
    'mobilenetv2_1.0': mobilenet_v2_1_0, 'mobilenetv2_0.75': mobilenet_v2_0_75,  # noqa: F405
    'mobilenetv2_0.5': mobilenet_v2_0_5, 'mobilenetv2_0.25': mobilenet_v2_0_25})  # noqa: F405
_models.update({'lenet': _simple.lenet, 'mlp': _simple.mlp})


def get_model(name, **kwargs):
    """A model by name, e.g. ``get_model('resnet18_v1', classes=10)``.

    Keyword arguments go to the constructor: pretrained, ctx, root, classes, thumbnail, ...
    """
    key = name.lower()
    if key not in _models:
        raise ValueError(f"model {name!r} is not in the model zoo; available: "
                         f"{', '.join(sorted(_models))}")
    return _models[key](**kwargs)
