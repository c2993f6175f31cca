"""`nd.image`: the registry's `_image_X` ops as `image.X` (normalize), as MXNet names them.
Filled in by ndarray/__init__.py; sym.image is its twin for symbols."""
