// A CPU model of the Ascend C basic API subset that layoutkit's printer emits, so the printed kernels run
// with g++ (no CANN).  Semantics follow the Ascend C documentation (Atlas A2):
//   * DataCopy(L1, GM, Nd2NzParams): ND -> NZ, C0 = 32 bytes / sizeof(T); dstNzC0Stride / dstNzNStride in
//     32-byte blocks (C0 elements), the last partial C0 block of a row zero-filled;
//   * DataCopy with DataCopyParams: blockCount bursts of blockLen 32-byte blocks, gaps in 32-byte blocks;
//   * DataCopyPad with DataCopyExtParams: blockLen in bytes, the GM gap in bytes, the UB gap in 32-byte
//     blocks, every UB block starting on a 32-byte boundary;
//   * InitConstValue: repeatTimes runs of blockNum 32-byte blocks, dstGap blocks apart;
//   * LoadData(L0, L1, LoadData2DParams): repeatTimes 512-byte fractals, source fractal startIndex + t *
//     srcStride, destination fractal t * (1 + dstGap); ifTranspose transposes each 16 x 16 fractal;
//   * Mmad: A in L0A zZ (16 x C0 fractals row-major inside and between), B in L0B nZ (C0 x 16 fractals,
//     column-major inside, row-major between), C in L0C zN (16 x 16, row-major inside, column-major
//     between); products of 16-bit inputs accumulate in fp32 in increasing k;
//   * Fixpipe<Dst, Src, CFG_ROW_MAJOR>(GM, L0C, FixpipeParamsV220): NZ2ND, srcStride = the L0C rows between
//     16-column blocks, quantPre NoQuant / F322F16 / F322BF16 (round to nearest even), reluEn, and
//     SetAtomicAdd accumulation;
//   * the vector ops Add/Mul/Max/Adds/Muls/Maxs/Relu/Duplicate/Cast over calCount elements.
// Every pipe (cube: MTE2, MTE1, M, FIX; each vector core: MTE2, V, MTE3) is its own in-order queue with a
// vector clock; SetFlag/WaitFlag, PipeBarrier, the TQue operations and CrossCoreSetFlag/WaitFlag are the only
// orderings between queues, so an access to an element that another pipe touched without an ordering is a
// data race.  On-chip buffers start as garbage (0xFF bytes: NaN) marked uninitialised, and computing on an
// uninitialised element is an error; every access is bounds-checked; two AI cores writing (or one writing
// what another reads of) the same GM element is an error.  Each AI core (a cube core and its two vector
// cores, run as cooperating threads) runs in turn.  An error prints "lkm error: ..." and exits with 3.
#pragma once
#include <condition_variable>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR uint8_t*
#define ASCEND_IS_AIV (lkm::core().aiv)
#define ASCEND_IS_AIC (!lkm::core().aiv)
enum KernelMetaType { KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2 };
#define KERNEL_TASK_TYPE_DEFAULT(type) static_assert((type) == KERNEL_TYPE_MIX_AIC_1_2 || true, "kernel type")

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace lkm {

[[noreturn]] void fail(const std::string& what);

inline uint16_t f32_to_f16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, m = x & 0x7fffffu;
    if (e == 0xff) return uint16_t(sign | 0x7c00u | (m ? 0x200u : 0u));
    int ex = int(e) - 127 + 15;
    if (ex >= 31) return uint16_t(sign | 0x7c00u);
    if (ex <= 0) {
        if (ex < -10) return uint16_t(sign);
        m |= 0x800000u;
        int shift = 14 - ex;
        uint32_t half = m >> shift, rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) ++half;
        return uint16_t(sign | half);
    }
    uint32_t half = (uint32_t(ex) << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent: correct
    return uint16_t(sign | half);
}
inline float f16_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
    if (e == 0) {
        if (m == 0) {
            x = sign;
        } else {
            int ex = -1;
            do { ++ex; m <<= 1; } while (!(m & 0x400u));
            x = sign | (uint32_t(127 - 15 - ex) << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (e == 0x1f) {
        x = sign | 0x7f800000u | (m << 13);
    } else {
        x = sign | ((e - 15 + 127) << 23) | (m << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}
inline uint16_t f32_to_bf16(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
inline float bf16_to_f32(uint16_t b) {
    uint32_t x = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

}  // namespace lkm

struct half {
    uint16_t bits = 0;
    half() = default;
    half(float f) : bits(lkm::f32_to_f16(f)) {}
    half(double f) : half(float(f)) {}
    half(int v) : half(float(v)) {}
    operator float() const { return lkm::f16_to_f32(bits); }
};
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    bfloat16_t(float f) : bits(lkm::f32_to_bf16(f)) {}
    bfloat16_t(double f) : bfloat16_t(float(f)) {}
    bfloat16_t(int v) : bfloat16_t(float(v)) {}
    operator float() const { return lkm::bf16_to_f32(bits); }
};

namespace lkm {

constexpr int NP = 10;  // pipes of one AI core: cube MTE2 MTE1 M FIX, then MTE2 V MTE3 of each vector core
enum Local { P_MTE2, P_MTE1, P_M, P_FIX, P_V, P_MTE3 };
enum Scope { GM, L1, L0A, L0B, L0C, UB };
inline const char* scope_name(int s) {
    static const char* n[] = {"GM", "L1", "L0A", "L0B", "L0C", "UB"};
    return n[s];
}
inline size_t capacity(int s) {
    static const size_t c[] = {0, 512 * 1024, 64 * 1024, 64 * 1024, 128 * 1024, 192 * 1024};
    return c[s];
}

struct Shadow {
    uint16_t wepoch = 0;          // the writing op's epoch on its pipe
    uint16_t repoch[NP] = {};     // per pipe: the last reading op's epoch (this AI core's reads)
    int16_t wblock = -1;          // the AI core that wrote it last (-1: the host)
    int16_t rblock = -1;          // the AI core that read it (-1: none, -2: several)
    int16_t rblk = -1;            // the AI core the repoch entries belong to
    int8_t wpipe = -1;
    uint8_t init = 0;
    uint8_t atomic = 0;
};

struct Buf {
    std::string name;
    int scope = GM;
    size_t elem = 0;  // element bytes (fixed by the first typed view)
    size_t bytes = 0;
    uint8_t* data = nullptr;
    std::vector<Shadow> sh;
    std::vector<uint8_t> own;
    size_t count() const { return elem ? bytes / elem : 0; }
};

struct Core {
    bool aiv = false;
    int sub = 0;
    int base = 0;  // this core's first pipe id
    std::string name;
};

struct Event {
    bool set = false;
    uint16_t clock[NP] = {};
};

struct Machine {
    std::vector<Buf*> gm;
    int block = 0, block_num = 1;
    uint16_t vc[NP][NP] = {};
    std::map<long, Event> events;
    std::map<long, std::vector<std::vector<uint16_t>>> cross;  // (target core, flag) -> pending signals
    std::vector<std::unique_ptr<Buf>> locals;
    size_t used[3][6] = {};
    bool atomic[3] = {};
    const char* op = "";
    // cooperative scheduling of the cube core and its two vector cores
    std::mutex mu;
    std::condition_variable cv;
    int turn = 0;
    int done[3] = {};
    int idle = 0;
};

inline Machine& M() {
    static Machine m;
    return m;
}
inline thread_local Core* g_core = nullptr;
inline Core& core() { return *g_core; }

[[noreturn]] inline void fail(const std::string& what) {
    Machine& m = M();
    std::fprintf(stderr, "lkm error: AI core %d, %s: %s: %s\n", m.block, g_core ? g_core->name.c_str() : "host",
                 m.op, what.c_str());
    std::fflush(stderr);
    std::_Exit(3);
}

inline int pipe_id(int local) {
    Core& c = core();
    if (!c.aiv) {
        if (local > P_FIX) fail("the cube core has no pipe V / MTE3");
        return local;
    }
    switch (local) {
        case P_MTE2: return c.base;
        case P_V: return c.base + 1;
        case P_MTE3: return c.base + 2;
        default: fail("a vector core has no pipe MTE1 / M / FIX");
    }
}
inline const char* pipe_name(int p) {
    static const char* n[] = {"MTE2", "MTE1", "M", "FIX", "aiv0.MTE2", "aiv0.V", "aiv0.MTE3", "aiv1.MTE2",
                              "aiv1.V", "aiv1.MTE3"};
    return n[p];
}

// an op issued on pipe p: its epoch
inline uint16_t issue(int p) {
    uint16_t& e = M().vc[p][p];
    if (e == 65535) fail("more than 65535 ops on one pipe");
    return ++e;
}

inline Buf* find_gm(const void* ptr, size_t& offset) {
    for (Buf* b : M().gm) {
        const uint8_t* q = static_cast<const uint8_t*>(ptr);
        if (q >= b->data && q < b->data + b->bytes) {
            offset = size_t(q - b->data);
            return b;
        }
    }
    fail("SetGlobalBuffer: the pointer is not inside a GM tensor the host passed");
}

// one element access by pipe p (epoch e): bounds, initialisation, races within and across AI cores
inline Shadow& touch(Buf* b, int64_t idx, int p, uint16_t e, bool write, bool need_init = false) {
    Machine& m = M();
    if (idx < 0 || size_t(idx) >= b->count())
        fail(std::string(write ? "writes " : "reads ") + b->name + "[" + std::to_string(idx) + "], outside its " +
             std::to_string(b->count()) + " elements");
    Shadow& s = b->sh[size_t(idx)];
    int blk = m.block;
    if (b->scope == GM) {
        if (s.wblock >= 0 && s.wblock != blk && !(write && s.atomic && m.atomic[core().aiv ? 1 + core().sub : 0]))
            fail(b->name + "[" + std::to_string(idx) + "] was written by AI core " + std::to_string(s.wblock) +
                 ": AI cores run concurrently, so this access races with it");
        if (write && s.rblock != -1 && s.rblock != blk)
            fail(b->name + "[" + std::to_string(idx) + "] is written after another AI core read it");
    }
    if (s.wpipe >= 0 && s.wblock == blk && s.wpipe != p && s.wepoch > m.vc[p][s.wpipe])
        fail(std::string("pipe ") + pipe_name(p) + " touches " + b->name + "[" + std::to_string(idx) +
             "] after pipe " + pipe_name(s.wpipe) + " wrote it, with no SetFlag/WaitFlag ordering them (a race)");
    if (s.rblk != blk) {
        std::memset(s.repoch, 0, sizeof s.repoch);
        s.rblk = int16_t(blk);
    }
    if (write) {
        for (int q = 0; q < NP; ++q)
            if (q != p && s.repoch[q] > m.vc[p][q])
                fail(std::string("pipe ") + pipe_name(p) + " writes " + b->name + "[" + std::to_string(idx) +
                     "] that pipe " + pipe_name(q) + " reads, with no SetFlag/WaitFlag ordering them (a race)");
        s.wpipe = int8_t(p);
        s.wepoch = e;
        s.wblock = int16_t(blk);
        std::memset(s.repoch, 0, sizeof s.repoch);
        s.atomic = m.atomic[core().aiv ? 1 + core().sub : 0];
    } else {
        if (need_init && !s.init)
            fail("reads uninitialised " + b->name + "[" + std::to_string(idx) + "]");
        if (s.repoch[p] < e) s.repoch[p] = e;
        if (b->scope == GM) s.rblock = (s.rblock == -1 || s.rblock == blk) ? int16_t(blk) : int16_t(-2);
    }
    return s;
}

template <typename T> T* at(Buf* b, int64_t idx) { return reinterpret_cast<T*>(b->data) + idx; }

template <typename T> inline float to_f(const T& v) { return float(v); }

// cross-core scheduling: only the thread whose turn it is runs
inline void pass_turn() {
    Machine& m = M();
    for (int k = 1; k <= 3; ++k) {
        int j = (m.turn + k) % 3;
        if (!m.done[j]) {
            m.turn = j;
            break;
        }
    }
    m.cv.notify_all();
}
inline int self_index() { return core().aiv ? 1 + core().sub : 0; }
inline void wait_turn(std::unique_lock<std::mutex>& lk) {
    Machine& m = M();
    int me = self_index();
    m.cv.wait(lk, [&] { return m.turn == me; });
}

}  // namespace lkm

namespace AscendC {

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC };
enum class HardEvent : uint8_t { MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, M_FIX, FIX_M, MTE2_M, M_MTE2, FIX_MTE2,
                                 MTE2_FIX, MTE2_V, V_MTE2, V_MTE3, MTE3_V, MTE2_MTE3, MTE3_MTE2 };
enum class QuantMode_t { NoQuant, F322F16, F322BF16 };
enum class CO2Layout : uint8_t { NZ = 0, ROW_MAJOR, COLUMN_MAJOR };
struct FixpipeConfig {
    CO2Layout format;
};
constexpr FixpipeConfig CFG_NZ = {CO2Layout::NZ};
constexpr FixpipeConfig CFG_ROW_MAJOR = {CO2Layout::ROW_MAJOR};
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };

inline int scope_of(TPosition p) {
    switch (p) {
        case TPosition::A1: case TPosition::B1: case TPosition::C1: return lkm::L1;
        case TPosition::A2: return lkm::L0A;
        case TPosition::B2: return lkm::L0B;
        case TPosition::CO1: return lkm::L0C;
        case TPosition::VECIN: case TPosition::VECOUT: case TPosition::VECCALC: return lkm::UB;
        default: lkm::fail("no on-chip buffer at this TPosition");
    }
}

template <typename T> class GlobalTensor {
public:
    lkm::Buf* buf = nullptr;
    int64_t off = 0;  // elements
    __aicore__ void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize = 0) {
        (void)bufferSize;
        size_t bytes = 0;
        buf = lkm::find_gm(buffer, bytes);
        if (buf->elem && buf->elem != sizeof(T)) lkm::fail(buf->name + ": viewed with two element sizes");
        if (bytes % sizeof(T)) lkm::fail(buf->name + ": a view not on an element boundary");
        off = int64_t(bytes / sizeof(T));
    }
    __aicore__ GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor g = *this;
        g.off += int64_t(offset);
        return g;
    }
};

template <typename T> class LocalTensor {
public:
    lkm::Buf* buf = nullptr;
    int64_t off = 0;
    int slot = -1;
    __aicore__ LocalTensor operator[](uint32_t offset) const {
        LocalTensor l = *this;
        l.off += int64_t(offset);
        return l;
    }
    uint32_t GetSize() const { return uint32_t(buf->count() - size_t(off)); }
};

namespace detail {
inline lkm::Buf* alloc(int scope, uint32_t len, const char* what) {
    lkm::Machine& m = lkm::M();
    int c = lkm::self_index();
    if ((scope == lkm::UB) != lkm::core().aiv)
        lkm::fail(std::string(what) + ": a " + lkm::scope_name(scope) + " buffer on the " +
                  (lkm::core().aiv ? "vector" : "cube") + " core");
    m.used[c][scope] += len;
    if (m.used[c][scope] > lkm::capacity(scope))
        lkm::fail(std::string(what) + ": " + std::to_string(m.used[c][scope]) + " bytes of " + lkm::scope_name(scope) +
                  " exceed its " + std::to_string(lkm::capacity(scope)));
    auto b = std::make_unique<lkm::Buf>();
    b->scope = scope;
    b->bytes = len;
    b->own.assign(len, 0xFF);  // garbage: NaN in every float type
    b->data = b->own.data();
    b->name = std::string(lkm::scope_name(scope)) + "#" + std::to_string(m.locals.size()) + "@" + lkm::core().name;
    lkm::Buf* raw = b.get();
    m.locals.push_back(std::move(b));
    return raw;
}
template <typename T> LocalTensor<T> view(lkm::Buf* b) {
    if (b->elem && b->elem != sizeof(T)) lkm::fail(b->name + ": viewed with two element sizes");
    if (!b->elem) {
        b->elem = sizeof(T);
        b->sh.assign(b->count(), lkm::Shadow{});
    }
    LocalTensor<T> t;
    t.buf = b;
    return t;
}
}  // namespace detail

template <TPosition pos> class TBuf {
public:
    lkm::Buf* buf = nullptr;
    template <typename T> __aicore__ LocalTensor<T> Get() {
        if (!buf) lkm::fail("TBuf::Get before TPipe::InitBuffer");
        return detail::view<T>(buf);
    }
};

// a queue between the producing and the consuming pipe of its position (EnQue / DeQue order them, FreeTensor /
// AllocTensor order the consumer's reads before the producer's next writes)
inline void queue_pipes(TPosition p, int& prod, int& cons) {
    switch (p) {
        case TPosition::A1: case TPosition::B1: prod = lkm::P_MTE2; cons = lkm::P_MTE1; break;
        case TPosition::A2: case TPosition::B2: prod = lkm::P_MTE1; cons = lkm::P_M; break;
        case TPosition::CO1: prod = lkm::P_M; cons = lkm::P_FIX; break;
        case TPosition::VECIN: prod = lkm::P_MTE2; cons = lkm::P_V; break;
        case TPosition::VECOUT: prod = lkm::P_V; cons = lkm::P_MTE3; break;
        default: lkm::fail("TQue at a position without a producer and a consumer pipe");
    }
}

template <TPosition pos, int depth> class TQue {
public:
    std::vector<lkm::Buf*> bufs;
    std::vector<int> state;  // 0 free, 1 allocated, 2 queued
    std::vector<std::vector<uint16_t>> freed, queued;
    std::vector<int> fifo;
    template <typename T> __aicore__ LocalTensor<T> AllocTensor() {
        int prod, cons;
        queue_pipes(pos, prod, cons);
        for (size_t i = 0; i < bufs.size(); ++i)
            if (state[i] == 0) {
                state[i] = 1;
                int p = lkm::pipe_id(prod);
                for (int q = 0; q < lkm::NP; ++q)
                    if (freed[i][q] > lkm::M().vc[p][q]) lkm::M().vc[p][q] = freed[i][q];
                LocalTensor<T> t = detail::view<T>(bufs[i]);
                t.slot = int(i);
                return t;
            }
        lkm::fail("TQue::AllocTensor with every buffer in use (a missing FreeTensor)");
    }
    template <typename T> __aicore__ void EnQue(const LocalTensor<T>& t) {
        int prod, cons;
        queue_pipes(pos, prod, cons);
        if (t.slot < 0 || state[size_t(t.slot)] != 1) lkm::fail("TQue::EnQue of a tensor not allocated from it");
        int p = lkm::pipe_id(prod);
        queued[size_t(t.slot)].assign(lkm::M().vc[p], lkm::M().vc[p] + lkm::NP);
        state[size_t(t.slot)] = 2;
        fifo.push_back(t.slot);
    }
    template <typename T> __aicore__ LocalTensor<T> DeQue() {
        int prod, cons;
        queue_pipes(pos, prod, cons);
        if (fifo.empty()) lkm::fail("TQue::DeQue on an empty queue (a missing EnQue: deadlock)");
        int i = fifo.front();
        fifo.erase(fifo.begin());
        int c = lkm::pipe_id(cons);
        for (int q = 0; q < lkm::NP; ++q)
            if (queued[size_t(i)][q] > lkm::M().vc[c][q]) lkm::M().vc[c][q] = queued[size_t(i)][q];
        state[size_t(i)] = 1;
        LocalTensor<T> t = detail::view<T>(bufs[size_t(i)]);
        t.slot = i;
        return t;
    }
    template <typename T> __aicore__ void FreeTensor(const LocalTensor<T>& t) {
        int prod, cons;
        queue_pipes(pos, prod, cons);
        if (t.slot < 0 || state[size_t(t.slot)] != 1) lkm::fail("TQue::FreeTensor of a tensor not held");
        int c = lkm::pipe_id(cons);
        freed[size_t(t.slot)].assign(lkm::M().vc[c], lkm::M().vc[c] + lkm::NP);
        state[size_t(t.slot)] = 0;
    }
};

class TPipe {
public:
    template <TPosition pos> __aicore__ bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        buf.buf = detail::alloc(scope_of(pos), len, "TPipe::InitBuffer");
        return true;
    }
    template <TPosition pos, int depth> __aicore__ bool InitBuffer(TQue<pos, depth>& que, uint8_t num, uint32_t len) {
        for (int i = 0; i < num; ++i) {
            que.bufs.push_back(detail::alloc(scope_of(pos), len, "TPipe::InitBuffer"));
            que.state.push_back(0);
            que.freed.emplace_back(lkm::NP, 0);
            que.queued.emplace_back(lkm::NP, 0);
        }
        return true;
    }
};

