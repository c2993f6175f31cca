"""All operators, declared once. Importing this package fills the registry."""
from .registry import OPS, Op, OpError, get_op, list_ops, register  # noqa: F401
from . import elemwise, reduce, shape, nn, ctc  # noqa: F401  (each family registers its ops)
from . import control_flow  # noqa: F401  (foreach, while_loop, cond)
from . import cached_graph  # noqa: F401  (_CachedOp: a hybridized block as one node)
from . import optimizer_updates, indexing  # noqa: F401  (sgd_update, ..., take, batch_take)
from . import sorting  # noqa: F401  (sort, argsort, topk)
from . import linalg  # noqa: F401  (linalg.gemm, potrf, syevd, ...)
from . import rnn  # noqa: F401  (RNN, the fused recurrent op: inference)
from . import sequence  # noqa: F401  (SequenceMask, SequenceLast, SequenceReverse)
from . import np_ops  # noqa: F401  (mx.np functions that move elements: roll, pad, insert, ...)
from . import np_stats  # noqa: F401  (histogram, bincount, unique, average, einsum, ...)
from . import sampling  # noqa: F401  (_sample_multinomial)
from . import custom  # noqa: F401  (Custom: ops written in Python, mx.operator.CustomOp)
