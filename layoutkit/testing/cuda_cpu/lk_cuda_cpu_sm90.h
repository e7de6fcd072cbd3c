// sm_90 (Hopper) for the CPU harness: tensor maps, TMA tile loads, mbarriers, setmaxnreg and wgmma.mma_async.
//
// Appended to lk_cuda_cpu.h (the harness builds one header of both).  Written from the CUDA driver API's
// cuTensorMapEncodeTiled and the PTX ISA (cp.async.bulk.tensor, mbarrier, wgmma):
// * cuTensorMapEncodeTiled checks its arguments as the driver documents them (rank, 16-byte global address
//   and strides, boxes of at most 256 with 16-byte inner rows no wider than the swizzle span, element
//   strides) and keeps them in the 128-byte CUtensorMap;
// * a TMA tile load reads its box at issue (zeros for coordinates outside the tensor: OOB fill NONE) and
//   lands as late as possible: only when a thread's mbarrier try_wait would fail otherwise, one load at a
//   time.  Landing writes the box row after row (pitch = the inner box bytes) at the shared destination with
//   the swizzle of the span applied to the shared address (16-byte chunk bits 4.. XOR bits 7..), then
//   completes the box's bytes on the mbarrier;
// * an mbarrier has an arrival count, a pending count, a transaction count and a phase; a phase completes
//   when the pending arrivals and the transaction count both reach zero; try_wait.parity(P) is true once the
//   phase of parity P completed (the current phase's parity differs from P);
// * wgmma.mma_async (m64nNk16 f16 / bf16, m64nNk32 e4m3 / e5m2, .f32 accumulators) is a warp-group
//   collective: descriptors are decoded (start, leading / stride byte offsets, swizzle mode; base offset 0),
//   A and B read from shared memory in the canonical K-major or (16-bit types only) MN-major layouts at
//   wait_group time, fp8 bytes decoded as the PTX ISA's formats (e4m3: bias 7, no infinities, S.1111.111 is
//   NaN, 448 the largest; e5m2: bias 15, IEEE-like infinities and NaNs), the D fragment is the PTX ISA's
//   (thread t, register r: row 16 (t / 32) + (t % 32) / 4 + 8 (r / 2 % 2), column 8 (r / 4) + 2 (t % 4) + r % 2).
//   An operand byte that a TMA load has not landed yet is an error, as is a wgmma without a wgmma.fence since
//   the thread's last wait_group, or a thread that exits with wgmma groups in flight.
#pragma once

#include <algorithm>
#include <map>

using cuuint64_t = uint64_t;
using cuuint32_t = uint32_t;
enum CUresult { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 };
enum CUtensorMapDataType {
  CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0, CU_TENSOR_MAP_DATA_TYPE_UINT16, CU_TENSOR_MAP_DATA_TYPE_UINT32,
  CU_TENSOR_MAP_DATA_TYPE_INT32, CU_TENSOR_MAP_DATA_TYPE_UINT64, CU_TENSOR_MAP_DATA_TYPE_INT64,
  CU_TENSOR_MAP_DATA_TYPE_FLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
  CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
};
enum CUtensorMapInterleave { CU_TENSOR_MAP_INTERLEAVE_NONE = 0, CU_TENSOR_MAP_INTERLEAVE_16B, CU_TENSOR_MAP_INTERLEAVE_32B };
enum CUtensorMapSwizzle {
  CU_TENSOR_MAP_SWIZZLE_NONE = 0, CU_TENSOR_MAP_SWIZZLE_32B, CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_SWIZZLE_128B
};
enum CUtensorMapL2promotion {
  CU_TENSOR_MAP_L2_PROMOTION_NONE = 0, CU_TENSOR_MAP_L2_PROMOTION_L2_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
  CU_TENSOR_MAP_L2_PROMOTION_L2_256B
};
enum CUtensorMapFloatOOBfill { CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0, CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA };
struct alignas(64) CUtensorMap {
  unsigned long long opaque[16];
};