struct Nd2NzParams {
    uint16_t ndNum = 0;
    uint16_t nValue = 0;
    uint16_t dValue = 0;
    uint16_t srcNdMatrixStride = 0;
    uint16_t srcDValue = 0;
    uint16_t dstNzC0Stride = 0;
    uint16_t dstNzNStride = 0;
    uint16_t dstNzMatrixStride = 0;
};
struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
};
struct LoadData2DParams {
    uint16_t startIndex = 0;
    uint16_t dstGap = 0;
    uint16_t srcStride = 0;
    bool ifTranspose = 0;
    uint8_t repeatTimes = 0;
    uint8_t sid = 0;
    uint8_t addrMode = 0;
};
using LoadData2dParams = LoadData2DParams;
struct MmadParams {
    uint16_t m = 0;
    uint16_t n = 0;
    uint16_t k = 0;
    bool isBias = false;
    int32_t fmOffset = 0;
    bool enSsparse = false;
    bool enWinogradA = false;
    bool enWinogradB = false;
    uint8_t unitFlag = 0;
    bool kDirectionAlign = false;
    bool cmatrixSource = false;
    bool cmatrixInitVal = true;
};
struct FixpipeParamsV220 {
    uint16_t nSize = 0;
    uint16_t mSize = 0;
    uint16_t srcStride = 0;
    uint32_t dstStride = 0;
    QuantMode_t quantPre = QuantMode_t::NoQuant;
    uint64_t deqScalar = 0;
    uint16_t ndNum = 1;
    uint16_t srcNdStride = 0;
    uint16_t dstNdStride = 0;
    bool reluEn = false;
    uint8_t unitFlag = 0;
};
template <typename T> struct InitConstValueParams {
    uint16_t repeatTimes = 0;
    uint16_t blockNum = 0;
    uint16_t dstGap = 0;
    T initValue = 0;
};
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
};
template <typename T> struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = 0;
};

