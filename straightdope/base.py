"""Errors that students meet, each with a message that says what to do."""


class MXNetError(RuntimeError):
    """Kept under MXNet's name so that `except mx.base.MXNetError` works."""


class NotImplementedForSymbol(TypeError):
    """A Python operation that needs a value was applied to a Symbol (a placeholder)."""

    def __init__(self, symbol_name, what, instead):
        self.symbol_name, self.what = symbol_name, what
        super().__init__(
            f"{what} is not possible on Symbol '{symbol_name}'. While a HybridBlock is being "
            f"hybridized (traced), its inputs are Symbols: placeholders in a graph that is "
            f"being built, with no numbers in them yet. Python code that needs a value runs "
            f"only once, at trace time, and cannot see the data of later calls. "
            f"Instead: {instead}")
