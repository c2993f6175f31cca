"""Predefined networks (``model_zoo.vision``) and where their weights live (``model_store``)."""
from . import model_store, vision  # noqa: F401