namespace detail {
struct Op {
    explicit Op(const char* name) { lkm::M().op = name; }
    ~Op() { lkm::M().op = ""; }
};
// copy one element (bytes and initialisation) from (sb, si) on pipe p to (db, di)
template <typename T>
inline void move(lkm::Buf* db, int64_t di, lkm::Buf* sb, int64_t si, int p, uint16_t e) {
    lkm::Shadow& s = lkm::touch(sb, si, p, e, false);
    uint8_t init = s.init;
    T v = *lkm::at<T>(sb, si);
    lkm::touch(db, di, p, e, true).init = init;
    *lkm::at<T>(db, di) = v;
}
template <typename T> inline void put(lkm::Buf* db, int64_t di, T v, int p, uint16_t e) {
    lkm::touch(db, di, p, e, true).init = 1;
    *lkm::at<T>(db, di) = v;
}
template <typename T> inline float get(lkm::Buf* b, int64_t i, int p, uint16_t e) {
    lkm::touch(b, i, p, e, false, true);
    return float(*lkm::at<T>(b, i));
}
template <typename T> constexpr int c0() { return 32 / int(sizeof(T)); }
}  // namespace detail

// ---- data movement ------------------------------------------------------------------------------------------

template <typename T>
__aicore__ void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& q) {
    detail::Op op("DataCopy(Nd2NzParams)");
    if (dst.buf->scope != lkm::L1) lkm::fail("ND2NZ DataCopy writes L1");
    int p = lkm::pipe_id(lkm::P_MTE2);
    uint16_t e = lkm::issue(p);
    const int C0 = detail::c0<T>();
    int blocks = (q.dValue + C0 - 1) / C0;
    for (int i = 0; i < q.ndNum; ++i)
        for (int r = 0; r < q.nValue; ++r)
            for (int c = 0; c < blocks * C0; ++c) {
                int64_t d = dst.off + int64_t(i) * q.dstNzMatrixStride + int64_t(c / C0) * q.dstNzC0Stride * C0 +
                            int64_t(r) * q.dstNzNStride * C0 + c % C0;
                if (c < q.dValue)
                    detail::move<T>(dst.buf, d, src.buf, src.off + int64_t(i) * q.srcNdMatrixStride +
                                                              int64_t(r) * q.srcDValue + c, p, e);
                else
                    detail::put<T>(dst.buf, d, T(0), p, e);  // the partial C0 block's tail
            }
}

