"""Where pretrained weights live: local files only, never a download.

MXNet's model zoo downloads ``.params`` files from the internet. straightdope never goes
online: ``pretrained=True`` reads ``{root}/{name}.params``, a file written by
``net.save_parameters(path)`` here or in MXNet (MXNet's own zoo files load too). The
default root is ``~/.straightdope/models`` (or ``$STRAIGHTDOPE_HOME/models`` when that
variable is set)::

    net = vision.resnet18_v1()                 # train it, or load weights another way
    net.initialize(); net(mx.nd.ones((1, 3, 224, 224)))
    net.save_parameters(vision.model_store.model_path('resnet18_v1'))
    net2 = vision.resnet18_v1(pretrained=True) # now finds the file
"""
from __future__ import annotations

import os

__all__ = ['default_root', 'model_path', 'get_model_file', 'purge', 'PretrainedWeightsMissing']


class PretrainedWeightsMissing(FileNotFoundError):
    """``pretrained=True`` but no weights file: says where to put one and how to make it."""


def default_root():
    """``$STRAIGHTDOPE_HOME/models`` if that variable is set, else ``~/.straightdope/models``."""
    from ... import config
    return os.path.join(str(config.home()), 'models')


def model_path(name, root=None):
    """The file ``pretrained=True`` reads for model `name` (whether or not it exists)."""
    root = default_root() if root is None else os.path.expanduser(os.fspath(root))
    return os.path.join(root, f"{name}.params")


def get_model_file(name, root=None):
    """The path of model `name`'s weights; a clear error when the file is not there."""
    path = model_path(name, root)
    if os.path.isfile(path):
        return path
    raise PretrainedWeightsMissing(
        f"No pretrained weights for '{name}': {path} does not exist, and straightdope never "
        f"downloads anything. Put a parameter file written by save_parameters() there, e.g.\n"
        f"    net = model_zoo.vision.get_model('{name}')\n"
        f"    net.initialize()\n"
        f"    net(x)                      # one batch, so that every shape is known\n"
        f"    ...                         # train it\n"
        f"    net.save_parameters({path!r})\n"
        f"or pass root='<folder holding {name}.params>'. A file of MXNet's own model zoo (renamed "
        f"to {name}.params) works too. Or use pretrained=False for random weights.")


def purge(root=None):
    """Delete every ``*.params`` file in `root` (the default root if None)."""
    root = os.path.dirname(model_path('x', root))
    if not os.path.isdir(root):
        return
    for fname in os.listdir(root):
        if fname.endswith('.params'):
            os.remove(os.path.join(root, fname))