namespace lkc {

struct TensorMap {  // what an encoded CUtensorMap holds (in its 128 bytes)
  uint32_t magic;
  uint8_t rank, elem_bytes, swizzle, oob;
  uint32_t box[5];
  uint8_t estride[5];
  uint64_t dims[5];
  uint64_t strides[5];  // bytes; strides[0] is the element size
  const unsigned char* addr;
};
static_assert(sizeof(TensorMap) <= sizeof(CUtensorMap), "a tensor map fits a CUtensorMap");
constexpr uint32_t TMAP_MAGIC = 0x4c4b544du;

inline char* tmap_error() {
  static char msg[256] = "";
  return msg;
}
inline CUresult tmap_refuse(const char* fmt, long long a, long long b) {
  std::snprintf(tmap_error(), 256, fmt, a, b);
  return CUDA_ERROR_INVALID_VALUE;
}
inline int span_of(int swizzle) { return swizzle == 3 ? 128 : swizzle == 2 ? 64 : swizzle == 1 ? 32 : 0; }

inline std::vector<const BufInfo*>& globals() {
  static std::vector<const BufInfo*> g;
  return g;
}
inline void register_globals(BufInfo** p, int n) {
  globals().assign(p, p + n);
}
inline const BufInfo* global_at(const unsigned char* a) {
  for (const BufInfo* b : globals())
    if (a >= b->base && a < b->base + b->nbytes) return b;
  return nullptr;
}

}  // namespace lkc

inline CUresult cuTensorMapEncodeTiled(CUtensorMap* map, CUtensorMapDataType dtype, cuuint32_t rank, void* addr,
                                       const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                       const cuuint32_t* estride, CUtensorMapInterleave interleave,
                                       CUtensorMapSwizzle swizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill oob) {
  static const int BYTES[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2};
  if (!map || (uintptr_t)map % 64) return lkc::tmap_refuse("tensorMap %lld is not 64-byte aligned%lld", (long long)(uintptr_t)map, 0);
  if ((int)dtype < 0 || (int)dtype > 9) return lkc::tmap_refuse("data type %lld is not modelled%lld", dtype, 0);
  if (rank < 1 || rank > 5) return lkc::tmap_refuse("tensorRank %lld is not in 1..5%lld", rank, 0);
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE) return lkc::tmap_refuse("interleave %lld is not modelled%lld", interleave, 0);
  if ((uintptr_t)addr % 16) return lkc::tmap_refuse("globalAddress %lld is not 16-byte aligned%lld", (long long)(uintptr_t)addr, 0);
  lkc::TensorMap t{};
  t.magic = lkc::TMAP_MAGIC;
  t.rank = (uint8_t)rank;
  t.elem_bytes = (uint8_t)BYTES[dtype];
  t.swizzle = (uint8_t)swizzle;
  t.oob = (uint8_t)oob;
  t.addr = static_cast<const unsigned char*>(addr);
  t.strides[0] = t.elem_bytes;
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0 || dims[i] > (1ull << 32)) return lkc::tmap_refuse("globalDim[%lld] = %lld is not in 1..2^32", i, (long long)dims[i]);
    if (box[i] == 0 || box[i] > 256) return lkc::tmap_refuse("boxDim[%lld] = %lld is not in 1..256", i, box[i]);
    if (estride[i] == 0 || estride[i] > 8) return lkc::tmap_refuse("elementStrides[%lld] = %lld is not in 1..8", i, estride[i]);
    if (estride[i] != 1) return lkc::tmap_refuse("elementStrides[%lld] = %lld: strided boxes are not modelled", i, estride[i]);
    t.dims[i] = dims[i];
    t.box[i] = box[i];
    t.estride[i] = (uint8_t)estride[i];
    if (i + 1 < rank) {
      if (strides[i] % 16 || strides[i] >= (1ull << 40))
        return lkc::tmap_refuse("globalStrides[%lld] = %lld is not a multiple of 16 below 2^40", i, (long long)strides[i]);
      t.strides[i + 1] = strides[i];
    }
  }
  uint64_t inner = (uint64_t)box[0] * t.elem_bytes;
  if (inner % 16) return lkc::tmap_refuse("boxDim[0] x element size = %lld bytes is not a multiple of 16%lld", (long long)inner, 0);
  int span = lkc::span_of(swizzle);
  if (span && inner > (uint64_t)span)
    return lkc::tmap_refuse("boxDim[0] x element size = %lld bytes exceeds the %lld-byte swizzle span", (long long)inner, span);
  if (oob != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE && dtype != CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
      dtype != CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && dtype != CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
    return lkc::tmap_refuse("NaN out-of-bounds fill of a non-floating data type %lld%lld", dtype, 0);
  std::memset(map, 0, sizeof *map);
  std::memcpy(map, &t, sizeof t);
  return CUDA_SUCCESS;
}