template <typename D, typename S>
inline void burst(D& dst, const S& src, const DataCopyParams& q, int pipe) {
    int p = lkm::pipe_id(pipe);
    uint16_t e = lkm::issue(p);
    size_t elem = src.buf->elem;
    int64_t per = int64_t(32 / elem);
    for (int b = 0; b < q.blockCount; ++b)
        for (int64_t x = 0; x < int64_t(q.blockLen) * per; ++x) {
            int64_t si = src.off + b * (int64_t(q.blockLen) + q.srcStride) * per + x;
            int64_t di = dst.off + b * (int64_t(q.blockLen) + q.dstStride) * per + x;
            if (elem == 2) detail::move<uint16_t>(dst.buf, di, src.buf, si, p, e);
            else if (elem == 4) detail::move<uint32_t>(dst.buf, di, src.buf, si, p, e);
            else detail::move<uint8_t>(dst.buf, di, src.buf, si, p, e);
        }
}
template <typename T>
__aicore__ void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& q) {
    detail::Op op("DataCopy(GM -> local)");
    LocalTensor<T> d = dst;
    burst(d, src, q, lkm::P_MTE2);
}
template <typename T>
__aicore__ void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& q) {
    detail::Op op("DataCopy(UB -> GM)");
    GlobalTensor<T> d = dst;
    burst(d, src, q, lkm::P_MTE3);
}

