"""The quick-start demo (``make demo``): a few layouts, an inverse and a proof.

Later issues grow this into the GEMM demo (inference, plots, kernels).
"""

from __future__ import annotations

import layoutkit as lk
from layoutkit.targets import nv


def main() -> None:
    print("== layoutkit demo ==\n")
    transpose = lk.Layout([4, 8], lambda i, j: (j, i))
    print("a transpose:     ", transpose)
    print("  (1, 2) ->      ", transpose.map_forward_index([1, 2]))
    print("  inverse:       ", transpose.inverse())

    mixed = lk.Layout([6, 10], lambda i, j: (j % 5 * 12 + i * 2 + j // 5,))
    print("\na mixed-radix permutation:", mixed)
    print("  inverse:       ", mixed.inverse())
    print("  proof:         ", mixed.prove_bijective("isl"))

    swz = nv.make_full_bank_swizzled_layout([32, 64], "float16")
    print("\na 128-byte swizzle (fp16 32x64):", swz)
    inv = swz.inverse()
    print("  inverse (TileLang cannot invert its swizzles):", inv)
    print("  proof by enumeration:", swz.prove_bijective("enumerate"))
    print("  proof by islpy:      ", swz.prove_bijective("isl"))
    print("  its F2-linear view, as Triton's LinearLayout lists it:" + str(swz.to_linear()))

    acc = nv.make_mma_store_layout(2, 2, 32, 32)
    print("\nthe MMA accumulator fragment of a 64x64 tile on 4 warps:")
    print("  " + acc.text().replace("\n", "\n  "))
    print("  injective:", acc.prove_injective())
    print("\nshared-memory wavefronts per warp instruction, 64x64x64 fp16 GEMM tile:")
    print("  " + nv.format_bank_report(nv.bank_report(64, 64, 64)).replace("\n", "\n  "))

    padded = lk.Layout([64, 128], lambda i, j: i * 136 + j)
    print("\na padded layout:", padded)
    print("  output_shape is a bounding box:", padded.output_shape)
    print("  proof:", padded.prove_bijective())
    try:
        padded.inverse()
    except lk.NotBijectiveError as err:
        print("  inverse refused:", err)


if __name__ == "__main__":
    main()
