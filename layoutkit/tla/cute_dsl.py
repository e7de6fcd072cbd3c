"""The CuTe DSL bridge: CuTe DSL (``nvidia-cutlass-dsl``, the ``cute`` extra) layouts, swizzles and
composed layouts to and from ``tla`` values, exact both ways.

CuTe DSL builds its layouts as IR while a ``@cute.jit`` function is traced, so both functions are
called there; ``cute.compile(fn)`` traces a function on a machine without a GPU.  A static CuTe DSL
layout (every shape and stride a Python int) becomes a ``tla.Layout`` of static ints, which lives on
after the trace: layoutkit can then prove, draw and bank-check it, and :func:`~layoutkit.tla.tv.tv_fragment`
reads the TV layouts of tiled MMAs and copies as Fragments.

Laws (checked element for element against CuTe DSL in the oracle tests): ``from_cute_dsl(x)(c) ==
x(c)`` for every coordinate ``c``; ``from_cute_dsl(to_cute_dsl(L)) == make_static(L)`` for a
``tla.Layout`` ``L`` (CuTe layouts have no TLA ``origin_shape``: it is dropped), and the same with
swizzles and composed layouts.  CuTe DSL writes a composition as ``inner o offset o outer`` with
``outer`` applied first; ``tla.ComposedLayout(outer, offset, inner)`` applies ``inner`` first, so the
names swap and the function is the same.

Without CuTe DSL both raise :class:`~layoutkit.errors.UnsupportedError` naming the extra
(``_cute`` shows the message).
"""

from __future__ import annotations

import numbers
from typing import Any

from ..errors import LimitError, UnsupportedError
from .layout import Layout
from .static_int import Int
from .swizzle import ComposedLayout, Swizzle

CUTE_DSL_VERSION = "4.8.1"
"""The ``nvidia-cutlass-dsl`` release the bridge is checked against (the ``cute`` extra pins it)."""
INT32_MAX = 2**31 - 1
"""CuTe DSL shapes and strides are 32-bit integers."""


def _cute(what: str) -> Any:
    """The ``cutlass.cute`` module, or :class:`UnsupportedError` naming the extra that installs it.

    >>> _missing_message("from_cute_dsl")[:76]
    "from_cute_dsl: expected the CuTe DSL package (nvidia-cutlass-dsl, the 'cute'"
    """
    try:
        import cutlass.cute as cute
    except ImportError as err:
        raise UnsupportedError(_missing_message(what)) from err
    return cute


def _missing_message(what: str) -> str:
    return (f"{what}: expected the CuTe DSL package (nvidia-cutlass-dsl, the 'cute' extra: pip install "
            f"'layoutkit[cute]') to be installed; found no importable cutlass.cute")


def _int_tuple(cute: Any, x: object, what: str, path: tuple[int, ...] = ()) -> object:
    """A static CuTe DSL IntTuple as an IntTuple of static ``tla.Int`` s (a dynamic or basis leaf is refused
    with its mode path)."""
    if isinstance(x, tuple):
        return tuple(_int_tuple(cute, v, what, path + (k,)) for k, v in enumerate(x))
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return Int(int(x))
    where = f"{what} leaf at mode {path}" if path else what
    if isinstance(x, cute.ScaledBasis):
        kind = "a basis stride (E(k)), which maps into coordinates, not offsets"
    elif not cute.is_static(x):
        kind = "dynamic: known only at run time"
    else:
        kind = f"a {type(x).__name__}"
    raise UnsupportedError(f"from_cute_dsl: expected static integers; the {where} is {x} ({kind}); a tla layout "
                           "needs every shape and stride known while the function is traced")


