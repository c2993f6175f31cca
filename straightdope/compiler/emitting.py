"""What the code generator and the kernels' emitters (`kernels/`) share. Its own module
because codegen asks the kernels for their emitters: the kernels then import these
names from here, not from codegen."""


class CodegenError(ValueError):
    """The graph cannot be compiled (an op without a Numba implementation, a bad attribute)."""


class Flag(int):
    """A small integer passed to a kernel *as a literal* on purpose (an op code, a
    transpose flag): Numba then compiles the kernel once per flag value and prunes the
    branches for the other values, so each variant is small and compiles fast."""
