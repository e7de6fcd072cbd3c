"""The bank-conflict report: every swizzle x (A/B ldmatrix, C store), wavefronts per instruction."""

from __future__ import annotations

from layoutkit.targets import nv


def _cells(rows):
    return {(r.layout, r.operation): r for r in rows}


def test_report_64x64x64_fp16():
    rows = nv.bank_report(64, 64, 64, "float16")
    cells = _cells(rows)
    assert len(rows) == 5 * 3
    for op in ("A ldmatrix.x4", "B ldmatrix.x4.trans"):
        assert cells[("linear", op)].per_instruction == 32 and cells[("linear", op)].ways == 8
        for kind in ("padded", "32B", "64B", "128B"):
            r = cells[(kind, op)]
            assert r.per_instruction == 4 == r.ideal_per_instruction and r.ways == 1, (kind, op)
            assert r.instructions == 32  # 4 warps x 2 spatial atoms x 4 K atoms
    store = [r for r in rows if r.operation == "C st.shared.b32"]
    assert [r.per_instruction for r in store] == [8, 1, 1, 1, 1]
    assert all(r.instructions == 64 for r in store)  # 4 warps x 16 register pairs


def test_report_marks_layouts_that_do_not_fit():
    cells = _cells(nv.bank_report(64, 64, 32, "float16", transpose_B=True))
    assert cells[("128B", "A ldmatrix.x4")].wavefronts is None  # 32 fp16 columns: no 128-byte swizzle
    assert cells[("128B", "A ldmatrix.x4")].note.startswith("make_full_bank_swizzled_layout")
    assert cells[("linear", "A ldmatrix.x4")].ways == 4
    text = nv.format_bank_report(nv.bank_report(64, 64, 32, "float16", transpose_B=True))
    assert text.splitlines()[0].split() == ["layout", "A", "ldmatrix.x4", "B", "ldmatrix.x4", "C", "st.shared.b32"]
    assert "n/a" in text and "16 (4-way)" in text


def test_report_other_types():
    cells = _cells(nv.bank_report(64, 64, 32, "float32"))
    assert cells[("32B", "B ld.shared.b32")].per_instruction == 1
    assert cells[("linear", "C st.shared.b64")].ways == 4
    int8 = _cells(nv.bank_report(64, 64, 64, "int8", store_dtype="int32", transpose_B=True))
    assert int8[("64B", "A ldmatrix.x4")].per_instruction == 4