namespace lkc {

// ---- mbarriers ----------------------------------------------------------------------------------------------
struct Mbar {
  uint32_t count = 0;
  int64_t pending = 0, tx = 0;
  uint32_t phase = 0;  // completed phases
  int line = 0;
};
struct TmaLoad {  // a TMA box read at issue, landing later
  uint32_t bar;
  int line;
  std::vector<std::pair<uint32_t, std::vector<unsigned char>>> chunks;  // (shared byte, 16 bytes or fewer)
  int64_t bytes;
};
struct WgOp {
  int n, dt, dtb, scale_d, trans_a, trans_b, line;
  uint64_t da, db;
  std::vector<Acc<float>> d;  // 128 threads x n/2 registers
  uint32_t lo[2] = {0, 0}, hi[2] = {0, 0};  // the shared bytes its A and B span (a TMA load must not overwrite)
};
struct WgGroup {
  int arrived = 0;
  std::vector<WgOp> open;
  std::deque<std::vector<WgOp>> groups;
  int regs = 0;  // setmaxnreg's count
};
struct WgThread {
  int kind = 0, line = 0, fenced = 0;
  uint64_t da = 0, db = 0;
  int n = 0, dt = 0, dtb = 0, scale_d = 0, trans_a = 0, trans_b = 0, value = 0;
  Acc<float>* d = nullptr;
};
struct Sm90 {
  std::map<uint32_t, Mbar> bars;
  std::deque<TmaLoad> tma;
  std::vector<WgGroup> wg;
  std::vector<WgThread> wt;
  uint64_t idle = 0;
};
inline Sm90& S90() {
  static Sm90 s;
  return s;
}
inline void progress() { S90().idle = 0; }

inline void sm90_block_start() {
  Sm90& s = S90();
  World& w = W();
  s.bars.clear();
  s.tma.clear();
  s.wg.assign((size_t)(w.threads + 127) / 128, WgGroup{});
  // registers per thread at entry: what ptxas gives a kernel that uses setmaxnreg (one block of the launch
  // bounds' threads: 65536 / threads, a multiple of 8, at most 240)
  int each = 65536 / w.threads / 8 * 8;
  for (WgGroup& g : s.wg) g.regs = each < 240 ? each : 240;
  s.wt.assign((size_t)w.threads, WgThread{});
  s.idle = 0;
}

inline Mbar& mbar(uint32_t addr, int line, const char* what) {
  if (addr % 8) fail(line, "misaligned: %s on shared byte %u (mbarriers are 8-byte aligned)", what, addr);
  shared_buffer_at(addr, 8, line, what);
  auto it = S90().bars.find(addr);
  if (it == S90().bars.end()) fail(line, "%s on shared byte %u, which holds no initialised mbarrier", what, addr);
  return it->second;
}
inline void mbar_init(uint32_t addr, uint32_t count, int line) {
  if (addr % 8) fail(line, "misaligned: mbarrier.init on shared byte %u", addr);
  shared_buffer_at(addr, 8, line, "mbarrier.init");
  if (count < 1 || count >= (1u << 20)) fail(line, "mbarrier.init count %u is not in 1..2^20-1", count);
  Mbar m;
  m.count = count;
  m.pending = count;
  m.line = line;
  S90().bars[addr] = m;
  progress();
}
inline void mbar_fence_init() {}
inline void mbar_complete(Mbar& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.count;
    progress();
  }
}
// mbarrier.arrive[.expect_tx]: the transaction count grows by tx, then one arrival
inline void mbar_arrive(uint32_t addr, uint32_t tx, int line) {
  Mbar& m = mbar(addr, line, "mbarrier.arrive");
  m.tx += tx;
  if (m.pending <= 0) fail(line, "mbarrier.arrive: phase %u of the mbarrier at shared byte %u has all its %u arrivals",
                           m.phase, addr, m.count);
  --m.pending;
  progress();
  mbar_complete(m);
}

inline void check_in_flight(const TmaLoad& t) {  // write-after-read: a wgmma not yet waited for reads them
  for (const WgGroup& g : S90().wg) {
    for (size_t i = 0; i <= g.groups.size(); ++i) {
      const std::vector<WgOp>& ops = i < g.groups.size() ? g.groups[i] : g.open;
      for (const WgOp& op : ops)
        for (auto& c : t.chunks)
          for (int o = 0; o < 2; ++o)
            if (c.first < op.hi[o] && op.lo[o] < c.first + c.second.size())
              fail(t.line, "a TMA load overwrites shared byte %u that the wgmma of line %d (not yet waited for) "
                   "reads", c.first, op.line);
    }
  }
}

