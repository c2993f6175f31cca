"""`python -m straightdope.warmup`: compile straightdope's kernels for this machine, once.

A setup step (`make venv` and Binder run it): see `straightdope/compiler/warmup.py`.
"""
import sys

from .compiler.warmup import kernels_missing, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
