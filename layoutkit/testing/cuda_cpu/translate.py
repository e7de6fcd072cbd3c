"""Printed CUDA -> host C++ for the CPU harness: inline PTX becomes calls into ``lk_cuda_cpu.h``.

The translation is textual and strict: it knows the shapes of statement the CUDA printer writes (kernel
signature, shared and register declarations, ``reinterpret_cast`` vector accesses, ``asm volatile``
statements with their operand lists) and raises :class:`TranslationError` on anything else, so a printer
change that the harness would misread fails loudly.  Line numbers are kept: each translated line stays on
its source line, so the harness's messages name lines of the printed ``.cu`` file.  The sm_90 instructions
(TMA, mbarriers, ``wgmma``, ``stmatrix``, bulk stores) become calls of ``lk_cuda_cpu_sm90.h`` and
``lk_cuda_cpu_sm90_store.h`` (:func:`sm90_instruction`, :func:`store_instruction`).

>>> src = '''// launch k: grid (1, 1), block 32, dynamic shared memory 0 bytes
... extern "C" __global__ void __launch_bounds__(32) k(float* __restrict__ y) {
...   y[threadIdx.x] = 1.0f;
... }
... '''
>>> t = translate(src)
>>> [(k.name, k.grid, k.threads, k.params) for k in t.kernels]
[('k', (1, 1), 32, (('y', 'float', False),))]
>>> print(t.kernel_text.splitlines()[2])
  y.at(threadIdx.x, __LINE__) = 1.0f;
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import LayoutError


class TranslationError(LayoutError, ValueError):
    """The printed CUDA has a statement the CPU harness does not translate (says which, and where)."""


@dataclass(frozen=True)
class KernelInfo:
    """One ``__global__`` function: launch shape, parameters ``(name, C type, const)``, shared buffers
    ``(name, C type, byte offset, bytes)`` and register arrays ``(name, C type, count)``; a kernel with
    ``__grid_constant__ CUtensorMap`` parameters (type ``"CUtensorMap"``) names in ``encoder`` the parameters
    of its host function ``<kernel>_tensor_maps`` (``(name, C type)``: the maps, then the global tensors)."""

    name: str
    grid: tuple[int, int]
    threads: int
    smem_bytes: int
    params: tuple[tuple[str, str, bool], ...]
    shared: tuple[tuple[str, str, int, int], ...]
    regs: tuple[tuple[str, str, int], ...]
    encoder: tuple[tuple[str, str], ...] = ()

    @property
    def buffers(self) -> tuple[tuple[str, str, bool], ...]:
        """The parameters that are global buffers (not ``CUtensorMap`` s): the arrays a run passes."""
        return tuple(p for p in self.params if p[1] != "CUtensorMap")


@dataclass(frozen=True)
class Translation:
    """The translated kernels (``kernel_text``, line for line the source) and what they declare."""

    kernel_text: str
    kernels: tuple[KernelInfo, ...]


_LAUNCH = re.compile(r"// launch (\w+): grid \((\d+), (\d+)\), block (\d+), dynamic shared memory (\d+) bytes")
_SIGNATURE = re.compile(r'extern "C" __global__ void __launch_bounds__\((\d+)(?:, \d+)?\) (\w+)\((.*)\) \{\s*$')
_TMAP_PARAM = re.compile(r"const __grid_constant__ CUtensorMap (\w+)$")
_ENCODER = re.compile(r'extern "C" CUresult (\w+)_tensor_maps\((.*)\) \{\s*$')
_PARAM = re.compile(r"(const )?([A-Za-z_][\w ]*?)\* __restrict__ (\w+)$")
_SHARED = re.compile(r"^(\s*)([A-Za-z_][\w ]*?)\* (\w+) = reinterpret_cast<\2\*>\(lk_smem \+ (\d+)\);\s*$")
_REG = re.compile(r"^(\s*)__align__\(16\) ([A-Za-z_][\w ]*?) (\w+)\[(\d+)\];\s*$")
_SMEM_DECL = re.compile(r"^\s*extern __shared__ __align__\((?:128|1024)\) unsigned char lk_smem\[\];\s*$")
_VIEW_DECL = re.compile(r"(?:const )?[A-Za-z_][\w ]*?\* (\w+) = (lkc::view<)")
_CAST = re.compile(r"reinterpret_cast<\s*(const\s+)?([A-Za-z_][\w ]*?)\s*\*\s*>\s*\(\s*&\s*$")
_CVTA = re.compile(r"__cvta_generic_to_shared\s*\(\s*&\s*$")
_ADDR = re.compile(r"(?<![&\w\])])&\s*$")


def closing(text: str, i: int) -> int:
    """The index of the bracket closing the one at ``text[i]`` (string and character literals skipped).

    >>> closing("f(a[1], (b))", 1)
    11
    """
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[text[i]]]
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch in "\"'":
            j = _skip_literal(text, j)
            continue
        if ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if ch != stack.pop():
                raise TranslationError(f"unbalanced {ch!r} at offset {j}: {text[max(0, i - 40):j + 1]!r}")
            if not stack:
                return j
        j += 1
    raise TranslationError(f"no bracket closes {text[i]!r} at offset {i}: {text[i:i + 80]!r}")


def _skip_literal(text: str, j: int) -> int:
    q = text[j]
    j += 1
    while text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets and literals.

    >>> split_top('"r"(a ? b : c), "l"(x)', ",")
    ['"r"(a ? b : c)', ' "l"(x)']
    """
    out, start, j = [], 0, 0
    while j < len(text):
        ch = text[j]
        if ch in "\"'":
            j = _skip_literal(text, j)
            continue
        if ch in "([{":
            j = closing(text, j) + 1
            continue
        if ch == sep:
            out.append(text[start:j])
            start = j + 1
        j += 1
    out.append(text[start:])
    return out


