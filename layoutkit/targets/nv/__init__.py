"""NVIDIA target: shared-memory swizzles, MMA fragments, warp partition, copy instruction selection,
the GEMM layout rule and an exact shared-memory bank model (``docs/reference.md#nvidia-shared-memory-swizzles`` to
``docs/reference.md#copy-instruction-selection``).

Modules: :mod:`.swizzle` (32/64/128B xor swizzles, padded, linear, fp64, Hopper/sm_100 and Volta
rules, merging), :mod:`.mma` (mma.sync atoms, load/store fragments, ldmatrix/stmatrix maps),
:mod:`.mma_sp` (mma.sp fragments and warp partition), :mod:`.gemm_sp` (the ``T.gemm_sp``
layout rule), :mod:`.sparse_metadata` (CUTLASS's sparse metadata layouts),
:mod:`.wgmma` and :mod:`.volta` (sm_90 / sm_70 fragments), :mod:`.tcgen05` (sm_100 tensor memory: the
TCGEN05 atom, TMEM layouts, ``tcgen05.ld`` / ``st`` fragments), :mod:`.partition` (warp partition),
:mod:`.banks` (wavefronts and conflict ways, exact and F2), :mod:`.copy` (copy instruction
selection), :mod:`.gemm` (the ``T.gemm`` layout rule), :mod:`.gemm_plan` (the one instruction-level plan of a
GEMM tile every NVIDIA GEMM lowering holds, and the dtype -> PTX type table), :mod:`.gemm_scopes` (the memory
scopes each GEMM instruction reads), :mod:`.report` (swizzle x move cost table), :mod:`.hardware` (warp size,
arch strings).  Element types are :mod:`layoutkit.dtypes`'s.

>>> from layoutkit.targets import nv
>>> nv.make_swizzled_layout((32, 32), "float16").swizzle.kind
'half'
>>> nv.compute_warp_partition(64, 64, 4)
(2, 2)
>>> print(nv.make_mma_store_layout(2, 2, 16, 16).forward_thread)
_j // 16 * 64 + _i // 16 * 32 + _i % 8 * 4 + _j % 8 // 2
"""

from ...dtypes import DtypeError, canonical_dtype, element_bits
from .banks import BankReport, InstructionSpec, bank_conflicts, instruction_spec, phase_bank_hits, transpose_read_access
from .copy import (
    CopyInstruction,
    CopyOperand,
    CopySelectionError,
    copy_layout_requirement,
    select_copy_instruction,
    tma_shared_layout,
)
from .cute import cute_swizzle, cute_swizzled_layout, swizzle_kind
from .gemm import GemmLayouts, GemmOperand, gemm_layouts, gemm_shape, pipelined_shape, select_gemm_instruction
from .gemm_plan import PTX_TYPES, GemmPlan, gemm_plan, ptx_type
from .gemm_scopes import GemmScopeError, check_operand_scopes
from .gemm_sp import gemm_sp_layouts, gemm_sp_shape, select_gemm_sp_instruction
from .hardware import ARCH_RANGE, WARP_SIZE, arch_number, parse_arch
from .mma import (
    MmaAtom,
    ldmatrix_layout,
    make_gemm_fragment_8x8,
    make_gemm_fragment_8x8_transposed,
    make_mma_load_layout,
    make_mma_store_layout,
    mma_atom,
    stmatrix_layout,
)
from .mma_sp import (
    compute_sparse_warp_partition,
    make_mma_sp_load_layout,
    make_mma_sp_store_layout,
    metadata_factor,
    mma_sp_k,
)
from .partition import WarpPartitionError, compute_warp_partition
from .report import BankRow, bank_report, format_bank_report
from .sparse_metadata import (
    make_cutlass_metadata_layout,
    make_cutlass_metadata_layout_sm8x,
    make_cutlass_metadata_layout_sm90,
)
from .swizzle import (
    BANK_SWIZZLES,
    SHARED_LAYOUTS,
    SwizzledLayout,
    SwizzleInfo,
    make_bank_swizzled_layout,
    make_full_bank_swizzled_layout,
    make_half_bank_swizzled_layout,
    make_linear_layout,
    make_padded_layout,
    make_quarter_bank_swizzled_layout,
    make_swizzled_layout,
    make_tcgen05mma_swizzled_layout,
    make_volta_swizzled_layout,
    make_wgmma_swizzled_layout,
    merge_swizzles,
    swizzle_info,
)
from .tcgen05 import (
    Tcgen05Atom,
    make_tmem_accumulator_layout,
    make_tmem_copy_fragment,
    make_tmem_operand_a_layout,
    select_tcgen05_atom,
)
from .volta import make_volta_load_layout, make_volta_store_layout
from .wgmma import make_wgmma_load_layout, make_wgmma_store_layout, wgmma_inst_n

__all__ = [
    "Tcgen05Atom",
    "cute_swizzle",
    "cute_swizzled_layout",
    "swizzle_kind",
    "BANK_SWIZZLES",
    "SHARED_LAYOUTS",
    "BankReport",
    "BankRow",
    "CopyInstruction",
    "CopyOperand",
    "CopySelectionError",
    "DtypeError",
    "GemmLayouts",
    "GemmOperand",
    "GemmPlan",
    "GemmScopeError",
    "InstructionSpec",
    "MmaAtom",
    "SwizzleInfo",
    "ARCH_RANGE",
    "WARP_SIZE",
    "arch_number",
    "parse_arch",
    "SwizzledLayout",
    "WarpPartitionError",
    "bank_conflicts", "phase_bank_hits",
    "bank_report",
    "check_operand_scopes",
    "canonical_dtype",
    "compute_warp_partition",
    "copy_layout_requirement",
    "element_bits",
    "format_bank_report",
    "gemm_layouts",
    "gemm_plan",
    "gemm_sp_layouts",
    "gemm_sp_shape",
    "select_gemm_sp_instruction",
    "compute_sparse_warp_partition",
    "make_mma_sp_load_layout",
    "make_mma_sp_store_layout",
    "metadata_factor",
    "mma_sp_k",
    "make_cutlass_metadata_layout",
    "make_cutlass_metadata_layout_sm8x",
    "make_cutlass_metadata_layout_sm90",
    "gemm_shape",
    "instruction_spec",
    "ldmatrix_layout",
    "make_bank_swizzled_layout",
    "make_full_bank_swizzled_layout",
    "make_gemm_fragment_8x8",
    "make_gemm_fragment_8x8_transposed",
    "make_half_bank_swizzled_layout",
    "make_linear_layout",
    "make_mma_load_layout",
    "make_mma_store_layout",
    "make_padded_layout",
    "make_quarter_bank_swizzled_layout",
    "make_swizzled_layout",
    "make_tcgen05mma_swizzled_layout",
    "make_tmem_accumulator_layout",
    "make_tmem_copy_fragment",
    "make_tmem_operand_a_layout",
    "make_volta_load_layout",
    "make_volta_store_layout",
    "make_volta_swizzled_layout",
    "make_wgmma_load_layout",
    "make_wgmma_store_layout",
    "make_wgmma_swizzled_layout",
    "merge_swizzles",
    "mma_atom",
    "pipelined_shape",
    "PTX_TYPES",
    "ptx_type",
    "select_copy_instruction",
    "select_gemm_instruction",
    "select_tcgen05_atom",
    "stmatrix_layout",
    "swizzle_info",
    "tma_shared_layout",
    "transpose_read_access",
    "wgmma_inst_n",
]
