"""Devices. straightdope computes on the CPU only; `cpu()` is the one context."""


class _ClassProperty(type):
    @property
    def default_ctx(cls):
        """MXNet 1.x's deprecated `Context.default_ctx`: the current context (cpu(0))."""
        return current_context()


class Context(metaclass=_ClassProperty):
    def __init__(self, device_type="cpu", device_id=0):
        if device_type not in ("cpu", "gpu", "cpu_pinned", "cpu_shared"):
            raise ValueError(f"unknown device type {device_type!r}")
        self.device_type, self.device_id = device_type, device_id

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    def __eq__(self, other):
        return isinstance(other, Context) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


Device = Context


def cpu(device_id=0):
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """MXNet's page-locked CPU memory (faster copies to a GPU). Here it is ordinary memory
    under another name, so code that pins its batches runs unchanged."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """A GPU context; straightdope cannot compute on it (there is no GPU code here)."""
    return Context("gpu", device_id)


def num_gpus():
    return 0


def current_context():
    return cpu()


def check_context(ctx):
    """Refuse GPU contexts early with an explanation instead of failing later."""
    if isinstance(ctx, (list, tuple)):
        for c in ctx:
            check_context(c)
        return
    if ctx is not None and getattr(ctx, "device_type", "cpu") == "gpu":
        raise ValueError(f"{ctx}: straightdope runs on the CPU only; use straightdope.cpu() "
                         f"(or leave ctx out)")
