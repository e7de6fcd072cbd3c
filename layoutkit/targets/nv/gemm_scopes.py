"""Which memory scopes each ``T.gemm`` instruction takes its operands from (TileLang 0.1.15's per-instruction
``infer_layout``).

TileLang picks the instruction from the target, shapes and dtypes (``Gemm::SelectInst``: on sm_80 a GEMM of
``T.alloc_local`` or shared-C operands still selects MMA) and only then does the instruction look at where the
operands live.  MMA takes A / B from shared memory or registers in any pairing (``ss``, ``sr``, ``rs``,
``rr``), WGMMA and Volta's MMA need B in shared memory (``ss``, ``rs``); all three accumulate into a register
fragment.  Any other pairing stops TileLang's inference ("Unsupported gemm combination", or "local_buf must
be a fragment" for C), so the rule raises :class:`GemmScopeError` there.  The FMA fallback (sm_70 / sm_75 when
no MMA fits) takes every scope and lays out only its fragment operands; a per-thread ``local`` or a shared
accumulator gets no layout there.

>>> check_operand_scopes("mma", "shared", "shared", "local.fragment")
>>> try:
...     check_operand_scopes("mma", "local", "local", "local")
... except GemmScopeError as e:
...     print(e.operand, e.found, e.expected[:2])
A/B ('local', 'local') (('shared', 'shared'), ('shared', 'local.fragment'))
>>> try:
...     check_operand_scopes("mma", "shared", "shared", "shared")
... except GemmScopeError as e:
...     print(e.operand, e.found, e.expected)
C shared ('local.fragment',)
"""

from __future__ import annotations

from ...errors import UnsupportedError
from .copy import FRAGMENT_SCOPES, SHARED_SCOPES

_SHARED, _FRAGMENT = "shared", "local.fragment"

OPERAND_SCOPES: dict[str, tuple[tuple[str, str], ...]] = {
    "mma": ((_SHARED, _SHARED), (_SHARED, _FRAGMENT), (_FRAGMENT, _SHARED), (_FRAGMENT, _FRAGMENT)),
    "mma_sm70": ((_SHARED, _SHARED), (_FRAGMENT, _SHARED)),
    "wgmma": ((_SHARED, _SHARED), (_FRAGMENT, _SHARED)),
}
"""The (A, B) scope pairs each tensor-core instruction takes (``shared`` stands for ``shared.dyn`` too);
``mma_sm70`` is Volta's ``mma.sync.m16n16k4``."""

_TILELANG = {"mma": "GemmMMA", "mma_sm70": "GemmMMASm70", "wgmma": "GemmWGMMA"}


class GemmScopeError(UnsupportedError):
    """The selected GEMM instruction cannot take an operand from its memory scope.  Attributes:
    ``instruction`` (``mma | mma_sm70 | wgmma``), ``operand`` (``"A/B"`` or ``"C"``), ``expected`` (the
    (A, B) scope pairs, or C's scopes) and ``found`` (the pair, or C's scope)."""

    def __init__(self, message: str, instruction: str, operand: str, expected: tuple, found: object):
        super().__init__(message)
        self.instruction, self.operand, self.expected, self.found = instruction, operand, expected, found


def _kind(scope: str) -> str:
    """``shared`` for either shared scope, else the scope itself."""
    return _SHARED if scope in SHARED_SCOPES else scope


def check_operand_scopes(instruction: str, a_scope: str, b_scope: str, c_scope: str | None, arch: str = "") -> None:
    """Raise :class:`GemmScopeError` unless ``instruction`` (a key of :data:`OPERAND_SCOPES`) takes A / B from
    ``a_scope`` / ``b_scope`` and accumulates into ``c_scope`` (a fragment; None: the caller checks C); A / B
    are checked first, as TileLang's ``infer_layout`` lays them out before C.  Other instructions (``fma``,
    ``tcgen05``) check nothing here; ``arch`` names the target in the message."""
    pairs = OPERAND_SCOPES.get(instruction)
    if pairs is None:
        return
    name = _TILELANG[instruction]
    sel = f"T.gemm selects {instruction}" + (f" on {arch}" if arch else "")
    found = (_kind(a_scope), _kind(b_scope))
    if found not in pairs:
        listing = ", ".join(f"A {a} / B {b}" for a, b in pairs)
        raise GemmScopeError(f"{sel}, which cannot read A from {a_scope} with B from {b_scope}; expected one of: "
                             f"{listing} (TileLang 0.1.15's {name}.infer_layout stops there too: \"Unsupported gemm "
                             f"combination\")", instruction, "A/B", pairs, found)
    if c_scope is not None and c_scope not in FRAGMENT_SCOPES:
        raise GemmScopeError(f"{sel}, which accumulates into a register fragment (local.fragment); C is in "
                             f"{c_scope!r} (TileLang 0.1.15's {name}.infer_layout stops there too: \"local_buf must "
                             f"be a fragment\")", instruction, "C", FRAGMENT_SCOPES, c_scope)


__all__ = ["OPERAND_SCOPES", "GemmScopeError", "check_operand_scopes"]
