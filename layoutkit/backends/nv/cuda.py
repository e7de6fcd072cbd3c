"""CUDA C++ printer for :mod:`.ir` kernels (``mma.sync``, ``ldmatrix``, ``cp.async``, vector loads/stores).

Index expressions print with :func:`layoutkit.algebra.translate.to_c` (exact floor semantics); the helpers
of :data:`~layoutkit.algebra.translate.C_PRELUDE` are emitted as ``__device__`` functions.  The prelude sits
behind an include guard, so several emitted kernels concatenate into one translation unit.  The tables that
table-backed index expressions read (:class:`~layoutkit.algebra.nodes.Lookup`) are ``static __device__ const``
arrays declared in front of the kernel, each behind its own include guard.

>>> from layoutkit.algebra.nodes import Const
>>> from layoutkit.backends.nv import ir
>>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("r", "float32", 1, "reg"), ir.Buffer("y", "float32", 32, "global")),
...               (ir.Fill("r", 2.0), ir.Store("y", ir.TID, "r", Const(0), 1)))
>>> print(print_kernel(k).splitlines()[1])
extern "C" __global__ void __launch_bounds__(32) k(float* __restrict__ y) {
"""

from __future__ import annotations

from ...algebra.nodes import Expr
from ...algebra.tables import Table
from ...algebra.translate import C_PRELUDE, c_table, to_c
from ...errors import UnsupportedError
from ...scopes import GLOBAL, SHARED
from ...targets.nv.gemm_plan import mma_sync_opcode
from . import ir
from .ir import REG

CTYPE = {"float16": "half", "bfloat16": "__nv_bfloat16", "float32": "float", "int8": "signed char", "int32": "int",
         "uint8": "unsigned char"}
_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int8": 1, "int32": 4, "uint8": 1}
_FLOATS = ("float16", "bfloat16", "float32")
_VEC = {16: "uint4", 8: "uint2", 4: "unsigned", 2: "unsigned short", 1: "unsigned char"}
_ACC = {"float32": ("f", "float"), "int32": ("r", "int")}
"""Accumulator dtype -> the asm operand constraint and C type of its registers."""

PRELUDE = (
    "#ifndef LAYOUTKIT_PRELUDE\n#define LAYOUTKIT_PRELUDE\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
    + C_PRELUDE.replace("static inline", "static __device__ __forceinline__")
    + "#endif  // LAYOUTKIT_PRELUDE\n"
)


def ctype(dtype: str) -> str:
    try:
        return CTYPE[dtype]
    except KeyError:
        raise UnsupportedError(f"CUDA printer: no C type for {dtype}") from None


def _cast(dtype: str, x: str) -> str:
    if dtype == "float16":
        return f"__float2half_rn({x})"
    if dtype == "bfloat16":
        return f"__float2bfloat16_rn({x})"
    return f"({ctype(dtype)})({x})"


def _convert(src: str, dst: str, x: str) -> str:
    """``x`` of dtype ``src`` as ``dst``."""
    if src == dst:
        return x
    if src == "float16":
        x = f"__half2float({x})"
    elif src == "bfloat16":
        x = f"__bfloat162float({x})"
    return _cast(dst, x)


def _literal(value: float, dtype: str) -> str:
    """``value`` as a C expression of ``dtype`` (infinities as bit patterns: no math.h macros needed)."""
    if dtype not in _FLOATS:
        return f"({ctype(dtype)})({int(value)}LL)"
    if value != value or value in (float("inf"), float("-inf")):
        bits = {float("inf"): "0x7f800000", float("-inf"): "0xff800000"}.get(value, "0x7fc00000")
        return _cast(dtype, f"__int_as_float({bits})")
    return _cast(dtype, f"{float(value)!r}f")


def _wide(dtype: str, x: str) -> str:
    """``x`` in the compute type: ``float`` for floating dtypes, ``long long`` for integers."""
    return _convert(dtype, "float32", x) if dtype in _FLOATS else f"(long long)({x})"


def _result(expr: str, floating: bool, dtype: str) -> str:
    """A compute-type expression cast to ``dtype``."""
    return _convert("float32", dtype, expr) if floating else _cast(dtype, expr)


def c_fn(fn: str, args: list[str], floating: bool) -> str:
    """The C expression of ``fn`` (:data:`~layoutkit.backends.nv.ir.COMPUTE_FNS`) on compute-type operands.

    >>> c_fn("max", ["a", "b"], True), c_fn("add", ["a", "b"], False)
    ('fmaxf(a, b)', '(a + b)')
    """
    return ir.compute_fn(fn, len(args), "CUDA printer").c(tuple(args), floating)