inline void land_one() {
  Sm90& s = S90();
  World& w = W();
  TmaLoad t = std::move(s.tma.front());
  s.tma.pop_front();
  check_in_flight(t);
  for (auto& c : t.chunks) std::memcpy(w.smem.data() + c.first, c.second.data(), c.second.size());
  auto it = s.bars.find(t.bar);
  if (it == s.bars.end()) fail(t.line, "TMA load completes on shared byte %u, which holds no mbarrier", t.bar);
  it->second.tx -= t.bytes;
  progress();
  mbar_complete(it->second);
}

inline void describe_spin(int line) {
  Sm90& s = S90();
  char buf[512];
  int n = 0;
  for (auto& kv : s.bars)
    if (n < 400)
      n += std::snprintf(buf + n, sizeof buf - n, " [byte %u: phase %u, %lld of %u arrivals pending, tx %lld]",
                         kv.first, kv.second.phase, (long long)kv.second.pending, kv.second.count,
                         (long long)kv.second.tx);
  fail(line, "deadlock: threads spin on mbarriers that no arrival or TMA load can complete;%s", buf);
}

// one failed spin: land the oldest TMA load if there is one, else give the other threads a turn
inline void spin(int line) {
  Sm90& s = S90();
  if (!s.tma.empty()) {
    land_one();
    return;
  }
  if (++s.idle > (uint64_t)64 * W().threads + 100000) describe_spin(line);
  reschedule(false);
}

inline bool mbar_try_wait(uint32_t addr, uint32_t parity, int line) {
  Mbar& m = mbar(addr, line, "mbarrier.try_wait.parity");
  if (parity > 1) fail(line, "mbarrier.try_wait.parity with parity %u", parity);
  if ((m.phase & 1u) != parity) {
    progress();
    return true;
  }
  spin(line);
  return false;
}

// ---- TMA ----------------------------------------------------------------------------------------------------
inline uint32_t swizzled(uint32_t addr, int span) {
  if (!span) return addr;
  uint32_t mask = (uint32_t)span / 16 - 1;
  return addr ^ (((addr >> 7) & mask) << 4);
}

// cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [map, {c...}], [bar]
inline void tma_load(uint32_t dst, uint64_t map_ptr, uint32_t bar, const int32_t* c, int rank, int line) {
  World& w = W();
  const TensorMap* t = reinterpret_cast<const TensorMap*>((uintptr_t)map_ptr);
  if (!t || t->magic != TMAP_MAGIC) fail(line, "cp.async.bulk.tensor: operand is no encoded tensor map");
  if (t->rank != rank) fail(line, "cp.async.bulk.tensor.%dd with a rank-%d tensor map", rank, t->rank);
  if (rank != 2) fail(line, "cp.async.bulk.tensor: rank %d is not modelled (2-D tiles)", rank);
  if (dst % 128) fail(line, "misaligned: TMA destination shared byte %u is not 128-byte aligned", dst);
  int eb = t->elem_bytes, span = span_of(t->swizzle);
  uint32_t inner = t->box[0] * eb;
  if (span && inner != (uint32_t)span)
    fail(line, "TMA box rows of %u bytes under a %d-byte swizzle are not modelled", inner, span);
  int64_t bytes = (int64_t)inner * t->box[1];
  shared_buffer_at(dst, (int)bytes, line, "TMA destination");
  mbar(bar, line, "cp.async.bulk.tensor completion");
  const BufInfo* g = global_at(t->addr);
  if (!g) fail(line, "cp.async.bulk.tensor: the tensor map's global address is in no kernel argument");
  TmaLoad load{bar, line, {}, bytes};
  for (uint32_t y = 0; y < t->box[1]; ++y) {
    for (uint32_t x0 = 0; x0 < t->box[0]; x0 += 16 / eb) {  // one 16-byte chunk of the row
      std::vector<unsigned char> chunk(16, 0);
      for (int e = 0; e < 16 / eb; ++e) {
        int64_t cx = (int64_t)c[0] + x0 + e, cy = (int64_t)c[1] + y;
        if (cx < 0 || cy < 0 || cx >= (int64_t)t->dims[0] || cy >= (int64_t)t->dims[1]) continue;  // zero fill
        int64_t off = (t->addr - g->base) + cx * t->strides[0] + cy * t->strides[1];
        if (off < 0 || off + eb > g->nbytes)
          fail(line, "out of bounds: TMA element (%lld, %lld) is byte %lld of %s (%lld bytes)", (long long)cx,
               (long long)cy, (long long)off, g->name, (long long)g->nbytes);
        std::memcpy(chunk.data() + e * eb, g->base + off, eb);
      }
      load.chunks.emplace_back(swizzled(dst + y * inner + x0 * eb, span), std::move(chunk));
    }
  }
  S90().tma.push_back(std::move(load));
  progress();
}