template <typename T>
__aicore__ void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& q,
                            const DataCopyPadExtParams<T>& pad) {
    detail::Op op("DataCopyPad(GM -> UB)");
    (void)pad;
    if (q.blockLen % sizeof(T) || q.srcStride % sizeof(T)) lkm::fail("lengths are not whole elements");
    int p = lkm::pipe_id(lkm::P_MTE2);
    uint16_t e = lkm::issue(p);
    int64_t n = q.blockLen / sizeof(T), ub = (q.blockLen + 31) / 32 * 32 / sizeof(T);
    for (int b = 0; b < q.blockCount; ++b)
        for (int64_t x = 0; x < n; ++x)
            detail::move<T>(dst.buf, dst.off + b * (ub + int64_t(q.dstStride) * 32 / int64_t(sizeof(T))) + x, src.buf,
                            src.off + b * (n + int64_t(q.srcStride / sizeof(T))) + x, p, e);
}
template <typename T>
__aicore__ void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& q) {
    detail::Op op("DataCopyPad(UB -> GM)");
    if (q.blockLen % sizeof(T) || q.dstStride % sizeof(T)) lkm::fail("lengths are not whole elements");
    int p = lkm::pipe_id(lkm::P_MTE3);
    uint16_t e = lkm::issue(p);
    int64_t n = q.blockLen / sizeof(T), ub = (q.blockLen + 31) / 32 * 32 / sizeof(T);
    for (int b = 0; b < q.blockCount; ++b)
        for (int64_t x = 0; x < n; ++x) {
            int64_t si = src.off + b * (ub + int64_t(q.srcStride) * 32 / int64_t(sizeof(T))) + x;
            float v = detail::get<T>(src.buf, si, p, e);
            detail::put<T>(dst.buf, dst.off + b * (n + int64_t(q.dstStride / sizeof(T))) + x, T(v), p, e);
        }
}

