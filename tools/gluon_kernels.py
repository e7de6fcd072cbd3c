"""Gluon kernels with hand-written register layouts (the "author" versions) for the Gluon front end's
recorded list (docs/gluon.md): each entry is ``(name, kernel, signature, constexprs, targets)``.
``tools/gluon_fixtures.py`` compiles them to GLIR, erases their register layouts and writes the fixtures.

Needs triton 3.9 (the ``gluon`` extra).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy, mma_v2
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma

B1: gl.constexpr = gl.BlockedLayout([4], [32], [4], [0])
B2: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
B2W: gl.constexpr = gl.BlockedLayout([1, 8], [8, 4], [4, 1], [1, 0])
B2T: gl.constexpr = gl.BlockedLayout([4, 1], [8, 4], [1, 4], [0, 1])


@gluon.jit
def copy_1d(x_ptr, y_ptr, n, BLOCK: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=B1)
    m = offs < n
    gl.store(y_ptr + offs, gl.load(x_ptr + offs, mask=m), mask=m)


@gluon.jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, BLOCK: gl.constexpr):
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=B1)
    m = offs < n
    x = gl.load(x_ptr + offs, mask=m, other=0.0)
    y = gl.load(y_ptr + offs, mask=m, other=0.0)
    gl.store(out_ptr + offs, a * x + y, mask=m)


@gluon.jit
def add_2d(x_ptr, y_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    offs = r[:, None] * N + c[None, :]
    gl.store(out_ptr + offs, gl.load(x_ptr + offs) + gl.load(y_ptr + offs))


@gluon.jit
def row_sum(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    gl.store(out_ptr + r, gl.sum(x, axis=1))


@gluon.jit
def col_max(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    gl.store(out_ptr + c, gl.max(x, axis=0))


@gluon.jit
def softmax_rows(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    offs = r[:, None] * N + c[None, :]
    x = gl.load(x_ptr + offs)
    e = gl.exp(x - gl.max(x, axis=1)[:, None])
    gl.store(out_ptr + offs, e / gl.sum(e, axis=1)[:, None])


@gluon.jit
def transpose_copy(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    xt = gl.convert_layout(x, B2T)
    r2 = gl.arange(0, M, layout=gl.SliceLayout(1, B2T))
    c2 = gl.arange(0, N, layout=gl.SliceLayout(0, B2T))
    gl.store(out_ptr + r2[:, None] + c2[None, :] * M, xt)


@gluon.jit
def loop_accumulate(x_ptr, out_ptr, K, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2W))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2W))
    offs = r[:, None] * N + c[None, :]
    acc = gl.zeros([M, N], gl.float32, B2W)
    for k in range(K):
        acc += gl.load(x_ptr + k * M * N + offs).to(gl.float32)
    gl.store(out_ptr + offs, acc)


@gluon.jit
def row_norm(x_ptr, w_ptr, out_ptr, eps, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2W))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2W))
    offs = r[:, None] * N + c[None, :]
    x = gl.load(x_ptr + offs).to(gl.float32)
    mean = gl.sum(x, axis=1) / N
    d = x - mean[:, None]
    var = gl.sum(d * d, axis=1) / N
    w = gl.load(w_ptr + c).to(gl.float32)
    y = d * gl.rsqrt(var + eps)[:, None] * w[None, :]
    gl.store(out_ptr + offs, y.to(gl.float16))


@gluon.jit
def masked_where(x_ptr, out_ptr, M, N, BM: gl.constexpr, BN: gl.constexpr):
    r = gl.program_id(0) * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, BN, layout=gl.SliceLayout(0, B2))
    m = (r[:, None] < M) & (c[None, :] < N)
    offs = r[:, None] * N + c[None, :]
    x = gl.load(x_ptr + offs, mask=m, other=0.0)
    gl.store(out_ptr + offs, gl.where(x > 0, x, 0.1 * x), mask=m)


@gluon.jit
def cumsum_rows(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    offs = r[:, None] * N + c[None, :]
    gl.store(out_ptr + offs, gl.cumsum(gl.load(x_ptr + offs), axis=1))


MMA2: gl.constexpr = gl.NVMMADistributedLayout([2, 0], [2, 2], [16, 8])


@gluon.jit
def matmul_mma_v2(a_ptr, b_ptr, c_ptr, M: gl.constexpr, N: gl.constexpr, K: gl.constexpr):
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, B2W))
    rk = gl.arange(0, K, layout=gl.SliceLayout(0, B2W))
    rk2 = gl.arange(0, K, layout=gl.SliceLayout(1, B2W))
    rn = gl.arange(0, N, layout=gl.SliceLayout(0, B2W))
    a = gl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = gl.load(b_ptr + rk2[:, None] * N + rn[None, :])
    acc = gl.zeros([M, N], gl.float32, MMA2)
    acc = mma_v2(gl.convert_layout(a, gl.DotOperandLayout(0, MMA2, 2)),
                 gl.convert_layout(b, gl.DotOperandLayout(1, MMA2, 2)), acc)
    out = gl.convert_layout(acc, B2W)
    gl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(gl.float16))


MMA3: gl.constexpr = gl.NVMMADistributedLayout([3, 0], [4, 1], [16, 64, 16])


@gluon.jit
def matmul_wgmma(a_ptr, b_ptr, c_ptr, M: gl.constexpr, N: gl.constexpr, K: gl.constexpr):
    rm = gl.arange(0, M, layout=gl.SliceLayout(1, B2W))
    rk = gl.arange(0, K, layout=gl.SliceLayout(0, B2W))
    rk2 = gl.arange(0, K, layout=gl.SliceLayout(1, B2W))
    rn = gl.arange(0, N, layout=gl.SliceLayout(0, B2W))
    a = gl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = gl.load(b_ptr + rk2[:, None] * N + rn[None, :])
    a_s = gl.allocate_shared_memory(gl.float16, [M, K], gl.NVMMASharedLayout.get_default_for([M, K], gl.float16), a)
    b_s = gl.allocate_shared_memory(gl.float16, [K, N], gl.NVMMASharedLayout.get_default_for([K, N], gl.float16), b)
    acc = warpgroup_mma(a_s, b_s, gl.zeros([M, N], gl.float32, MMA3))
    out = gl.convert_layout(acc, B2W)
    gl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(gl.float16))


@gluon.jit
def async_copy_tile(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2W))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2W))
    smem = gl.allocate_shared_memory(gl.float16, [M, N], gl.SwizzledSharedLayout(8, 1, 8, [1, 0]))
    async_copy.async_load(smem, x_ptr + r[:, None] * N + c[None, :])
    async_copy.commit_group()
    async_copy.wait_group(0)
    x = smem.load(B2W)
    gl.store(out_ptr + r[:, None] * N + c[None, :], x * 2.0)


@gluon.jit
def smem_roundtrip(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    smem = gl.allocate_shared_memory(gl.float32, [M, N], gl.SwizzledSharedLayout(4, 1, 8, [1, 0]), x)
    y = smem.load(B2)
    gl.store(out_ptr + r[:, None] * N + c[None, :], y + 1.0)


F32, F16 = "*fp32", "*fp16"
ALL, AMPERE, HOPPER = (80, 90), (80, 90), (90,)
KERNELS = [
    ("copy_1d", copy_1d, {"x_ptr": F32, "y_ptr": F32, "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}, ALL),
    ("axpy", axpy, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "a": "fp32", "n": "i32", "BLOCK": "constexpr"},
     {"BLOCK": 2048}, ALL),
    ("add_2d", add_2d, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
     {"M": 64, "N": 64}, ALL),
    ("row_sum", row_sum, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"}, {"M": 64, "N": 128}, ALL),
    ("col_max", col_max, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"}, {"M": 64, "N": 128}, ALL),
    ("softmax_rows", softmax_rows, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
     {"M": 32, "N": 256}, ALL),
    ("transpose_copy", transpose_copy, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
     {"M": 64, "N": 64}, ALL),
    ("loop_accumulate", loop_accumulate, {"x_ptr": F16, "out_ptr": F32, "K": "i32", "M": "constexpr",
                                          "N": "constexpr"}, {"M": 32, "N": 128}, ALL),
    ("row_norm", row_norm, {"x_ptr": F16, "w_ptr": F16, "out_ptr": F16, "eps": "fp32", "M": "constexpr",
                            "N": "constexpr"}, {"M": 16, "N": 256}, ALL),
    ("masked_where", masked_where, {"x_ptr": F32, "out_ptr": F32, "M": "i32", "N": "i32", "BM": "constexpr",
                                    "BN": "constexpr"}, {"BM": 64, "BN": 64}, ALL),
    ("cumsum_rows", cumsum_rows, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
     {"M": 32, "N": 64}, ALL),
    ("matmul_mma_v2", matmul_mma_v2, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "constexpr", "N": "constexpr",
                                      "K": "constexpr"}, {"M": 64, "N": 64, "K": 32}, AMPERE),
    ("matmul_wgmma", matmul_wgmma, {"a_ptr": F16, "b_ptr": F16, "c_ptr": F16, "M": "constexpr", "N": "constexpr",
                                    "K": "constexpr"}, {"M": 64, "N": 64, "K": 64}, HOPPER),
    ("async_copy_tile", async_copy_tile, {"x_ptr": F16, "out_ptr": F16, "M": "constexpr", "N": "constexpr"},
     {"M": 64, "N": 64}, ALL),
    ("smem_roundtrip", smem_roundtrip, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
     {"M": 32, "N": 64}, ALL),
]


@gluon.jit
def permute_store(x_ptr, out_ptr, M: gl.constexpr, N: gl.constexpr):
    r = gl.arange(0, M, layout=gl.SliceLayout(1, B2))
    c = gl.arange(0, N, layout=gl.SliceLayout(0, B2))
    x = gl.load(x_ptr + r[:, None] * N + c[None, :])
    xt = gl.permute(x, [1, 0])
    r2 = gl.arange(0, N, layout=gl.SliceLayout(1, B2T))
    c2 = gl.arange(0, M, layout=gl.SliceLayout(0, B2T))
    gl.store(out_ptr + r2[:, None] * M + c2[None, :], xt * 2.0)


KERNELS.append(("permute_store", permute_store, {"x_ptr": F32, "out_ptr": F32, "M": "constexpr", "N": "constexpr"},
                {"M": 64, "N": 32}, ALL))


@gluon.jit
def interleave(x_ptr, y_ptr, out_ptr, N: gl.constexpr):
    offs = gl.arange(0, N, layout=B1)
    z = gl.reshape(gl.join(gl.load(x_ptr + offs), gl.load(y_ptr + offs)), [2 * N])
    o = gl.arange(0, 2 * N, layout=B1)
    gl.store(out_ptr + o, gl.convert_layout(z, B1))


@gluon.jit
def deinterleave(x_ptr, out_ptr, N: gl.constexpr):
    o = gl.arange(0, 2 * N, layout=B1)
    a, b = gl.split(gl.reshape(gl.load(x_ptr + o), [N, 2]))
    offs = gl.arange(0, N, layout=B1)
    gl.store(out_ptr + offs, gl.convert_layout(a - b, B1))


KERNELS.append(("interleave", interleave, {"x_ptr": F32, "y_ptr": F32, "out_ptr": F32, "N": "constexpr"},
                {"N": 512}, ALL))
KERNELS.append(("deinterleave", deinterleave, {"x_ptr": F32, "out_ptr": F32, "N": "constexpr"}, {"N": 512}, ALL))