inline void check_landed(uint32_t addr, int n, int line) {
  for (const TmaLoad& t : S90().tma)
    for (auto& c : t.chunks)
      if (addr < c.first + c.second.size() && c.first < addr + (uint32_t)n)
        fail(line, "wgmma reads shared byte %u that a TMA load (line %d) has not written yet", addr, t.line);
}

// ---- fp8 (PTX ISA "Alternate floating point data formats") ------------------------------------------------------
constexpr int E4M3 = 40, E5M2 = 41;  // wgmma operand types beyond lk_cuda_cpu.h's Dt
inline int dt_bytes(int dt) { return dt == E4M3 || dt == E5M2 ? 1 : 2; }
inline int dt_k(int dt) { return 32 / dt_bytes(dt); }  // wgmma K: 32 bytes of a row
// e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal (m / 8 * 2^-6); no infinity,
// S.1111.111 is NaN
inline double decode_e4m3(uint8_t b) {
  int sign = b >> 7, e = (b >> 3) & 15, m = b & 7;
  double v = e == 15 && m == 7 ? std::nan("") : e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return sign ? -v : v;
}
// e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits; exponent 0 is subnormal (m / 4 * 2^-14); exponent 31 is
// infinity (m = 0) or NaN
inline double decode_e5m2(uint8_t b) {
  int sign = b >> 7, e = (b >> 2) & 31, m = b & 3;
  double v = e == 31 ? (m ? std::nan("") : HUGE_VAL) : e == 0 ? std::ldexp(m / 4.0, -14)
                                                             : std::ldexp(1.0 + m / 4.0, e - 15);
  return sign ? -v : v;
}

// ---- warp-group collectives -----------------------------------------------------------------------------------
enum WgKind { WG_MMA = 1, WG_COMMIT, WG_WAIT, WG_SETMAXNREG };
inline void wg_perform(int kind, int g, int line);

inline void wg_collective(int kind, int line) {
  World& w = W();
  Thr& self = *w.cur;
  if (w.threads % 128) fail(line, "a warp-group instruction in a block of %d threads (not whole warp groups)", w.threads);
  WgThread& me = S90().wt[self.tid];
  me.kind = kind;
  me.line = line;
  int g = self.tid / 128;
  WgGroup& grp = S90().wg[g];
  self.state = WARP;
  progress();
  if (++grp.arrived == 128) {
    for (int t = g * 128; t < g * 128 + 128; ++t)
      if (S90().wt[t].kind != kind || S90().wt[t].line != line)
        fail(line, "divergent warp-group instruction: thread %d is at line %d", t, S90().wt[t].line);
    wg_perform(kind, g, line);
    for (int t = g * 128; t < g * 128 + 128; ++t) w.thr[t].state = RUN;
    grp.arrived = 0;
    return;
  }
  reschedule(false);
}

inline void setmaxnreg(bool inc, int n, int line) {
  if (n < 24 || n > 256 || n % 8) fail(line, "setmaxnreg %d is not a multiple of 8 in 24..256", n);
  WgThread& me = S90().wt[W().cur->tid];
  me.value = n * (inc ? 1 : -1);
  wg_collective(WG_SETMAXNREG, line);
  // .inc waits until the block's pool has the registers (other warp groups releasing theirs)
  World& w = W();
  int g = w.cur->tid / 128;
  for (;;) {
    int used = 0;
    for (WgGroup& x : S90().wg) used += 128 * x.regs;
    int want = used - 128 * S90().wg[g].regs + 128 * n;
    if (!inc || want <= 65536) break;
    spin(line);
  }
  if (inc ? n < S90().wg[g].regs : n > S90().wg[g].regs)
    fail(line, "setmaxnreg.%s %d from %d registers", inc ? "inc" : "dec", n, S90().wg[g].regs);
  S90().wg[g].regs = n;
}