template <typename T> __aicore__ void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& q) {
    detail::Op op("InitConstValue");
    int p = lkm::pipe_id(lkm::P_MTE2);
    uint16_t e = lkm::issue(p);
    const int C0 = detail::c0<T>();
    for (int r = 0; r < q.repeatTimes; ++r)
        for (int64_t x = 0; x < int64_t(q.blockNum) * C0; ++x)
            detail::put<T>(dst.buf, dst.off + int64_t(r) * (q.blockNum + q.dstGap) * C0 + x, q.initValue, p, e);
}

template <typename T>
__aicore__ void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& q) {
    detail::Op op("LoadData");
    if (src.buf->scope != lkm::L1 || (dst.buf->scope != lkm::L0A && dst.buf->scope != lkm::L0B))
        lkm::fail("LoadData moves L1 -> L0A / L0B");
    int p = lkm::pipe_id(lkm::P_MTE1);
    uint16_t e = lkm::issue(p);
    const int64_t frac = 512 / int64_t(sizeof(T));
    if (q.ifTranspose && sizeof(T) != 2) lkm::fail("ifTranspose needs a 16-bit type");
    for (int t = 0; t < q.repeatTimes; ++t)
        for (int64_t x = 0; x < frac; ++x) {
            int64_t from = q.ifTranspose ? (x % 16) * 16 + x / 16 : x;
            detail::move<T>(dst.buf, dst.off + int64_t(t) * (1 + q.dstGap) * frac + x, src.buf,
                            src.off + (int64_t(q.startIndex) + int64_t(t) * q.srcStride) * frac + from, p, e);
        }
}

template <typename T, typename U, typename S>
__aicore__ void Mmad(const LocalTensor<T>& c, const LocalTensor<U>& a, const LocalTensor<S>& b, const MmadParams& q) {
    detail::Op op("Mmad");
    if (c.buf->scope != lkm::L0C || a.buf->scope != lkm::L0A || b.buf->scope != lkm::L0B)
        lkm::fail("Mmad reads L0A and L0B and accumulates into L0C");
    int p = lkm::pipe_id(lkm::P_M);
    uint16_t e = lkm::issue(p);
    const int C0 = detail::c0<U>(), F = 16;
    int kf = (q.k + C0 - 1) / C0, nf = (q.n + F - 1) / F, mf = (q.m + F - 1) / F;
    std::vector<float> av(size_t(q.m) * q.k), bv(size_t(q.k) * q.n);
    for (int m = 0; m < q.m; ++m)
        for (int k = 0; k < q.k; ++k)
            av[size_t(m) * q.k + k] = detail::get<U>(a.buf, a.off + (int64_t(m / F) * kf + k / C0) * F * C0 +
                                                                (m % F) * C0 + k % C0, p, e);
    for (int k = 0; k < q.k; ++k)
        for (int n = 0; n < q.n; ++n)
            bv[size_t(k) * q.n + n] = detail::get<S>(b.buf, b.off + (int64_t(k / C0) * nf + n / F) * F * C0 +
                                                                (n % F) * C0 + k % C0, p, e);
    for (int m = 0; m < q.m; ++m)
        for (int n = 0; n < q.n; ++n) {
            int64_t ci = c.off + (int64_t(n / F) * mf + m / F) * F * F + (m % F) * F + n % F;
            float acc = q.cmatrixInitVal ? 0.0f : detail::get<T>(c.buf, ci, p, e);
            for (int k = 0; k < q.k; ++k) {
                volatile float prod = av[size_t(m) * q.k + k] * bv[size_t(k) * q.n + n];  // no fused multiply-add
                acc = acc + prod;
            }
            detail::put<T>(c.buf, ci, T(acc), p, e);
        }
}

template <typename D, typename S, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ void Fixpipe(const GlobalTensor<D>& dst, const LocalTensor<S>& src, const FixpipeParamsV220& q) {
    detail::Op op("Fixpipe");
    static_assert(config.format == CO2Layout::ROW_MAJOR, "the model implements NZ2ND (CFG_ROW_MAJOR)");
    if (src.buf->scope != lkm::L0C) lkm::fail("Fixpipe reads L0C");
    int p = lkm::pipe_id(lkm::P_FIX);
    uint16_t e = lkm::issue(p);
    bool add = lkm::M().atomic[lkm::self_index()];
    for (int m = 0; m < q.mSize; ++m)
        for (int n = 0; n < q.nSize; ++n) {
            float v = detail::get<S>(src.buf, src.off + int64_t(n / 16) * q.srcStride * 16 + m * 16 + n % 16, p, e);
            if (q.reluEn && v < 0) v = 0;
            int64_t di = dst.off + int64_t(m) * q.dstStride + n;
            if (add) v = float(*lkm::at<D>(dst.buf, di)) + v;
            bool ok = (q.quantPre == QuantMode_t::NoQuant && sizeof(D) == 4) ||
                      (q.quantPre == QuantMode_t::F322F16 && std::is_same<D, half>::value) ||
                      (q.quantPre == QuantMode_t::F322BF16 && std::is_same<D, bfloat16_t>::value);
            if (!ok) lkm::fail("quantPre does not convert to the destination type");
            detail::put<D>(dst.buf, di, D(v), p, e);
        }
}

// ---- vector ops ---------------------------------------------------------------------------------------------

namespace detail {
template <typename T, typename F>
inline void vec(const char* name, const LocalTensor<T>& dst, std::initializer_list<const LocalTensor<T>*> srcs,
                int32_t n, F f) {
    Op op(name);
    int p = lkm::pipe_id(lkm::P_V);
    uint16_t e = lkm::issue(p);
    std::vector<float> out(size_t(n > 0 ? n : 0));
    for (int32_t i = 0; i < n; ++i) {
        float x[2] = {0, 0};
        int k = 0;
        for (auto* s : srcs) x[k++] = get<T>(s->buf, s->off + i, p, e);
        out[size_t(i)] = f(x[0], x[1]);
    }
    for (int32_t i = 0; i < n; ++i) put<T>(dst.buf, dst.off + i, T(out[size_t(i)]), p, e);
}
}  // namespace detail

