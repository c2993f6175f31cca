"""`sym.image`: the registry's `_image_X` ops as `image.X` (normalize), as MXNet names them.
Filled in by symbol/__init__.py; nd.image is its twin for arrays."""