inline void wgmma_fence() { S90().wt[W().cur->tid].fenced = 1; }
inline void wgmma_commit(int line) { wg_collective(WG_COMMIT, line); }
inline void wgmma_wait(int n, int line) {
  S90().wt[W().cur->tid].value = n;
  wg_collective(WG_WAIT, line);
}
inline void wgmma(int n, int dt, int dtb, Acc<float>* d, uint64_t da, uint64_t db, bool scale_d, int sa, int sb, int ta,
                  int tb, int line) {
  if (sa != 1 || sb != 1) fail(line, "wgmma with imm-scale-a/b %d, %d is not modelled", sa, sb);
  if (dt_bytes(dt) != dt_bytes(dtb)) fail(line, "wgmma with a %d-byte A and a %d-byte B type", dt_bytes(dt), dt_bytes(dtb));
  if (dt_bytes(dt) == 1 && (ta || tb))
    fail(line, "wgmma .e4m3 / .e5m2 with imm-trans-a %d, imm-trans-b %d: 8-bit operands are K-major only", ta, tb);
  WgThread& me = S90().wt[W().cur->tid];
  if (!me.fenced) fail(line, "wgmma.mma_async with no wgmma.fence since the thread's last wgmma.wait_group");
  me.n = n;
  me.dt = dt;
  me.dtb = dtb;
  me.d = d;
  me.da = da;
  me.db = db;
  me.scale_d = scale_d;
  me.trans_a = ta;
  me.trans_b = tb;
  wg_collective(WG_MMA, line);
}

// byte address of element (row, k) of a wgmma operand of ``eb``-byte elements (row: M of A, N of B; k below
// 32 / eb) in the canonical layouts of the PTX ISA ("Shared Memory Matrix Layout", "Matrix Descriptor Format"):
// K-major core matrices are 8 rows of 16 bytes whatever the type
inline uint32_t operand_byte(uint64_t desc, bool mn_major, int row, int k, int eb, int line) {
  uint32_t start = (uint32_t)(desc & 0x3FFF) << 4, lbo = (uint32_t)((desc >> 16) & 0x3FFF) << 4;
  uint32_t sbo = (uint32_t)((desc >> 32) & 0x3FFF) << 4;
  int base = (int)((desc >> 49) & 7), mode = (int)(desc >> 62);
  if (base) fail(line, "wgmma descriptor base offset %d is not modelled", base);
  int span = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
  int kb = k * eb;  // the element's byte along K
  if (!mn_major) {
    if (!span) return start + (row / 8) * sbo + (row % 8) * 16 + (kb / 16) * lbo + kb % 16;  // 8x16B cores
    return swizzled(start + (row / 8) * sbo + (row % 8) * span + kb, span);  // leading offset unused
  }
  if (eb != 2) fail(line, "wgmma: an MN-major operand of %d-byte elements (the PTX ISA transposes 16-bit ones only)", eb);
  if (!span) fail(line, "wgmma: an MN-major operand without swizzle is not modelled");
  int e = span / 2;  // 16-bit elements per swizzle row
  return swizzled(start + (row / e) * lbo + (k / 8) * sbo + (k % 8) * span + (row % e) * 2, span);
}

// element (row, k) of an operand whose matrix starts in shared buffer ``home`` (every element lies in it)
inline double operand(uint64_t desc, bool mn_major, int row, int k, int dt, const BufInfo* home, int line) {
  int eb = dt_bytes(dt);
  uint32_t a = operand_byte(desc, mn_major, row, k, eb, line);
  if (shared_buffer_at(a, eb, line, "wgmma operand") != home)
    fail(line, "wgmma operand element (%d, %d) at shared byte %u is outside %s, where its matrix starts", row, k, a,
         home->name);
  check_landed(a, eb, line);
  if (eb == 1) {
    uint8_t b = W().smem[a];
    return dt == E4M3 ? decode_e4m3(b) : decode_e5m2(b);
  }
  uint16_t bits;
  std::memcpy(&bits, W().smem.data() + a, 2);
  return dt == BF16 ? (double)__bfloat162float(__nv_bfloat16{bits}) : (double)__half2float(half{bits});
}