template <typename T>
__aicore__ void Add(const LocalTensor<T>& d, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& n) {
    detail::vec("Add", d, {&a, &b}, n, [](float x, float y) { return x + y; });
}
template <typename T>
__aicore__ void Mul(const LocalTensor<T>& d, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& n) {
    detail::vec("Mul", d, {&a, &b}, n, [](float x, float y) { return x * y; });
}
template <typename T>
__aicore__ void Max(const LocalTensor<T>& d, const LocalTensor<T>& a, const LocalTensor<T>& b, const int32_t& n) {
    detail::vec("Max", d, {&a, &b}, n, [](float x, float y) { return x > y ? x : y; });
}
template <typename T>
__aicore__ void Adds(const LocalTensor<T>& d, const LocalTensor<T>& a, const T& s, const int32_t& n) {
    float c = float(s);
    detail::vec("Adds", d, {&a}, n, [c](float x, float) { return x + c; });
}
template <typename T>
__aicore__ void Muls(const LocalTensor<T>& d, const LocalTensor<T>& a, const T& s, const int32_t& n) {
    float c = float(s);
    detail::vec("Muls", d, {&a}, n, [c](float x, float) { return x * c; });
}
template <typename T>
__aicore__ void Maxs(const LocalTensor<T>& d, const LocalTensor<T>& a, const T& s, const int32_t& n) {
    float c = float(s);
    detail::vec("Maxs", d, {&a}, n, [c](float x, float) { return x > c ? x : c; });
}
template <typename T> __aicore__ void Relu(const LocalTensor<T>& d, const LocalTensor<T>& a, const int32_t& n) {
    detail::vec("Relu", d, {&a}, n, [](float x, float) { return x > 0 ? x : 0.0f; });
}
template <typename T> __aicore__ void Duplicate(const LocalTensor<T>& d, const T& s, const int32_t& n) {
    float c = float(s);
    detail::vec<T>("Duplicate", d, {}, n, [c](float, float) { return c; });
}
template <typename T, typename U>
__aicore__ void Cast(const LocalTensor<T>& d, const LocalTensor<U>& s, const RoundMode& mode, const uint32_t n) {
    detail::Op op("Cast");
    if (mode != RoundMode::CAST_RINT) lkm::fail("the model casts with CAST_RINT only");
    int p = lkm::pipe_id(lkm::P_V);
    uint16_t e = lkm::issue(p);
    for (uint32_t i = 0; i < n; ++i) detail::put<T>(d.buf, d.off + i, T(detail::get<U>(s.buf, s.off + i, p, e)), p, e);
}

// ---- ordering -------------------------------------------------------------------------------------------------

inline void event_pipes(HardEvent ev, int& src, int& dst) {
    using lkm::P_FIX; using lkm::P_M; using lkm::P_MTE1; using lkm::P_MTE2; using lkm::P_MTE3; using lkm::P_V;
    static const int t[][2] = {{P_MTE2, P_MTE1}, {P_MTE1, P_MTE2}, {P_MTE1, P_M}, {P_M, P_MTE1}, {P_M, P_FIX},
                               {P_FIX, P_M}, {P_MTE2, P_M}, {P_M, P_MTE2}, {P_FIX, P_MTE2}, {P_MTE2, P_FIX},
                               {P_MTE2, P_V}, {P_V, P_MTE2}, {P_V, P_MTE3}, {P_MTE3, P_V}, {P_MTE2, P_MTE3},
                               {P_MTE3, P_MTE2}};
    src = t[int(ev)][0];
    dst = t[int(ev)][1];
}

template <HardEvent ev> __aicore__ void SetFlag(int32_t id) {
    detail::Op op("SetFlag");
    int s, d;
    event_pipes(ev, s, d);
    int ps = lkm::pipe_id(s);
    lkm::pipe_id(d);
    long key = (long(lkm::self_index()) * 64 + long(ev)) * 16 + id;
    lkm::Event& E = lkm::M().events[key];
    if (E.set) lkm::fail("SetFlag<" + std::to_string(int(ev)) + ">(" + std::to_string(id) +
                         ") while an earlier one is still unwaited");
    E.set = true;
    std::memcpy(E.clock, lkm::M().vc[ps], sizeof E.clock);
}
template <HardEvent ev> __aicore__ void WaitFlag(int32_t id) {
    detail::Op op("WaitFlag");
    int s, d;
    event_pipes(ev, s, d);
    lkm::pipe_id(s);
    int pd = lkm::pipe_id(d);
    long key = (long(lkm::self_index()) * 64 + long(ev)) * 16 + id;
    lkm::Event& E = lkm::M().events[key];
    if (!E.set) lkm::fail("WaitFlag<" + std::to_string(int(ev)) + ">(" + std::to_string(id) +
                          ") with no SetFlag before it (deadlock)");
    E.set = false;
    for (int q = 0; q < lkm::NP; ++q)
        if (E.clock[q] > lkm::M().vc[pd][q]) lkm::M().vc[pd][q] = E.clock[q];
}

template <pipe_t pipe> __aicore__ void PipeBarrier() {
    if (pipe != PIPE_ALL) return;  // one pipe runs in order anyway
    lkm::Machine& m = lkm::M();
    std::vector<int> mine;
    if (lkm::core().aiv) mine = {lkm::pipe_id(lkm::P_MTE2), lkm::pipe_id(lkm::P_V), lkm::pipe_id(lkm::P_MTE3)};
    else mine = {0, 1, 2, 3};
    uint16_t join[lkm::NP] = {};
    for (int p : mine)
        for (int q = 0; q < lkm::NP; ++q) join[q] = join[q] > m.vc[p][q] ? join[q] : m.vc[p][q];
    for (int p : mine)
        for (int q = 0; q < lkm::NP; ++q) m.vc[p][q] = join[q];
}

