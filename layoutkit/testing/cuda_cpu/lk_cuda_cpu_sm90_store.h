// sm_90 epilogue instructions for the CPU harness: stmatrix, st.shared vectors, named barriers, the async
// proxy fence, TMA tensor stores and their bulk async-groups.
//
// Appended after lk_cuda_cpu_sm90.h (its tensor maps and swizzle).  Written from the PTX ISA:
// * stmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 [p], {r..}: a warp collective, the inverse of
//   ldmatrix.  Lanes 8 i .. 8 i + 7 give the 16-byte-aligned addresses of rows 0..7 of matrix i; lane t holds in
//   register i the elements (t / 4, 2 (t % 4)) and (t / 4, 2 (t % 4) + 1) of matrix i (low half first).  With
//   .trans the matrix is stored column-major: row address j receives column j of the fragment.  Each row is
//   a generic-proxy write of the lane that gave its address;
// * bar.sync id, count (id 1..15): the named barrier of count threads; the harness models one that every
//   live thread of the block takes (the producer warp group has left), which orders shared accesses as
//   __syncthreads does;
// * fence.proxy.async.shared::cta orders the generic-proxy accesses before it (in causality order) with the
//   async-proxy ones after it.  A TMA store sees a generic write W only through such a fence F with W before
//   F (W earlier in F's thread, or a barrier between them) and F before the store (earlier in the issuing
//   thread, or a barrier between them): each writer fencing before the barrier, or the issuing thread
//   fencing after it, both qualify.  A TMA store reading a byte no fence orders so is an error; so is a byte
//   another thread wrote since the last barrier (a race), and a byte nobody wrote;
// * cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [map, {x, y}], [src]: checked at issue (tensor
//   map, 128-byte aligned source, visibility), its shared bytes read late: at the cp.async.bulk.wait_group
//   that completes its group.  Then the box is written to global memory, the span's swizzle applied to the
//   shared addresses, elements outside the tensor not written (the tails).  A generic write to a byte of a
//   store still in flight (its group not waited for with wait_group[.read]) is an error, as is a thread
//   exiting with stores uncommitted or in flight;
// * cp.async.bulk.commit_group closes the thread's open stores into a group; cp.async.bulk.wait_group[.read]
//   N completes the thread's oldest groups until at most N are pending.
#pragma once

