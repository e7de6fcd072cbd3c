"""The sm_90 instructions of the CPU harness's translation (:mod:`.translate`): TMA tile loads, mbarriers,
``setmaxnreg``, ``wgmma`` and the ``.pred`` registers their templates use, as calls of ``lk_cuda_cpu_sm90.h``.

>>> from layoutkit.testing.cuda_cpu.translate import _Asm, _Instr
>>> asm = _Asm("", [], [("r", "bar"), ("r", "n")])
>>> sm90_instruction(_Instr(asm, "mbarrier.init.shared::cta.b64 [%0], %1", "line 1"))
'lkc::mbar_init(lkc::b32(bar), lkc::b32(n), __LINE__);'
"""

from __future__ import annotations

import re

from .translate import TranslationError

_TYPES = r"(f16|bf16|e4m3|e5m2)"
_WGMMA = re.compile(rf"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k(\d+)\.f32\.{_TYPES}\.{_TYPES}")
_DT = {"f16": "lkc::F16", "bf16": "lkc::BF16", "e4m3": "lkc::E4M3", "e5m2": "lkc::E5M2"}
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
    return (f"{{ lkc::Acc<float> lkc_wd[] = {{{regs}}}; lkc::wgmma({n}, {_DT[ta]}, {_DT[tb]}, lkc_wd, {da}, {db}, "
            f"{scale}, {sa}, {sb}, {tra}, {trb}, __LINE__); }}")


def sm90_instruction(ins) -> str | None:
    """The harness call of one sm_90 instruction (``None`` when ``ins`` is none of them)."""
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
        src = args[1]
        if not (src.startswith("[") and src.endswith("]")):
            raise TranslationError(f"{ins.where}: {mn}: expected [map, {{coordinates}}], found {src!r}")
        parts = [p.strip() for p in src[1:-1].split(",", 1)]
        coords = [f"(int32_t)lkc::b32({e})" for _, e in ins.vector(parts[1])]
        if len(coords) != rank:
            raise TranslationError(f"{ins.where}: {mn} takes {rank} coordinates; found {len(coords)}")
        tmap = ins.ref(parts[0])[1]
        return (f"{{ const int32_t lkc_c[] = {{{', '.join(coords)}}}; lkc::tma_load(lkc::b32({ins.address(args[0])}), "
                f"(uint64_t)({tmap}), lkc::b32({ins.address(args[2])}), lkc_c, {rank}, __LINE__); }}")
    return None