template <typename T> __aicore__ void SetAtomicAdd() {
    static_assert(sizeof(T) == 4, "the model accumulates float32");
    lkm::M().atomic[lkm::self_index()] = true;
}
__aicore__ inline void SetAtomicNone() { lkm::M().atomic[lkm::self_index()] = false; }

inline int local_of(pipe_t p) {
    switch (p) {
        case PIPE_MTE2: return lkm::P_MTE2;
        case PIPE_MTE1: return lkm::P_MTE1;
        case PIPE_M: return lkm::P_M;
        case PIPE_FIX: return lkm::P_FIX;
        case PIPE_V: return lkm::P_V;
        case PIPE_MTE3: return lkm::P_MTE3;
        default: lkm::fail("CrossCoreSetFlag on this pipe is not modelled");
    }
}

// mode 2: the cube signals both of its vector cores; the cube's wait takes a signal from each of them
template <uint8_t mode, pipe_t pipe> __aicore__ void CrossCoreSetFlag(uint16_t id) {
    detail::Op op("CrossCoreSetFlag");
    static_assert(mode == 2, "the model implements mode 2 (a cube core and its two vector cores)");
    lkm::Machine& m = lkm::M();
    int p = lkm::pipe_id(local_of(pipe));
    std::vector<uint16_t> clock(m.vc[p], m.vc[p] + lkm::NP);
    std::vector<int> targets = lkm::core().aiv ? std::vector<int>{lkm::core().sub} : std::vector<int>{1, 2};
    for (int t : targets) {
        long key = (lkm::core().aiv ? 100 + t : t) * 16 + id;  // cube <- aiv t: 100 + t; aiv t <- cube: t
        auto& qd = m.cross[key];
        if (qd.size() >= 15) lkm::fail("CrossCoreSetFlag: more than 15 signals pending");
        qd.push_back(clock);
    }
    m.idle = 0;
}
template <uint8_t mode = 0, pipe_t pipe = PIPE_S> __aicore__ void CrossCoreWaitFlag(uint16_t id) {
    lkm::Machine& m = lkm::M();
    std::vector<long> keys = lkm::core().aiv ? std::vector<long>{long(1 + lkm::core().sub) * 16 + id}
                                             : std::vector<long>{100L * 16 + id, 101L * 16 + id};
    std::unique_lock<std::mutex> lk(m.mu, std::adopt_lock);
    for (;;) {
        bool ready = true;
        for (long k : keys) ready = ready && !m.cross[k].empty();
        if (ready) break;
        if (++m.idle > 6) lkm::fail("CrossCoreWaitFlag: every core waits on a cross-core flag nobody sets (deadlock)");
        lkm::pass_turn();
        lkm::wait_turn(lk);
    }
    lk.release();
    m.idle = 0;
    std::vector<int> mine;
    if (lkm::core().aiv) mine = {lkm::pipe_id(lkm::P_MTE2), lkm::pipe_id(lkm::P_V), lkm::pipe_id(lkm::P_MTE3)};
    else mine = {0, 1, 2, 3};
    for (long k : keys) {
        std::vector<uint16_t> c = m.cross[k].front();
        m.cross[k].erase(m.cross[k].begin());
        for (int p : mine)
            for (int q = 0; q < lkm::NP; ++q)
                if (c[size_t(q)] > m.vc[p][q]) m.vc[p][q] = c[size_t(q)];
    }
}

inline int64_t GetBlockIdx() {
    return lkm::core().aiv ? int64_t(lkm::M().block) * 2 + lkm::core().sub : lkm::M().block;
}
inline int64_t GetBlockNum() { return lkm::M().block_num; }
inline int64_t GetSubBlockIdx() { return lkm::core().sub; }
inline int64_t GetSubBlockNum() { return 2; }

}  // namespace AscendC

namespace lkm {

// run AI core `block` of a launch of `block_num`: the cube core and its two vector cores, in turn
inline void run_block(int block, int block_num, const std::function<void()>& kernel) {
    Machine& m = M();
    m.block = block;
    m.block_num = block_num;
    std::memset(m.vc, 0, sizeof m.vc);
    m.events.clear();
    m.cross.clear();
    m.locals.clear();
    std::memset(m.used, 0, sizeof m.used);
    std::memset(m.atomic, 0, sizeof m.atomic);
    std::memset(m.done, 0, sizeof m.done);
    m.turn = 0;
    m.idle = 0;
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i)
        threads.emplace_back([&, i] {
            Core c;
            c.aiv = i > 0;
            c.sub = i > 0 ? i - 1 : 0;
            c.base = i == 0 ? 0 : 4 + 3 * (i - 1);
            c.name = i == 0 ? "cube" : "aiv" + std::to_string(i - 1);
            g_core = &c;
            std::unique_lock<std::mutex> lk(m.mu);
            wait_turn(lk);
            lk.release();
            kernel();
            std::unique_lock<std::mutex> lk2(m.mu, std::adopt_lock);
            for (auto& kv : m.events)
                if (kv.second.set && kv.first / (64 * 16) == i) fail("a SetFlag is never waited for");
            m.done[i] = 1;
            m.idle = 0;
            pass_turn();
        });
    for (auto& t : threads) t.join();
    for (auto& kv : m.cross)
        if (!kv.second.empty()) {
            g_core = nullptr;
            fail("a CrossCoreSetFlag is never waited for");
        }
}

}  // namespace lkm