def from_cute_dsl(obj: object) -> Layout | ComposedLayout | Swizzle:
    """The ``tla`` value of a CuTe DSL ``Layout``, ``ComposedLayout`` or ``Swizzle`` (module doc); call it
    inside the ``@cute.jit`` function that built ``obj``.

    Raises :class:`~layoutkit.errors.UnsupportedError` for a dynamic shape or stride, a basis
    (``E(k)``) stride, a coordinate offset, or anything else.

    Needs CuTe DSL (skipped as a doctest):

    >>> import cutlass.cute as cute  # doctest: +SKIP
    >>> from layoutkit import tla
    >>> out = {}
    >>> @cute.jit  # doctest: +SKIP
    ... def trace():
    ...     sw = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout((8, 64), stride=(64, 1)))
    ...     out["sw"] = tla.from_cute_dsl(sw)
    >>> _ = cute.compile(trace)  # traced on the CPU, never launched  # doctest: +SKIP
    >>> str(out["sw"]), out["sw"](3, 9)  # doctest: +SKIP
    ('Sw<3,3,3> o 0 o (_8,_64):(_64,_1)', 209)
    """
    cute = _cute("from_cute_dsl")
    if isinstance(obj, cute.Swizzle):
        return Swizzle(int(obj.num_bits), int(obj.num_base), int(obj.num_shift))
    if isinstance(obj, cute.ComposedLayout):
        offset = obj.offset
        if not isinstance(offset, numbers.Integral) or isinstance(offset, bool):
            raise UnsupportedError(f"from_cute_dsl: expected an integer offset in {obj}; found {offset} (a "
                                   "coordinate offset has no tla.ComposedLayout)")
        return ComposedLayout(from_cute_dsl(obj.inner), int(offset), from_cute_dsl(obj.outer))
    if isinstance(obj, cute.Layout):
        return Layout(_int_tuple(cute, obj.shape, "shape"), _int_tuple(cute, obj.stride, "stride"))
    raise UnsupportedError(f"from_cute_dsl: expected a CuTe DSL Layout, ComposedLayout or Swizzle; found "
                           f"{type(obj).__name__}")


def _plain(x: object, what: str, layout: object) -> object:
    """An IntTuple as Python ints (CuTe DSL's static integers), refusing what a 32-bit CuTe layout cannot hold."""
    if isinstance(x, tuple):
        return tuple(_plain(v, what, layout) for v in x)
    v = int(x)  # type: ignore[call-overload]
    if abs(v) > INT32_MAX:
        raise LimitError(f"to_cute_dsl: CuTe DSL layouts hold 32-bit integers; {layout} has {what} {v}",
                         INT32_MAX, v)
    return v


def to_cute_dsl(layout: Layout | ComposedLayout | Swizzle) -> Any:
    """The CuTe DSL value of a ``tla.Layout``, ``tla.ComposedLayout`` or ``tla.Swizzle`` (module doc); call it
    inside a ``@cute.jit`` function.  Every integer becomes a static CuTe DSL integer.

    Raises :class:`~layoutkit.errors.UnsupportedError` for another type or when CuTe DSL refuses to
    build the value (outside a traced function), :class:`~layoutkit.errors.LimitError` for an integer
    past 32 bits.

    Needs CuTe DSL (skipped as a doctest):

    >>> import cutlass.cute as cute  # doctest: +SKIP
    >>> from layoutkit import tla
    >>> @cute.jit  # doctest: +SKIP
    ... def trace():
    ...     print(tla.to_cute_dsl(tla.make_layout((4, (2, 3)), (2, (1, 8)))))
    >>> _ = cute.compile(trace)  # traced on the CPU, never launched  # doctest: +SKIP
    (4,(2,3)):(2,(1,8))
    """
    cute = _cute("to_cute_dsl")
    from cutlass.base_dsl.common import DSLBaseError

    if not isinstance(layout, (Layout, ComposedLayout, Swizzle)):
        raise UnsupportedError(f"to_cute_dsl: expected a tla Layout, ComposedLayout or Swizzle; found "
                               f"{type(layout).__name__}")
    try:
        return _build(cute, layout)
    except DSLBaseError as err:
        raise UnsupportedError(
            f"to_cute_dsl: CuTe DSL could not build {layout} ({type(err).__name__}); its layouts exist only while "
            "a @cute.jit function is traced: call to_cute_dsl there (cute.compile(fn) traces one on a CPU)"
        ) from err


def _build(cute: Any, x: Layout | ComposedLayout | Swizzle) -> Any:
    if isinstance(x, Swizzle):
        return cute.make_swizzle(x.bits, x.base, x.shift)
    if isinstance(x, ComposedLayout):
        return cute.make_composed_layout(_build(cute, x.outer), x.offset, _build(cute, x.inner))
    return cute.make_layout(_plain(x.shape, "shape", x), stride=_plain(x.stride, "stride", x))


__all__ = ["CUTE_DSL_VERSION", "from_cute_dsl", "to_cute_dsl"]