inline void wgmma_run(const WgOp& op) {
  static double A[64][32], B[32][256];
  const int K = dt_k(op.dt);
  const BufInfo* ha = shared_buffer_at((uint32_t)(op.da & 0x3FFF) << 4, 16, op.line, "wgmma A start");
  const BufInfo* hb = shared_buffer_at((uint32_t)(op.db & 0x3FFF) << 4, 16, op.line, "wgmma B start");
  for (int m = 0; m < 64; ++m)
    for (int k = 0; k < K; ++k) A[m][k] = operand(op.da, op.trans_a, m, k, op.dt, ha, op.line);
  for (int nn = 0; nn < op.n; ++nn)
    for (int k = 0; k < K; ++k) B[k][nn] = operand(op.db, op.trans_b, nn, k, op.dtb, hb, op.line);
  int per = op.n / 2;
  for (int t = 0; t < 128; ++t) {
    for (int r = 0; r < per; ++r) {
      int row = 16 * (t / 32) + (t % 32) / 4 + 8 * ((r / 2) % 2), col = 8 * (r / 4) + 2 * (t % 4) + r % 2;
      double s = 0;
      for (int k = 0; k < K; ++k) s += A[row][k] * B[k][col];
      Acc<float> d = op.d[(size_t)t * per + r];
      float c = op.scale_d ? static_cast<float>(d) : 0.0f;
      d = (float)(s + (double)c);
    }
  }
}

inline void wg_perform(int kind, int g, int line) {
  Sm90& s = S90();
  WgGroup& grp = s.wg[g];
  WgThread* th = &s.wt[(size_t)g * 128];
  for (int t = 1; t < 128; ++t) {
    bool same = kind == WG_MMA ? (th[t].n == th[0].n && th[t].dt == th[0].dt && th[t].dtb == th[0].dtb &&
                                  th[t].da == th[0].da &&
                                  th[t].db == th[0].db && th[t].scale_d == th[0].scale_d &&
                                  th[t].trans_a == th[0].trans_a && th[t].trans_b == th[0].trans_b)
                               : th[t].value == th[0].value;
    if (!same) fail(line, "warp-group instruction with operands that differ between threads %d and %d", g * 128,
                    g * 128 + t);
  }
  if (kind == WG_MMA) {
    WgOp op{th[0].n, th[0].dt, th[0].dtb, th[0].scale_d, th[0].trans_a, th[0].trans_b, line, th[0].da, th[0].db, {}};
    const int K = dt_k(op.dt), eb = dt_bytes(op.dt);
    if (op.n < 8 || op.n > 256 || op.n % 8) fail(line, "wgmma m64n%dk%d: N is not a multiple of 8 in 8..256", op.n, K);
    for (int o = 0; o < 2; ++o) {
      op.lo[o] = 0xffffffffu;
      int rows = o ? op.n : 64;
      for (int r = 0; r < rows; ++r)
        for (int k = 0; k < K; ++k) {
          uint32_t a = operand_byte(o ? op.db : op.da, o ? op.trans_b : op.trans_a, r, k, eb, line);
          op.lo[o] = std::min(op.lo[o], a);
          op.hi[o] = std::max(op.hi[o], a + (uint32_t)eb);
        }
    }
    op.d.reserve((size_t)128 * op.n / 2);
    for (int t = 0; t < 128; ++t)
      for (int r = 0; r < op.n / 2; ++r) op.d.push_back(th[t].d[r]);
    grp.open.push_back(std::move(op));
  } else if (kind == WG_COMMIT) {
    grp.groups.push_back(std::move(grp.open));
    grp.open.clear();
  } else if (kind == WG_WAIT) {
    while ((int)grp.groups.size() > th[0].value) {
      for (const WgOp& op : grp.groups.front()) wgmma_run(op);
      grp.groups.pop_front();
    }
    if (th[0].value == 0 && !grp.open.empty())
      fail(line, "wgmma.wait_group 0 with %d wgmma never committed", (int)grp.open.size());
    for (int t = 0; t < 128; ++t) th[t].fenced = 0;
  }
}

inline void sm90_thread_exit(Thr& t) {
  Sm90& s = S90();
  if (s.wg.empty()) return;
  WgGroup& g = s.wg[(size_t)t.tid / 128];
  if (!g.groups.empty() || !g.open.empty())
    fail(0, "thread %d exits with %d wgmma groups in flight (no wgmma.wait_group 0)", t.tid,
         (int)g.groups.size() + (g.open.empty() ? 0 : 1));
}
inline void sm90_block_end() {
  while (!S90().tma.empty()) land_one();  // a load nobody waited for still lands
}

}  // namespace lkc