namespace lkc {

struct TmaStoreOp {
  const TensorMap* t;
  int32_t c[2];
  uint32_t src;
  int line;
};
struct StoreState {
  std::vector<std::vector<TmaStoreOp>> open;
  std::vector<std::deque<std::vector<TmaStoreOp>>> groups;
  std::vector<uint32_t> fence_seq, fence_epoch, prev_fence_seq;  // last fence, its epoch, the last before it
  std::vector<uint32_t> fence_epochs;  // the epochs (barrier intervals) in which some thread fenced
  std::map<int, std::vector<int>> named;  // barrier id -> waiting threads
  int in_flight = 0;
};
inline StoreState& ST() {
  static StoreState s;
  return s;
}

inline void sm90_store_block_start() {
  StoreState& s = ST();
  size_t n = W().thr.size();
  s.open.assign(n, {});
  s.groups.assign(n, {});
  s.fence_seq.assign(n, 0);
  s.fence_epoch.assign(n, 0);
  s.prev_fence_seq.assign(n, 0);
  s.named.clear();
  s.fence_epochs.clear();
  s.in_flight = 0;
}

inline uint32_t store_bytes(const TmaStoreOp& op) { return op.t->box[0] * op.t->elem_bytes * op.t->box[1]; }

// the shared byte of element (x, y) of a store's box (the swizzle of its span on the shared address)
inline uint32_t store_byte(const TmaStoreOp& op, uint32_t x, uint32_t y) {
  uint32_t inner = op.t->box[0] * op.t->elem_bytes;
  return swizzled(op.src + y * inner + x * op.t->elem_bytes, span_of(op.t->swizzle));
}

inline void sm90_shared_written(uint32_t addr, int n, int line) {
  StoreState& s = ST();
  if (!s.in_flight) return;
  for (size_t t = 0; t < s.open.size(); ++t) {
    auto hit = [&](const std::vector<TmaStoreOp>& ops) {
      for (const TmaStoreOp& op : ops)  // a box covers [src, src + bytes): the swizzle permutes within it
        if (addr < op.src + store_bytes(op) && op.src < addr + (uint32_t)n)
          fail(line, "shared byte %u is overwritten while the TMA store of line %d (thread %d) may still read it "
               "(no cp.async.bulk.wait_group.read for its group)", addr, op.line, (int)t);
    };
    hit(s.open[t]);
    for (auto& g : s.groups[t]) hit(g);
  }
}

// ---- stores from registers ----------------------------------------------------------------------------------
inline void stmatrix_warp(Thr* lanes, int line) {
  World& w = W();
  Thr* self = w.cur;
  int num = (int)lanes[0].in[1], trans = (int)lanes[0].in[2];
  for (int i = 0; i < num; ++i) {
    BankGroup g;
    g.nbytes = 16;
    for (int r = 0; r < 8; ++r) {
      Thr& src = lanes[8 * i + r];
      uint32_t a = src.in[0];
      if (a % 16) fail(line, "misaligned: stmatrix row address shared byte %u of lane %d", a, 8 * i + r);
      shared_buffer_at(a, 16, line, "stmatrix");
      uint16_t row[8];
      for (int k = 0; k < 8; ++k) {  // element k of stored row r: fragment (r, k), or (k, r) with .trans
        int fr = trans ? k : r, fc = trans ? r : k;
        row[k] = (uint16_t)(lanes[4 * fr + fc / 2].in[3 + i] >> (16 * (fc % 2)));
      }
      w.cur = &src;
      shared_write(src.tid, a, 16, w.epoch, line, "stmatrix", row);
      std::memcpy(w.smem.data() + a, row, 16);
      g.mask |= 1u << r;
      g.addr[r] = a;
    }
    if (w.count_banks) bank_flush(g, line);
  }
  w.cur = self;
}

inline void stmatrix(int num, bool trans, uint32_t addr, const uint32_t* r, int line) {
  Thr& t = *W().cur;
  t.in[0] = addr;
  t.in[1] = (uint32_t)num;
  t.in[2] = trans;
  for (int i = 0; i < num; ++i) t.in[3 + i] = r[i];
  collective(STMATRIX, line);
}

// st.shared{.v2,.v4}.{b32,f32} [addr], {r..}: one thread's generic-proxy write
inline void st_shared(uint32_t addr, const uint32_t* r, int n, int line) {
  World& w = W();
  int bytes = 4 * n;
  if (addr % (uint32_t)bytes) fail(line, "misaligned: st.shared of %d bytes at shared byte %u", bytes, addr);
  shared_buffer_at(addr, bytes, line, "st.shared");
  shared_write(w.cur->tid, addr, bytes, w.epoch, line, "st.shared", r);
  std::memcpy(w.smem.data() + addr, r, (size_t)bytes);
  bank_record(w.cur->tid, line, addr, bytes);
}

// ---- named barriers, the proxy fence --------------------------------------------------------------------------
inline void named_barrier(int id, int count, int line) {
  World& w = W();
  if (id < 1 || id > 15) fail(line, "bar.sync %d: named barriers are 1..15 (0 is __syncthreads)", id);
  if (count <= 0 || count % 32 || count > w.threads)
    fail(line, "bar.sync %d, %d: the thread count is not a multiple of 32 in 32..%d", id, count, w.threads);
  std::vector<int>& waiting = ST().named[id];
  waiting.push_back(w.cur->tid);
  w.cur->state = BARRIER;
  if ((int)waiting.size() == count) {
    if (count != w.live)
      fail(line, "bar.sync %d, %d with %d threads live: the harness models named barriers of every live thread", id,
           count, w.live);
    for (int t : waiting) w.thr[t].state = RUN;
    waiting.clear();
    ++w.epoch;
    return;
  }
  reschedule(false);
}

inline void fence_proxy_async() {
  World& w = W();
  StoreState& s = ST();
  int t = w.cur->tid;
  if (s.fence_epoch[t] != w.epoch) s.prev_fence_seq[t] = s.fence_seq[t];
  s.fence_seq[t] = w.wseq;
  s.fence_epoch[t] = w.epoch;
  if (s.fence_epochs.empty() || s.fence_epochs.back() != w.epoch) s.fence_epochs.push_back(w.epoch);
}

// whether an async-proxy operation of thread ``tid`` now sees the generic write ``m`` (see the header comment)
inline bool async_visible(const Meta& m, int tid) {
  StoreState& s = ST();
  uint32_t now = W().epoch;
  int wt = m.w_tid;
  // F in the issuing thread: after W in program order (W its own), or in a later epoch than W
  if ((wt == tid && s.fence_seq[tid] >= m.w_seq) || (s.fence_seq[tid] && s.fence_epoch[tid] > m.w_epoch)) return true;
  // F in the writer's thread after W, before the last barrier
  if (wt != tid && (s.fence_epoch[wt] < now ? s.fence_seq[wt] : s.prev_fence_seq[wt]) >= m.w_seq) return true;
  // F in any thread between two barriers: after W's epoch, before the current one
  uint32_t last = 0;
  for (auto e = s.fence_epochs.rbegin(); e != s.fence_epochs.rend(); ++e)
    if (*e < now) {
      last = *e;
      break;
    }
  return last > m.w_epoch;
}

// ---- TMA stores -------------------------------------------------------------------------------------------------
inline void tma_store(uint64_t map_ptr, const int32_t* c, int rank, uint32_t src, int line) {
  World& w = W();
  const TensorMap* t = reinterpret_cast<const TensorMap*>((uintptr_t)map_ptr);
  if (!t || t->magic != TMAP_MAGIC) fail(line, "cp.async.bulk.tensor (store): operand is no encoded tensor map");
  if (t->rank != rank) fail(line, "cp.async.bulk.tensor.%dd with a rank-%d tensor map", rank, t->rank);
  if (rank != 2) fail(line, "cp.async.bulk.tensor: rank %d is not modelled (2-D tiles)", rank);
  if (src % 128) fail(line, "misaligned: TMA store source shared byte %u is not 128-byte aligned", src);
  int eb = t->elem_bytes, span = span_of(t->swizzle);
  uint32_t inner = t->box[0] * eb;
  if (span && inner != (uint32_t)span)
    fail(line, "TMA box rows of %u bytes under a %d-byte swizzle are not modelled", inner, span);
  TmaStoreOp op{t, {c[0], c[1]}, src, line};
  shared_buffer_at(src, (int)store_bytes(op), line, "TMA store source");
  const BufInfo* g = global_at(t->addr);
  if (!g) fail(line, "cp.async.bulk.tensor (store): the tensor map's global address is in no kernel argument");
  if (g->smem_off < 0) fail(line, "TMA store to the const parameter %s", g->name);
  int tid = w.cur->tid;
  for (uint32_t y = 0; y < t->box[1]; ++y) {
    for (uint32_t x = 0; x < t->box[0]; x += 16 / eb) {
      uint32_t a = store_byte(op, x, y);
      shared_read(tid, a, 16, line, "TMA store");
      for (int i = 0; i < 16; ++i) {
        const Meta& m = w.meta[a + i];
        if (!m.w_seq) fail(line, "TMA store reads shared byte %u that no thread wrote", a + i);
        if (!async_visible(m, tid))
          fail(line, "TMA store reads shared byte %u that thread %d wrote with no fence.proxy.async.shared::cta "
               "ordered before the store (fence, then a barrier)", a + i, (int)m.w_tid);
      }
    }
  }
  ST().open[tid].push_back(op);
  ++ST().in_flight;
  progress();
}

inline void bulk_commit() {
  StoreState& s = ST();
  int t = W().cur->tid;
  s.groups[t].push_back(std::move(s.open[t]));
  s.open[t].clear();
}

// the store lands: its shared bytes read now, the elements inside the tensor written
inline void store_complete(const TmaStoreOp& op) {
  World& w = W();
  const TensorMap* t = op.t;
  const BufInfo* g = global_at(t->addr);
  int eb = t->elem_bytes;
  for (uint32_t y = 0; y < t->box[1]; ++y)
    for (uint32_t x = 0; x < t->box[0]; ++x) {
      int64_t cx = (int64_t)op.c[0] + x, cy = (int64_t)op.c[1] + y;
      if (cx < 0 || cy < 0 || cx >= (int64_t)t->dims[0] || cy >= (int64_t)t->dims[1]) continue;  // clipped
      int64_t off = (t->addr - g->base) + cx * t->strides[0] + cy * t->strides[1];
      if (off < 0 || off + eb > g->nbytes)
        fail(op.line, "out of bounds: TMA store element (%lld, %lld) is byte %lld of %s (%lld bytes)", (long long)cx,
             (long long)cy, (long long)off, g->name, (long long)g->nbytes);
      std::memcpy(g->base + off, w.smem.data() + store_byte(op, x, y), (size_t)eb);
    }
}

inline void bulk_wait(int n, int line) {
  StoreState& s = ST();
  int t = W().cur->tid;
  if (n < 0 || n > 63) fail(line, "cp.async.bulk.wait_group %d is not in 0..63", n);
  while ((int)s.groups[t].size() > n) {
    for (const TmaStoreOp& op : s.groups[t].front()) {
      store_complete(op);
      --s.in_flight;
    }
    s.groups[t].pop_front();
  }
}

inline void sm90_store_thread_exit(Thr& t) {
  StoreState& s = ST();
  if (s.open.empty()) return;
  if (!s.open[(size_t)t.tid].empty())
    fail(s.open[t.tid][0].line, "thread %d exits with %d TMA stores never committed (no cp.async.bulk.commit_group)",
         t.tid, (int)s.open[t.tid].size());
  for (const auto& grp : s.groups[(size_t)t.tid])
    if (!grp.empty())
      fail(grp[0].line, "thread %d exits with %d bulk async-groups of TMA stores in flight (no "
           "cp.async.bulk.wait_group before the shared memory goes away)", t.tid, (int)s.groups[t.tid].size());
}

}  // namespace lkc
