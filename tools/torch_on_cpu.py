"""Tensors asked for on ``cuda`` made on the CPU, for the suite tools that build kernels without a GPU
(``tilelang_suite.py``, ``gluon_suite.py``): kernels are only built, never run."""

from __future__ import annotations


def tensors_on_cpu(torch, factories) -> None:
    """Patch ``torch``'s tensor ``factories`` and ``Tensor.to`` / ``Tensor.cuda`` so a ``cuda`` device is the CPU."""

    def on_cuda(value) -> bool:
        return isinstance(value, (str, torch.device)) and "cuda" in str(value)

    def wrap(fn):
        def call(*args, **kwargs):
            if on_cuda(kwargs.get("device")):
                kwargs["device"] = "cpu"
            return fn(*args, **kwargs)
        return call

    for factory in factories:
        if hasattr(torch, factory):
            setattr(torch, factory, wrap(getattr(torch, factory)))
    original_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple("cpu" if on_cuda(a) else a for a in args)
        if on_cuda(kwargs.get("device")):
            kwargs["device"] = "cpu"
        return original_to(self, *args, **kwargs)

    torch.Tensor.to = to
    torch.Tensor.cuda = lambda self, *a, **k: self