def _refs(text: str, names: frozenset[str]) -> str:
    """Every ``NAME[E]`` of a buffer as a checked access: ``reinterpret_cast<T*>(&NAME[E])`` ->
    ``lkc::view<T>(NAME, E)``, ``__cvta_generic_to_shared(&NAME[E])`` -> ``lkc::smem_addr``, ``&NAME[E]`` ->
    ``lkc::gaddr``, else ``NAME.at(E)``."""
    if not names:
        return text
    pat = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\s*\[")
    out, pos = [], 0
    while (m := pat.search(text, pos)) is not None:
        name, lb = m.group(1), m.end() - 1
        rb = closing(text, lb)
        index = _refs(text[lb + 1:rb], names)
        before = text[pos:m.start()]
        after = re.match(r"\s*\)", text[rb + 1:])
        if (c := _CAST.search(before)) and after:
            out.append(before[:c.start()] + f"lkc::view<{c.group(1) or ''}{c.group(2)}>({name}, {index}, __LINE__)")
            pos = rb + 1 + after.end()
        elif (c := _CVTA.search(before)) and after:
            out.append(before[:c.start()] + f"lkc::smem_addr({name}, {index}, __LINE__)")
            pos = rb + 1 + after.end()
        elif c := _ADDR.search(before):
            out.append(before[:c.start()] + f"lkc::gaddr({name}, {index}, __LINE__)")
            pos = rb + 1
        else:
            out.append(before + f"{name}.at({index}, __LINE__)")
            pos = rb + 1
    out.append(text[pos:])
    return "".join(out)


def _unescape(s: str) -> str:
    return s.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\\\", "\\")


@dataclass(frozen=True)
class _Asm:
    template: str
    outputs: list[tuple[str, str]]  # (constraint, C expression)
    inputs: list[tuple[str, str]]


def _parse_asm(inner: str, where: str) -> _Asm:
    sections = split_top(inner, ":")
    lits = re.findall(r'"((?:[^"\\]|\\.)*)"', sections[0])
    if not lits or re.sub(r'"((?:[^"\\]|\\.)*)"', "", sections[0]).strip():
        raise TranslationError(f"{where}: asm template is not a string literal: {sections[0].strip()!r}")

    def operands(sec: str) -> list[tuple[str, str]]:
        ops = []
        for part in split_top(sec, ","):
            part = part.strip()
            if not part:
                continue
            m = re.match(r'"([^"]*)"\s*\(', part)
            if not m or closing(part, m.end() - 1) != len(part) - 1:
                raise TranslationError(f"{where}: asm operand {part!r} is not \"constraint\"(expression)")
            ops.append((m.group(1), part[m.end():-1].strip()))
        return ops

    outs = operands(sections[1]) if len(sections) > 1 else []
    ins = operands(sections[2]) if len(sections) > 2 else []
    if len(sections) > 3 and sections[3].strip() not in ("", '"memory"'):
        raise TranslationError(f"{where}: asm clobbers {sections[3].strip()!r} are not translated")
    return _Asm(_unescape("".join(lits)), outs, ins)


def _operand_list(text: str) -> list[str]:
    return [p.strip() for p in split_top(text, ",") if p.strip()]


class _Instr:
    """One PTX instruction of a template, its ``%n`` operands resolved to C expressions."""

    def __init__(self, asm: _Asm, text: str, where: str):
        self.where = where
        self.ops = asm.outputs + asm.inputs
        head, _, rest = text.strip().partition(" ")
        self.mnemonic = head
        self.args = _operand_list(rest)

    def ref(self, tok: str) -> tuple[str, str]:
        m = re.fullmatch(r"%(\d+)", tok.strip())
        if not m or int(m.group(1)) >= len(self.ops):
            raise TranslationError(f"{self.where}: {self.mnemonic}: operand {tok!r} is not one of %0..%"
                                   f"{len(self.ops) - 1}")
        return self.ops[int(m.group(1))]

    def vector(self, tok: str) -> list[tuple[str, str]]:
        if not (tok.startswith("{") and tok.endswith("}")):
            raise TranslationError(f"{self.where}: {self.mnemonic}: expected a {{vector}} operand, found {tok!r}")
        return [self.ref(t) for t in _operand_list(tok[1:-1])]

    def address(self, tok: str) -> str:
        if not (tok.startswith("[") and tok.endswith("]")):
            raise TranslationError(f"{self.where}: {self.mnemonic}: expected an [address] operand, found {tok!r}")
        return self.ref(tok[1:-1])[1]

    def value(self, tok: str) -> str:
        return tok if re.fullmatch(r"\d+|0x[0-9a-fA-F]+", tok) else f"lkc::b32({self.ref(tok)[1]})"


_MMA = re.compile(r"mma\.sync\.aligned\.m16n8k(\d+)\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)")
_MMA_REGS = {(16, "f16"): (4, 2), (16, "bf16"): (4, 2), (8, "f16"): (2, 1), (8, "bf16"): (2, 1), (8, "tf32"): (4, 2),
             (32, "s8"): (4, 2), (32, "u8"): (4, 2)}  # PTX ISA: A and B registers per lane
_DT = {"f16": "lkc::F16", "bf16": "lkc::BF16", "tf32": "lkc::TF32", "s8": "lkc::S8", "u8": "lkc::U8",
       "f32": "lkc::F32", "s32": "lkc::S32"}


def _mma(ins: _Instr) -> str:
    m = _MMA.fullmatch(ins.mnemonic)
    if not m or len(ins.args) != 4:
        raise TranslationError(f"{ins.where}: mma form {ins.mnemonic!r} is not translated")
    k, dt, at, bt, ct = int(m.group(1)), *m.group(2, 3, 4, 5)
    if at != bt or (k, at) not in _MMA_REGS or dt != ct or dt != ("s32" if at in ("s8", "u8") else "f32"):
        raise TranslationError(f"{ins.where}: {ins.mnemonic}: types {dt}.{at}.{bt}.{ct} are not translated")
    d, a, b, c = (ins.vector(t) for t in ins.args)
    na, nb = _MMA_REGS[k, at]
    if (len(a), len(b), len(c), len(d)) != (na, nb, 4, 4):
        raise TranslationError(f"{ins.where}: {ins.mnemonic} takes {na} A, {nb} B, 4 C and 4 D registers; found "
                               f"{len(a)}, {len(b)}, {len(c)}, {len(d)}")
    regs = {n: ", ".join(f"lkc::b32({e})" for _, e in v) for n, v in (("a", a), ("b", b), ("c", c))}
    sets = " ".join(f"lkc::set_b32({e}, lkc_d[{i}]);" for i, (_, e) in enumerate(d))
    return (f"{{ uint32_t lkc_a[] = {{{regs['a']}}}; uint32_t lkc_b[] = {{{regs['b']}}}; "
            f"uint32_t lkc_c[] = {{{regs['c']}}}; uint32_t lkc_d[4]; "
            f"lkc::mma({k}, {_DT[at]}, {_DT[ct]}, {na}, {nb}, lkc_a, lkc_b, lkc_c, lkc_d, __LINE__); {sets} }}")


def _instruction(ins: _Instr) -> str:
    mn, args = ins.mnemonic, ins.args
    if mn.startswith("mma."):
        return _mma(ins)
    if m := re.fullmatch(r"ldmatrix\.sync\.aligned\.m8n8\.x([124])(\.trans)?\.shared(?:::cta)?\.b16", mn):
        num = int(m.group(1))
        d = ins.vector(args[0])
        if len(d) != num or len(args) != 2:
            raise TranslationError(f"{ins.where}: {mn} takes {num} destination registers; found {len(d)}")
        sets = " ".join(f"lkc::set_b32({e}, lkc_d[{i}]);" for i, (_, e) in enumerate(d))
        return (f"{{ uint32_t lkc_d[4]; lkc::ldmatrix({num}, {'true' if m.group(2) else 'false'}, "
                f"lkc::b32({ins.address(args[1])}), lkc_d, __LINE__); {sets} }}")
    if mn == "prmt.b32" and len(args) == 4:  # default mode only: no .f4e / .b4e / .rc8 / ... suffix
        (cd, ed), (ca, ea), (cb, eb), (cc, ec) = (ins.ref(t) for t in args)
        if cd != "=r" or ca != "r" or cb != "r" or cc not in ("r", "n"):
            raise TranslationError(f"{ins.where}: {mn} with constraints {cd}, {ca}, {cb}, {cc} is not translated")
        return f"lkc::set_b32({ed}, lkc::prmt(lkc::b32({ea}), lkc::b32({eb}), (uint32_t)({ec})));"
    if re.fullmatch(r"cp\.async\.c[ag]\.shared(?:::cta)?\.global", mn):
        if len(args) not in (3, 4):
            raise TranslationError(f"{ins.where}: {mn} with {len(args)} operands is not translated")
        size = ins.value(args[2])
        src_size = ins.value(args[3]) if len(args) == 4 else size
        return (f"lkc::cp_async(lkc::b32({ins.address(args[0])}), {ins.address(args[1])}, {size}, {src_size}, "
                f"__LINE__);")
    if mn == "cp.async.commit_group" and not args:
        return "lkc::cp_async_commit();"
    if mn == "cp.async.wait_group" and len(args) == 1 and args[0].isdigit():
        return f"lkc::cp_async_wait({int(args[0])});"
    if mn == "cp.async.wait_all" and not args:
        return "lkc::cp_async_commit(); lkc::cp_async_wait(0);"
    if mn in ("bar.sync", "barrier.sync", "bar.sync.aligned", "barrier.sync.aligned") and args == ["0"]:
        return "lkc::syncthreads();"
    if (out := sm90_instruction(ins)) is not None:  # TMA, mbarrier, wgmma, setmaxnreg, predicates
        return out
    if (out := store_instruction(ins)) is not None:  # stmatrix, TMA stores, bulk groups, named barriers
        return out
    raise TranslationError(f"{ins.where}: PTX instruction {mn} {', '.join(args)} is not translated")


def _asm_statements(text: str, line_of) -> str:
    out, pos = [], 0
    for m in re.finditer(r"\basm\s+(?:volatile\s*)?\(", text):
        if m.start() < pos:
            continue
        end = closing(text, m.end() - 1)
        where = f"line {line_of(m.start())}"
        asm = _parse_asm(text[m.end():end], where)
        # instructions split at ';' and line ends; a scope's braces alone on a line open / close a C block
        pieces = [x.strip() for t in asm.template.split(";") for x in t.split("\n")]
        body = " ".join(_instruction(_Instr(asm, t, where)) for t in pieces if t and t not in ("{", "}"))
        if any(t.startswith(".reg") for t in pieces):
            body = "{ " + body + " }"
        stmt_end = end + 1
        if text[stmt_end:stmt_end + 1] == ";":
            stmt_end += 1
        newlines = text.count("\n", m.start(), stmt_end)
        out.append(text[pos:m.start()] + body + "\n" * newlines)
        pos = stmt_end
    out.append(text[pos:])
    return "".join(out)


def _kernel(lines: list[str], start: int) -> tuple[KernelInfo, int]:
    """Translate the kernel whose launch comment is ``lines[start]`` in place; returns it and the line after."""
    launch = _LAUNCH.fullmatch(lines[start].strip())
    sig = _SIGNATURE.match(lines[start + 1]) if launch else None
    if not launch or not sig:
        raise TranslationError(f"line {start + 1}: expected a launch comment and a kernel signature")
    name, threads = sig.group(2), int(sig.group(1))
    params = []
    for p in split_top(sig.group(3), ","):
        if tm := _TMAP_PARAM.fullmatch(p.strip()):
            params.append((tm.group(1), "CUtensorMap", True))
            continue
        pm = _PARAM.fullmatch(p.strip())
        if not pm:
            raise TranslationError(f"line {start + 2}: kernel parameter {p.strip()!r} is not 'T* __restrict__ name'")
        params.append((pm.group(3), pm.group(2), bool(pm.group(1))))
    args = ", ".join(f"const CUtensorMap& {n}" if t == "CUtensorMap" else f"lkc::Gbl<{'const ' if c else ''}{t}> {n}"
                     for n, t, c in params)
    lines[start + 1] = f"static void {name}({args}) {{"
    end = start + 2
    while not lines[end].startswith("}"):
        end += 1
    shared, regs = [], []
    for i in range(start + 2, end):
        line = lines[i]
        if _SMEM_DECL.match(line):
            lines[i] = ""
        elif m := _SHARED.match(line):
            shared.append((m.group(3), m.group(2), int(m.group(4))))
            lines[i] = f"{m.group(1)}lkc::Shr<{m.group(2)}> {m.group(3)}{{lkc::shared_info({m.group(4)})}};"
        elif m := _REG.match(line):
            regs.append((m.group(3), m.group(2), int(m.group(4))))
            lines[i] = f'{m.group(1)}lkc::Reg<{m.group(2)}, {m.group(4)}> {m.group(3)}("{m.group(3)}");'
    smem = int(launch.group(5))
    bounds = [off for _, _, off in shared[1:]] + [smem]
    sized = tuple((n, t, off, bounds[k] - off) for k, (n, t, off) in enumerate(shared))
    body_start = sum(len(x) + 1 for x in lines[:start + 2])
    text = "\n".join(lines[start + 2:end])
    text = _asm_statements(text, lambda o: start + 3 + text.count("\n", 0, o))
    names = frozenset([n for n, _, _ in params] + [n for n, *_ in shared] + [n for n, *_ in regs])
    text = _VIEW_DECL.sub(r"auto \1 = \2", _refs(text, names))
    if re.search(r"\basm\b|reinterpret_cast|__cvta_generic_to_shared|lk_smem", text):
        bad = next(k for k, t in enumerate(text.splitlines())
                   if re.search(r"\basm\b|reinterpret_cast|__cvta_generic_to_shared|lk_smem", t))
        raise TranslationError(f"line {start + 3 + bad}: statement not translated: {text.splitlines()[bad].strip()!r}")
    new = text.split("\n")
    assert len(new) == end - start - 2, body_start
    lines[start + 2:end] = new
    info = KernelInfo(name, (int(launch.group(2)), int(launch.group(3))), threads, smem, tuple(params), sized,
                      tuple(regs), _encoder(lines, end + 1, name) if any(t == "CUtensorMap" for _, t, _ in params)
                      else ())
    return info, end + 1


def _encoder(lines: list[str], start: int, name: str) -> tuple[tuple[str, str], ...]:
    """The parameters of ``<name>_tensor_maps`` (host code after the kernel): ``CUtensorMap* m`` then
    ``const T* buffer``."""
    for line in lines[start:]:
        m = _ENCODER.match(line)
        if m and m.group(1) == name:
            out = []
            for p in split_top(m.group(2), ","):
                pm = re.fullmatch(r"(?:const )?([A-Za-z_][\w ]*?)\* (\w+)", p.strip())
                if not pm:
                    raise TranslationError(f"{name}_tensor_maps: parameter {p.strip()!r} is not 'T* name'")
                out.append((pm.group(2), pm.group(1)))
            return tuple(out)
    raise TranslationError(f"kernel {name} takes tensor maps but the source has no {name}_tensor_maps encoder")


def translate(source: str) -> Translation:
    """Translate a printed module (or one kernel): ``#include`` lines of the CUDA headers are dropped (the
    harness header provides their names), every kernel is rewritten in place."""
    lines = source.split("\n")
    kernels = []
    i = 0
    while i < len(lines):
        if re.match(r"\s*#include <cuda", lines[i]):
            lines[i] = ""
            i += 1
        elif lines[i].startswith("// launch "):
            info, i = _kernel(lines, i)
            kernels.append(info)
        else:
            i += 1
    if not kernels:
        raise TranslationError("no kernel: expected '// launch NAME: grid (X, Y), block T, ...' before a kernel")
    return Translation("\n".join(lines), tuple(kernels))


def _call(k: KernelInfo) -> str:
    """``lkc_call_<kernel>``: the kernel called on the argument buffers; tensor maps are encoded first by the
    source's own ``<kernel>_tensor_maps`` (from the buffers' addresses), their errors reported."""
    index = {n: i for i, (n, *_) in enumerate(k.buffers)}
    maps = [n for n, ty, _ in k.params if ty == "CUtensorMap"]
    head = f"void lkc_call_{k.name}(void* a) {{ lkc::BufInfo** p = static_cast<lkc::BufInfo**>(a); "
    if maps:
        enc = []
        for n, ty in k.encoder:
            if ty == "CUtensorMap":
                enc.append(f"&lkc_m[{maps.index(n)}]")
            elif n in index:
                enc.append(f"reinterpret_cast<const {ty}*>(p[{index[n]}]->base)")
            else:
                raise TranslationError(f"{k.name}_tensor_maps: parameter {n} is neither a tensor map nor an argument")
        head += (f"lkc::register_globals(p, {len(k.buffers)}); CUtensorMap lkc_m[{len(maps)}]; "
                 f"if ({k.name}_tensor_maps({', '.join(enc)}) != CUDA_SUCCESS) "
                 f'lkc::fail(0, "cuTensorMapEncodeTiled: %s", lkc::tmap_error()); ')
    args = ", ".join(f"lkc_m[{maps.index(n)}]" if ty == "CUtensorMap" else
                     f"lkc::Gbl<{'const ' if c else ''}{ty}>{{p[{index[n]}]}}" for n, ty, c in k.params)
    return head + f"{k.name}({args}); }}"


def driver(t: Translation, header: str) -> str:
    """The C++ translation unit: the header, the kernels (``#line`` keeps their source line numbers) and
    the kernel table ``main`` dispatches on."""
    parts = [f'#include "{header}"', '#line 1 "kernel.cu"', t.kernel_text, "namespace {"]
    entries = []
    for k in t.kernels:
        parts.append(_call(k))
        bufs = k.buffers
        q = [f'"{n}"' for n, *_ in bufs]
        parts.append(f"const char* const lkc_pn_{k.name}[] = {{{', '.join(q) or 'nullptr'}}};")
        parts.append(f"const bool lkc_pc_{k.name}[] = {{{', '.join('true' if c else 'false' for *_, c in bufs)}}};")
        s = k.shared or (("", "", 0, 0),)
        parts.append(f"const char* const lkc_sn_{k.name}[] = {{{', '.join(chr(34) + n + chr(34) for n, *_ in s)}}};")
        parts.append(f"const long long lkc_so_{k.name}[] = {{{', '.join(str(o) for _, _, o, _ in s)}}};")
        parts.append(f"const long long lkc_ss_{k.name}[] = {{{', '.join(str(b) for *_, b in s)}}};")
        entries.append(f'{{"{k.name}", lkc_call_{k.name}, {len(bufs)}, lkc_pn_{k.name}, lkc_pc_{k.name}, '
                       f"{k.grid[0]}, {k.grid[1]}, {k.threads}, {k.smem_bytes}LL, {len(k.shared)}, lkc_sn_{k.name}, "
                       f"lkc_so_{k.name}, lkc_ss_{k.name}}}")
    parts.append("const lkc::KernelEntry lkc_table[] = {" + ", ".join(entries) + "};")
    parts.append("}  // namespace")
    parts.append("int main(int argc, char** argv) {")
    parts.append(f"  return lkc::main_entry(argc, argv, lkc_table, {len(entries)});\n}}")
    return "\n".join(parts) + "\n"


# ---- sm_90 instructions: TMA loads, mbarriers, setmaxnreg, wgmma, predicates ----
_TYPES = r"(f16|bf16|e4m3|e5m2)"
_WGMMA = re.compile(rf"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)\.f32\.{_TYPES}\.{_TYPES}")
_WGMMA_DT = {"f16": "lkc::F16", "bf16": "lkc::BF16", "e4m3": "lkc::E4M3", "e5m2": "lkc::E5M2"}
_TMA = re.compile(r"cp\.async\.bulk\.tensor\.(\d)d\.shared::cluster\.global\.mbarrier::complete_tx::bytes")


def _pred(ins, tok: str) -> str:
    if not re.fullmatch(r"[A-Za-z_]\w*", tok):
        raise TranslationError(f"{ins.where}: {ins.mnemonic}: expected a predicate register, found {tok!r}")
    return f"lkc_pred_{tok}"


def _imm(ins, tok: str) -> int:
    if not tok.isdigit():
        raise TranslationError(f"{ins.where}: {ins.mnemonic}: expected an immediate, found {tok!r}")
    return int(tok)


def _wgmma(ins, m) -> str:
    """The PTX ISA's forms: ``.f16`` / ``.bf16`` (A and B alike) at k16 with the transpose immediates, ``.e4m3``
    / ``.e5m2`` (either for A and B) at k32 without them (8-bit operands are K-major only)."""
    n, k, ta, tb = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
    args = ins.args
    fp8 = ta in ("e4m3", "e5m2")
    legal = (tb in ("e4m3", "e5m2") and k == 32) if fp8 else (ta == tb and k == 16)
    if not legal or len(args) != (6 if fp8 else 8):
        raise TranslationError(f"{ins.where}: {ins.mnemonic} with {len(args)} operands is no wgmma form of the PTX "
                               "ISA (f16 / bf16: k16, A and B alike, 8 operands; e4m3 / e5m2: k32, 6 operands, no "
                               "transpose)")
    d = ins.vector(args[0])
    if len(d) != n // 2 or any(c != "+f" for c, _ in d):
        raise TranslationError(f"{ins.where}: {ins.mnemonic} takes {n // 2} '+f' accumulators; found {len(d)}")
    da, db = (f"(uint64_t)({ins.ref(t)[1]})" for t in args[1:3])
    scale = _pred(ins, args[3])
    sa, sb, tra, trb = (_imm(ins, t) for t in (*args[4:8], "0", "0")[:4])
    regs = ", ".join(e for _, e in d)
    return (f"{{ lkc::Acc<float> lkc_wd[] = {{{regs}}}; lkc::wgmma({n}, {_WGMMA_DT[ta]}, {_WGMMA_DT[tb]}, lkc_wd, "
            f"{da}, {db}, {scale}, {sa}, {sb}, {tra}, {trb}, __LINE__); }}")


def sm90_instruction(ins) -> str | None:
    """The harness call of one sm_90 instruction (``None`` when ``ins`` is none of them): TMA tile loads,
    mbarriers, ``setmaxnreg``, ``wgmma`` and the ``.pred`` registers their templates use, as calls of
    ``lk_cuda_cpu_sm90.h``.

    >>> asm = _Asm("", [], [("r", "bar"), ("r", "n")])
    >>> sm90_instruction(_Instr(asm, "mbarrier.init.shared::cta.b64 [%0], %1", "line 1"))
    'lkc::mbar_init(lkc::b32(bar), lkc::b32(n), __LINE__);'
    """
    mn, args = ins.mnemonic, ins.args
    if mn == ".reg" and len(args) == 1 and (m := re.fullmatch(r"\.pred (\w+)", args[0])):
        return f"bool {_pred(ins, m.group(1))} = false;"
    if mn == "setp.ne.b32" and len(args) == 3:
        return f"{_pred(ins, args[0])} = ({ins.value(args[1])} != {ins.value(args[2])});"
    if mn == "selp.u32" and len(args) == 4:
        _, dst = ins.ref(args[0])
        on, off = ins.value(args[1]), ins.value(args[2])
        return f"lkc::set_b32({dst}, {_pred(ins, args[3])} ? (uint32_t){on} : (uint32_t){off});"
    if mn == "mbarrier.init.shared::cta.b64" and len(args) == 2:
        return f"lkc::mbar_init(lkc::b32({ins.address(args[0])}), {ins.value(args[1])}, __LINE__);"
    if mn == "fence.mbarrier_init.release.cluster" and not args:
        return "lkc::mbar_fence_init();"
    if mn == "mbarrier.arrive.expect_tx.shared::cta.b64" and len(args) == 3 and args[0] == "_":
        return f"lkc::mbar_arrive(lkc::b32({ins.address(args[1])}), {ins.value(args[2])}, __LINE__);"
    if mn == "mbarrier.arrive.shared::cta.b64" and len(args) == 2 and args[0] == "_":
        return f"lkc::mbar_arrive(lkc::b32({ins.address(args[1])}), 0, __LINE__);"
    if mn == "mbarrier.try_wait.parity.shared::cta.b64" and len(args) == 3:
        return (f"{_pred(ins, args[0])} = lkc::mbar_try_wait(lkc::b32({ins.address(args[1])}), {ins.value(args[2])}, "
                "__LINE__);")
    if m := re.fullmatch(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32", mn):
        return f"lkc::setmaxnreg({'true' if m.group(1) == 'inc' else 'false'}, {_imm(ins, args[0])}, __LINE__);"
    if mn == "wgmma.fence.sync.aligned" and not args:
        return "lkc::wgmma_fence();"
    if mn == "wgmma.commit_group.sync.aligned" and not args:
        return "lkc::wgmma_commit(__LINE__);"
    if mn == "wgmma.wait_group.sync.aligned" and len(args) == 1:
        return f"lkc::wgmma_wait({_imm(ins, args[0])}, __LINE__);"
    if m := _WGMMA.fullmatch(mn):
        return _wgmma(ins, m)
    if (m := _TMA.fullmatch(mn)) and len(args) == 3:
        rank = int(m.group(1))
        tmap, coords = _tma_operand(ins, args[1], rank)
        return (f"{{ const int32_t lkc_c[] = {{{', '.join(coords)}}}; lkc::tma_load(lkc::b32({ins.address(args[0])}), "
                f"(uint64_t)({tmap}), lkc::b32({ins.address(args[2])}), lkc_c, {rank}, __LINE__); }}")
    return None


# ---- sm_90 epilogue instructions: stmatrix, shared stores, named barriers, TMA stores ----
_STMATRIX = re.compile(r"stmatrix\.sync\.aligned\.m8n8\.x([124])(\.trans)?\.shared(?:::cta)?\.b16")
_ST_SHARED = re.compile(r"st\.shared(?:::cta)?(?:\.v([24]))?\.(?:b32|f32)")
_TMA_STORE = re.compile(r"cp\.async\.bulk\.tensor\.(\d)d\.global\.shared::cta\.bulk_group")


def _regs(ins, tok: str) -> list[str]:
    vec = ins.vector(tok) if tok.startswith("{") else [ins.ref(tok)]
    return [f"lkc::b32({e})" for _, e in vec]


def _tma_operand(ins, operand: str, rank: int) -> tuple[str, list[str]]:
    """The tensor map and the ``rank`` coordinates (C++ ``int32_t`` texts) of a TMA ``[map, {c0, c1, ...}]``
    operand, as the tensor-copy loads and stores write it."""
    if not (operand.startswith("[") and operand.endswith("]")):
        raise TranslationError(f"{ins.where}: {ins.mnemonic}: expected [map, {{coordinates}}], found {operand!r}")
    parts = [p.strip() for p in operand[1:-1].split(",", 1)]
    coords = [f"(int32_t)lkc::b32({e})" for _, e in ins.vector(parts[1])]
    if len(coords) != rank:
        raise TranslationError(f"{ins.where}: {ins.mnemonic} takes {rank} coordinates; found {len(coords)}")
    return ins.ref(parts[0])[1], coords


def _tma_store(ins, rank: int) -> str:
    dst, src = ins.args
    tmap, coords = _tma_operand(ins, dst, rank)
    return (f"{{ const int32_t lkc_c[] = {{{', '.join(coords)}}}; lkc::tma_store((uint64_t)({tmap}), lkc_c, {rank}, "
            f"lkc::b32({ins.address(src)}), __LINE__); }}")


def store_instruction(ins) -> str | None:
    """The harness call of one sm_90 epilogue instruction (``None`` when ``ins`` is none of them): ``stmatrix``,
    ``st.shared`` vectors, named barriers, ``fence.proxy.async``, TMA tensor stores and their bulk async-groups,
    as calls of ``lk_cuda_cpu_sm90_store.h``.

    >>> asm = _Asm("", [], [("r", "a"), ("r", "x"), ("r", "y")])
    >>> store_instruction(_Instr(asm, "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2}", "line 1"))
    '{ const uint32_t lkc_r[] = {lkc::b32(x), lkc::b32(y)}; lkc::stmatrix(2, true, lkc::b32(a), lkc_r, __LINE__); }'
    >>> store_instruction(_Instr(asm, "cp.async.bulk.wait_group.read 0", "line 2"))
    'lkc::bulk_wait(0, __LINE__);'
    """
    mn, args = ins.mnemonic, ins.args
    if (m := _STMATRIX.fullmatch(mn)) and len(args) == 2:
        num, regs = int(m.group(1)), _regs(ins, args[1])
        if len(regs) != num:
            raise TranslationError(f"{ins.where}: {mn} takes {num} source registers; found {len(regs)}")
        return (f"{{ const uint32_t lkc_r[] = {{{', '.join(regs)}}}; lkc::stmatrix({num}, "
                f"{'true' if m.group(2) else 'false'}, lkc::b32({ins.address(args[0])}), lkc_r, __LINE__); }}")
    if (m := _ST_SHARED.fullmatch(mn)) and len(args) == 2:
        regs = _regs(ins, args[1])
        if len(regs) != int(m.group(1) or 1):
            raise TranslationError(f"{ins.where}: {mn} takes {m.group(1) or 1} source registers; found {len(regs)}")
        return (f"{{ const uint32_t lkc_r[] = {{{', '.join(regs)}}}; lkc::st_shared(lkc::b32({ins.address(args[0])}), "
                f"lkc_r, {len(regs)}, __LINE__); }}")
    if mn in ("bar.sync", "barrier.sync", "barrier.sync.aligned") and len(args) == 2:
        return f"lkc::named_barrier((int){ins.value(args[0])}, (int){ins.value(args[1])}, __LINE__);"
    if mn == "fence.proxy.async.shared::cta" and not args:
        return "lkc::fence_proxy_async();"
    if (m := _TMA_STORE.fullmatch(mn)) and len(args) == 2:
        return _tma_store(ins, int(m.group(1)))
    if mn == "cp.async.bulk.commit_group" and not args:
        return "lkc::bulk_commit();"
    if (m := re.fullmatch(r"cp\.async\.bulk\.wait_group(\.read)?", mn)) and len(args) == 1:
        if not args[0].isdigit():
            raise TranslationError(f"{ins.where}: {mn}: expected an immediate group count, found {args[0]!r}")
        return f"lkc::bulk_wait({int(args[0])}, __LINE__);"
    return None
