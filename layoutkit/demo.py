"""The quick-start demo (``make demo``): a few layouts, an inverse and a proof.

Later issues grow this into the GEMM demo (inference, plots, kernels).
"""

from __future__ import annotations

import layoutkit as lk


def _full_bank_swizzle_fp16(rows: int, cols: int) -> lk.Layout:
    """TileLang's 128-byte swizzle for fp16 (8 elements per 16-byte chunk, 8 chunks per row)."""
    return lk.Layout(
        [rows, cols],
        lambda i, j: (j // 64, i // 8, j % 8 + ((j % 64 // 8 ^ i % 8) + i % 8 * 8) * 8),
    )


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

    swz = _full_bank_swizzle_fp16(32, 64)
    print("\na 128-byte swizzle (fp16 32x64):", swz)
    inv = swz.inverse()
    print("  inverse (TileLang cannot invert its swizzles):", inv)
    print("  proof by enumeration:", swz.prove_bijective("enumerate"))
    print("  proof by islpy:      ", swz.prove_bijective("isl"))
    print("  F2-linear bases of _i:", swz.to_linear().bases[0])

    padded = lk.Layout([64, 128], lambda i, j: i * 136 + j)
    print("\na padded layout:", padded)
    print("  output_shape is a bounding box:", padded.output_shape)
    print("  ", padded.prove_bijective())
    try:
        padded.inverse()
    except lk.NotBijectiveError as err:
        print("  inverse refused:", err)


if __name__ == "__main__":
    main()