class Printer:
    def __init__(self, kernel: ir.Kernel):
        self.k = kernel
        self.lines: list[str] = []
        self.depth = 1
        self.tables: dict[Table, str] = {}
        """The tables the kernel's index expressions read (:class:`~layoutkit.algebra.nodes.Lookup`), by the name
        of the constant array declared for each, once, in front of the kernel."""

    def table_name(self, table: Table) -> str:
        return self.tables.setdefault(table, f"lk_table_{table.name}")

    def e(self, x) -> str:
        return to_c(x, self.table_name) if isinstance(x, Expr) else str(int(x))

    def guard(self, g) -> str:
        return " && ".join(f"({self.e(e)}) < {b}" for e, b in g) or "true"

    def declarations(self) -> list[str]:
        """The constant arrays of the tables read so far (each behind an include guard named after it, so
        kernels of one module that read one table share its definition)."""
        return [c_table(t, name, "static __device__ const") for t, name in self.tables.items()]

    def emit(self, text: str) -> None:
        self.lines.extend("  " * self.depth + t for t in text.splitlines())

    def block(self, body) -> None:
        for st in body:
            getattr(self, type(st).__name__)(st)

    def For(self, st: ir.For) -> None:
        if st.unroll or st.rolled:
            self.emit("#pragma unroll" if st.unroll else "#pragma unroll 1")
        v = st.var.name
        self.emit(f"for (int {v} = 0; {v} < {st.extent}; ++{v}) {{")
        self.depth += 1
        self.block(st.body)
        self.depth -= 1
        self.emit("}")

    def Barrier(self, st) -> None:
        self.emit("__syncthreads();")

    def CommitGroup(self, st) -> None:
        self.emit('asm volatile("cp.async.commit_group;\\n" ::);')

    def WaitGroup(self, st) -> None:
        self.emit(f'asm volatile("cp.async.wait_group {int(st.n)};\\n" ::);')

    def Fill(self, st: ir.Fill) -> None:
        b = self.k.buffer(st.buffer)
        value = _literal(st.value, b.dtype)
        self.emit(f"#pragma unroll\nfor (int i = 0; i < {b.size}; ++i) {{ {b.name}[i] = {value}; }}")

    def Copy(self, st: ir.Copy) -> None:
        dt = self.k.buffer(st.dst).dtype
        nbytes = st.vec * _BYTES[dt]
        ok, d, s = self.guard(st.guard), self.e(st.dst_addr), self.e(st.src_addr)
        if st.mask:
            self.emit(f"if ({self.guard(st.mask)}) {{")
            self.depth += 1
        if st.async_ and not st.guard:  # in bounds for every thread: no src-size operand
            cache = "cg" if nbytes == 16 else "ca"
            self.emit(
                f"{{ const unsigned sa = (unsigned)__cvta_generic_to_shared(&{st.dst}[{d}]);\n"
                f'  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes};\\n" :: "r"(sa), '
                f'"l"(&{st.src}[{s}])); }}'
            )
        elif st.async_:
            cache = "cg" if nbytes == 16 else "ca"
            self.emit(
                f"{{ const bool ok = {ok};\n"
                f"  const unsigned sa = (unsigned)__cvta_generic_to_shared(&{st.dst}[{d}]);\n"
                f'  asm volatile("cp.async.{cache}.shared.global [%0], [%1], {nbytes}, %2;\\n" :: "r"(sa), '
                f'"l"(&{st.src}[ok ? ({s}) : 0]), "r"(ok ? {nbytes} : 0)); }}'
            )
        else:
            vt = _VEC[nbytes]
            if st.guard:
                self.emit(f"{{ {vt} v = {{}}; if ({ok}) {{ v = *reinterpret_cast<const {vt}*>(&{st.src}[{s}]); }}\n"
                          f"  *reinterpret_cast<{vt}*>(&{st.dst}[{d}]) = v; }}")
            else:
                self.emit(f"*reinterpret_cast<{vt}*>(&{st.dst}[{d}]) = *reinterpret_cast<const {vt}*>(&{st.src}[{s}]);")
        if st.mask:
            self.depth -= 1
            self.emit("}")

    def Ldmatrix(self, st: ir.Ldmatrix) -> None:
        regs = ", ".join(f"%{i}" for i in range(st.num))
        outs = ", ".join(f'"=r"(r[{i}])' for i in range(st.num))
        tr = ".trans" if st.trans else ""
        self.emit(
            f"{{ unsigned* r = reinterpret_cast<unsigned*>(&{st.dst}[{self.e(st.dst_off)}]);\n"
            f"  const unsigned sa = (unsigned)__cvta_generic_to_shared(&{st.src}[{self.e(st.addr)}]);\n"
            f'  asm volatile("ldmatrix.sync.aligned.m8n8.x{st.num}{tr}.shared.b16 {{{regs}}}, [%{st.num}];\\n" : '
            f'{outs} : "r"(sa)); }}'
        )

    def Mma(self, st: ir.Mma) -> None:
        dt, acc = self.k.buffer(st.a[0]).dtype, self.k.buffer(st.c[0]).dtype
        if acc not in _ACC:
            raise UnsupportedError(f"CUDA printer: mma {st.shape} into {acc} registers is not printed; printed: "
                                   f"{sorted(_ACC)}")
        inst = mma_sync_opcode(st.shape, dt, self.k.buffer(st.b[0]).dtype, acc)
        cc, ct = _ACC[acc]
        if st.shape == "m16n8k8" and dt in ("float16", "bfloat16"):  # Turing: two A registers, one B register
            self.emit(
                f"{{ const unsigned* a = reinterpret_cast<const unsigned*>(&{st.a[0]}[{self.e(st.a[1])}]);\n"
                f"  const unsigned* b = reinterpret_cast<const unsigned*>(&{st.b[0]}[{self.e(st.b[1])}]);\n"
                f"  {ct}* c = reinterpret_cast<{ct}*>(&{st.c[0]}[{self.e(st.c[1])}]);\n"
                f'  asm volatile("{inst} {{%0, %1, %2, %3}}, {{%4, %5}}, {{%6}}, {{%7, %8, %9, %10}};\\n"\n'
                f'    : "={cc}"(c[0]), "={cc}"(c[1]), "={cc}"(c[2]), "={cc}"(c[3])\n'
                f'    : "r"(a[0]), "r"(a[1]), "r"(b[0]), "{cc}"(c[0]), "{cc}"(c[1]), "{cc}"(c[2]), "{cc}"(c[3])); }}'
            )
            return
        self.emit(
            f"{{ const unsigned* a = reinterpret_cast<const unsigned*>(&{st.a[0]}[{self.e(st.a[1])}]);\n"
            f"  const unsigned* b = reinterpret_cast<const unsigned*>(&{st.b[0]}[{self.e(st.b[1])}]);\n"
            f"  {ct}* c = reinterpret_cast<{ct}*>(&{st.c[0]}[{self.e(st.c[1])}]);\n"
            f'  asm volatile("{inst} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%10, %11, %12, %13}};\\n"\n'
            f'    : "={cc}"(c[0]), "={cc}"(c[1]), "={cc}"(c[2]), "={cc}"(c[3])\n'
            f'    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),\n'
            f'      "{cc}"(c[0]), "{cc}"(c[1]), "{cc}"(c[2]), "{cc}"(c[3])); }}'
        )

    def Load(self, st: ir.Load) -> None:
        sdt, rdt = self.k.buffer(st.src).dtype, self.k.buffer(st.dst).dtype
        nbytes = st.vec * _BYTES[sdt]
        a, o = self.e(st.src_addr), self.e(st.dst_off)
        if sdt == rdt and not st.guard:  # an unguarded element or vector (shared -> registers)
            if st.vec == 1:
                self.emit(f"{st.dst}[{o}] = {st.src}[{a}];")
            else:
                self.emit(" ".join(f"*reinterpret_cast<{vt}*>(&{st.dst}[{o}{x}]) = "
                                   f"*reinterpret_cast<const {vt}*>(&{st.src}[{a}{x}]);"
                                   for vt, x in _pieces(nbytes, sdt)))
        elif sdt == rdt and (nbytes in _VEC or nbytes % 16 == 0):
            for vt, x in _pieces(nbytes, sdt):
                load = f"v = *reinterpret_cast<const {vt}*>(&{st.src}[{a}{x}]);"
                self.emit(f"{{ {vt} v = {{}}; if ({self.guard(st.guard)}) {{ {load} }}\n"
                          f"  *reinterpret_cast<{vt}*>(&{st.dst}[{o}{x}]) = v; }}")
        elif not st.guard:
            self.emit(" ".join(f"{st.dst}[{o} + {v}] = {_convert(sdt, rdt, f'{st.src}[{a} + {v}]')};"
                               for v in range(st.vec)))
        else:
            zero = _cast(rdt, "0")
            body = " ".join(f"{st.dst}[{o} + {v}] = ok ? {_convert(sdt, rdt, f'{st.src}[{a} + {v}]')} : {zero};"
                            for v in range(st.vec))
            self.emit(f"{{ const bool ok = {self.guard(st.guard)}; {body} }}")

    def Move(self, st: ir.Move) -> None:
        sdt, ddt = self.k.buffer(st.src).dtype, self.k.buffer(st.dst).dtype
        x = f"{st.src}[{self.e(st.src_off)} + i]"
        if st.fn == "relu":
            val = _result(c_fn("relu", [_wide(sdt, x)], sdt in _FLOATS), sdt in _FLOATS, ddt)
        elif st.fn == "copy":
            val = _convert(sdt, ddt, x)
        else:
            raise UnsupportedError(f"CUDA printer: move function {st.fn!r}; expected one of {ir.MOVE_FNS}")
        dst = f"{st.dst}[{self.e(st.dst_off)} + i]"
        self.emit(f"#pragma unroll\nfor (int i = 0; i < {st.count}; ++i) {{ {dst} = {val}; }}")


    def Compute(self, st: ir.Compute) -> None:
        dts = {self.k.buffer(b).dtype for b, _ in st.srcs}
        floating = bool(dts & set(_FLOATS))
        args = []
        for b, o in st.srcs:
            dt = self.k.buffer(b).dtype
            x = f"{b}[{int(o)}]"
            args.append(_convert(dt, "float32", x) if floating else f"(long long)({x})")
        ddt = self.k.buffer(st.dst).dtype
        line = f"{st.dst}[{int(st.dst_off)}] = {_result(c_fn(st.fn, args, floating), floating, ddt)};"
        self.emit(f"if ({self.guard(st.guard)}) {line}" if st.guard else line)

    def ShflXor(self, st: ir.ShflXor) -> None:
        dt = self.k.buffer(st.buffer).dtype
        x = f"{st.buffer}[{int(st.off)}]"
        other = f"__shfl_xor_sync(0xffffffffu, {x}, {int(st.mask)})"
        floating = dt in _FLOATS
        args = [_convert(dt, "float32", v) if floating else f"(long long)({v})" for v in (x, other)]
        expr = c_fn(st.fn, args, floating)
        self.emit(f"{x} = {_result(expr, floating, dt)};")

    def Prmt(self, st: ir.Prmt) -> None:
        (ab, ao), (bb, bo) = st.a, st.b
        sel = (f'"r"((unsigned)({self.e(st.selector)}))' if isinstance(st.selector, Expr)
               else f'"n"({int(st.selector) & 0xFFFF:#06x})')
        self.emit(
            f"{{ const unsigned* a = reinterpret_cast<const unsigned*>(&{ab}[{int(ao)}]);\n"
            f"  const unsigned* b = reinterpret_cast<const unsigned*>(&{bb}[{int(bo)}]);\n"
            f"  unsigned* d = reinterpret_cast<unsigned*>(&{st.dst}[{int(st.dst_off)}]);\n"
            f'  asm volatile("prmt.b32 %0, %1, %2, %3;\\n" : "=r"(d[0]) : "r"(a[0]), "r"(b[0]), {sel}); }}'
        )

    def Store(self, st: ir.Store) -> None:
        dt = self.k.buffer(st.dst).dtype
        d, o = self.e(st.dst_addr), self.e(st.src_off)
        sdt = self.k.buffer(st.src).dtype
        vals = [_convert(sdt, dt, f"{st.src}[{o} + {v}]") for v in range(st.vec)]
        nbytes = st.vec * _BYTES[dt]
        if sdt == dt and st.vec > 1 and (nbytes in _VEC or nbytes % 16 == 0):
            body = " ".join(f"*reinterpret_cast<{vt}*>(&{st.dst}[{d}{x}]) = "
                            f"*reinterpret_cast<const {vt}*>(&{st.src}[{o}{x}]);" for vt, x in _pieces(nbytes, dt))
        elif st.vec == 2 and dt == "float16":
            body = f"*reinterpret_cast<half2*>(&{st.dst}[{d}]) = __halves2half2({vals[0]}, {vals[1]});"
        else:
            body = " ".join(f"{st.dst}[{d} + {v}] = {vals[v]};" for v in range(st.vec))
        self.emit(f"if ({self.guard(st.guard)}) {{ {body} }}" if st.guard else body)


