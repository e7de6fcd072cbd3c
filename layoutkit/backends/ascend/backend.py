"""The Ascend backend (``target="ascend"``): its scopes, copy and GEMM checks, fill regions, op builders and
layout rules (the hooks of :class:`layoutkit.infer.target.Target`), and code generation: the passes and
lowering to :mod:`.ir`, the Ascend C printer :mod:`.ascend_c` and the executor :mod:`.execute`.  Layout
conversions are not lowered (NVIDIA stages them through shared memory).

>>> from layoutkit.infer import Program
>>> p = Program(target="ascend")
>>> p.tensor("A", (16, 16), "float16").scope, p.alloc_shared("U", (16, 16), "float16").scope
('gm', 'ub')
"""

from __future__ import annotations

from ...errors import UnsupportedError
from ...infer.ops import Region
from ...infer.program import Program
from ...scopes import FRAGMENT, LOCAL, is_shared
from ..registry import Backend
from . import program as builders
from . import rules
from .scopes import ASCEND_SCOPES, GM, UB


class AscendBackend(Backend):
    family = "ascend"
    name = "ascend"
    language = "ascend_c"
    suffix = ".cpp"
    requires_layouts = False
    scopes = ASCEND_SCOPES + (FRAGMENT, LOCAL)
    global_scope = GM
    targets = "ascend"

    def rules(self):
        return rules.RULES

    def shared_scope(self, scope: str) -> str:
        return UB if is_shared(scope) else scope

    def build_copy(self, program: Program, src: Region, dst: Region):
        return builders.ascend_copy(program, "copy", src, dst)

    def check_gemm(self, A, B, C, args: dict, what: str) -> None:
        builders.check_gemm(A, B, C, args, what)

    def fill_args(self, starts, extents) -> dict:
        return {"fill_region": tuple((int(s), int(e)) for s, e in zip(starts, extents))}

    def builders(self):
        """The Ascend form of the GEMM (``p.mad``) and the end-of-kernel check."""
        return {"mad": builders.mad, "check_end": builders.check_end}

    def tile_ops(self):
        return builders.TILE_OPS

    # ---- code generation (its modules load on first use: import layoutkit needs only the rules) ------
    def check_lowerable(self, result, where: str) -> None:
        for conv in getattr(result, "conversions", ()):
            raise UnsupportedError(f"{where}: {conv.op} reads fragment {conv.buffer} through a layout conversion "
                                   f"({conv.src.describe()} -> {conv.dst.describe()}); the Ascend lowering does not "
                                   "convert layouts: solve with a cost model that does not convert")

    def lower(self, program, result):
        from . import lower

        return lower.lower(program, result)

    def register_lowering(self, kind: str, fn) -> None:
        """``fn(lowering, op)`` appends an op of ``kind`` to the cube or vector body of ``lowering``
        (:class:`.lower.Lowering`)."""
        from .lower import LOWERINGS

        LOWERINGS.register(kind)(fn)

    def unregister_lowering(self, kind: str) -> None:
        from .lower import LOWERINGS

        LOWERINGS.unregister(kind)

    def print_source(self, kernel) -> str:
        from . import ascend_c

        return ascend_c.print_kernel(kernel)

    def execute(self, program, result, arrays: dict) -> dict:
        from . import execute, lower

        return execute.run(lower.lower(program, result), arrays)
