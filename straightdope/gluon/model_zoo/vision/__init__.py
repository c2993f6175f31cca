"""Ready-made vision networks, MXNet Gluon's model zoo (the part this book uses).

    from straightdope.gluon.model_zoo import vision
    net = vision.resnet18_v1(classes=10, thumbnail=True)    # random weights
    net = vision.get_model('resnet50_v2', pretrained=True)  # weights from a local file

``pretrained=True`` never downloads: it reads ``{root}/{name}.params`` (see ``model_store``).
"""
from .resnet import *  # noqa: F401,F403
from .simple import *  # noqa: F401,F403
from . import resnet as _resnet, simple as _simple
from .. import model_store  # noqa: F401

_models = {name: getattr(_resnet, name) for name in _resnet.__all__
           if name.startswith('resnet') and name[6:].split('_')[0].isdigit()}
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