def _pieces(nbytes: int, dtype: str) -> list[tuple[str, str]]:
    """A vector access of ``nbytes`` as ``(vector type, element offset suffix)`` pieces of at most 16 bytes.

    >>> _pieces(8, "float16"), _pieces(32, "float32")
    ([('uint2', '')], [('uint4', ''), ('uint4', ' + 4')])
    """
    if nbytes <= 16:
        return [(_VEC[nbytes], "")]
    per = 16 // _BYTES[dtype]
    return [("uint4", f" + {k * per}" if k else "") for k in range(nbytes // 16)]


def _written(body) -> set[str]:
    out: set[str] = set()
    for st in body:
        if isinstance(st, ir.For):
            out |= _written(st.body)
        elif isinstance(st, ir.Store):
            out.add(st.dst)
    return out


def shared_offsets(kernel: ir.Kernel) -> dict[str, int]:
    """Byte offset of each shared buffer in the dynamic shared memory (128-byte aligned, declaration order).

    >>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("s", "float16", 100, "shared"), ir.Buffer("t", "float32", 4,
    ...                                                                                        "shared")), ())
    >>> shared_offsets(k)
    {'s': 0, 't': 256}
    """
    out, off = {}, 0
    for b in kernel.scoped(SHARED):
        out[b.name] = off
        off += -(-b.size * _BYTES[b.dtype] // 128) * 128
    return out


def smem_bytes(kernel: ir.Kernel) -> int:
    """Dynamic shared memory the kernel needs (launch with it; above 48 KiB set
    ``cudaFuncAttributeMaxDynamicSharedMemorySize``).

    >>> smem_bytes(ir.Kernel("k", 32, (1, 1), (ir.Buffer("s", "float16", 100, "shared"),), ()))
    256
    """
    return sum(-(-b.size * _BYTES[b.dtype] // 128) * 128 for b in kernel.scoped(SHARED))


def print_kernel(kernel: ir.Kernel) -> str:
    """The ``__global__`` function of ``kernel`` (launch: ``grid = kernel.grid``, ``block = kernel.threads``;
    global parameters in declaration order, ``const`` when no statement writes them).

    >>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("y", "float32", 32, "global"),), (ir.Fill("y", 0.0),))
    >>> print_kernel(k).splitlines()[0]
    '// launch k: grid (1, 1), block 32, dynamic shared memory 0 bytes'
    """
    written = _written(kernel.body)
    params = ", ".join(f"{'' if b.name in written else 'const '}{ctype(b.dtype)}* __restrict__ {b.name}"
                       for b in kernel.scoped(GLOBAL))
    p = Printer(kernel)
    p.emit("const int tid = threadIdx.x;\nconst int bx = blockIdx.x;\nconst int by = blockIdx.y;")
    if kernel.scoped(SHARED):
        p.emit("extern __shared__ __align__(128) unsigned char lk_smem[];")
    for b, off in shared_offsets(kernel).items():
        t = ctype(kernel.buffer(b).dtype)
        p.emit(f"{t}* {b} = reinterpret_cast<{t}*>(lk_smem + {off});")
    for b in kernel.scoped(REG):
        p.emit(f"__align__(16) {ctype(b.dtype)} {b.name}[{b.size}];")
    p.block(kernel.body)
    gx, gy = kernel.grid
    launch = (f"// launch {kernel.name}: grid ({gx}, {gy}), block {kernel.threads}, "
              f"dynamic shared memory {smem_bytes(kernel)} bytes\n")
    head = launch + f'extern "C" __global__ void __launch_bounds__({kernel.threads}) {kernel.name}({params}) {{'
    return "\n".join([*p.declarations(), head, *p.lines, "}"]) + "\n"


def print_module(kernels) -> str:
    """A translation unit: the prelude (includes, bf16 / tf32 helpers) and each kernel.

    >>> k = ir.Kernel("k", 32, (1, 1), (ir.Buffer("y", "float32", 32, "global"),), (ir.Fill("y", 0.0),))
    >>> print_module([k]).count("__global__")
    1
    """
    return PRELUDE + "\n" + "\n".join(print_kernel(k) for k in kernels)
