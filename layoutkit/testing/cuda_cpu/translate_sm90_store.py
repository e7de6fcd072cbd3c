"""The sm_90 epilogue instructions of the CPU harness's translation (:mod:`.translate`): ``stmatrix``,
``st.shared`` vectors, named barriers, ``fence.proxy.async``, TMA tensor stores and their bulk async-groups,
as calls of ``lk_cuda_cpu_sm90_store.h``.

>>> from layoutkit.testing.cuda_cpu.translate import _Asm, _Instr
>>> asm = _Asm("", [], [("r", "a"), ("r", "x"), ("r", "y")])
>>> store_instruction(_Instr(asm, "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2}", "line 1"))
'{ const uint32_t lkc_r[] = {lkc::b32(x), lkc::b32(y)}; lkc::stmatrix(2, true, lkc::b32(a), lkc_r, __LINE__); }'
>>> store_instruction(_Instr(asm, "cp.async.bulk.wait_group.read 0", "line 2"))
'lkc::bulk_wait(0, __LINE__);'
"""

from __future__ import annotations

import re

from .translate import TranslationError

_STMATRIX = re.compile(r"stmatrix\.sync\.aligned\.m8n8\.x([124])(\.trans)?\.shared(?:::cta)?\.b16")
_ST_SHARED = re.compile(r"st\.shared(?:::cta)?(?:\.v([24]))?\.(?:b32|f32)")
_TMA_STORE = re.compile(r"cp\.async\.bulk\.tensor\.(\d)d\.global\.shared::cta\.bulk_group")


def _regs(ins, tok: str) -> list[str]:
    vec = ins.vector(tok) if tok.startswith("{") else [ins.ref(tok)]
    return [f"lkc::b32({e})" for _, e in vec]


def _tma_store(ins, rank: int) -> str:
    dst, src = ins.args
    if not (dst.startswith("[") and dst.endswith("]")):
        raise TranslationError(f"{ins.where}: {ins.mnemonic}: expected [map, {{coordinates}}], found {dst!r}")
    parts = [p.strip() for p in dst[1:-1].split(",", 1)]
    coords = [f"(int32_t)lkc::b32({e})" for _, e in ins.vector(parts[1])]
    if len(coords) != rank:
        raise TranslationError(f"{ins.where}: {ins.mnemonic} takes {rank} coordinates; found {len(coords)}")
    tmap = ins.ref(parts[0])[1]
    return (f"{{ const int32_t lkc_c[] = {{{', '.join(coords)}}}; lkc::tma_store((uint64_t)({tmap}), lkc_c, {rank}, "
            f"lkc::b32({ins.address(src)}), __LINE__); }}")


def store_instruction(ins) -> str | None:
    """The harness call of one epilogue instruction (``None`` when ``ins`` is none of them)."""
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
