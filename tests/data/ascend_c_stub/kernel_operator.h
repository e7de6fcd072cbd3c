// A minimal stand-in for the CANN "kernel_operator.h", for syntax checks only (g++ -fsyntax-only).
// It declares exactly the Ascend C types, functions and struct fields the layoutkit printer uses, with the
// signatures and field types of the Ascend C basic API; nothing here has a body that computes anything.
#pragma once
#include <cstdint>

#define __global__
#define __aicore__
#define __gm__
#define GM_ADDR __gm__ uint8_t*
#define ASCEND_IS_AIV (false)
#define ASCEND_IS_AIC (true)
enum KernelMetaType { KERNEL_TYPE_AIV_ONLY, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2 };
#define KERNEL_TASK_TYPE_DEFAULT(type) static_assert((type) == KERNEL_TYPE_MIX_AIC_1_2 || true, "kernel type")

struct half {
    half() = default;
    half(float) {}
};
struct bfloat16_t {
    bfloat16_t() = default;
    bfloat16_t(float) {}
};

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_FIX };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

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

template <typename T> class GlobalTensor {
public:
    __aicore__ void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize = 0);
    __aicore__ GlobalTensor operator[](uint64_t offset) const;
};

template <typename T> class LocalTensor {
public:
    __aicore__ LocalTensor operator[](uint32_t offset) const;
};

template <TPosition pos> class TBuf {
public:
    template <typename T> __aicore__ LocalTensor<T> Get();
};

class TPipe {
public:
    template <TPosition pos> __aicore__ bool InitBuffer(TBuf<pos>& buf, uint32_t len);
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

template <typename T>
__aicore__ void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& intriParams);
template <typename T>
__aicore__ void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& dataCopyParams,
                            const DataCopyPadExtParams<T>& padParams);
template <typename T>
__aicore__ void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& dataCopyParams);
template <typename T>
__aicore__ void Add(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    const int32_t& calCount);
template <typename T>
__aicore__ void Mul(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    const int32_t& calCount);
template <typename T>
__aicore__ void Max(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                    const int32_t& calCount);
template <typename T>
__aicore__ void Adds(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& calCount);
template <typename T>
__aicore__ void Muls(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& calCount);
template <typename T>
__aicore__ void Maxs(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T& scalarValue, const int32_t& calCount);
template <typename T>
__aicore__ void Relu(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& calCount);
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
template <typename T, typename U>
__aicore__ void Cast(const LocalTensor<T>& dst, const LocalTensor<U>& src, const RoundMode& roundMode,
                     const uint32_t calCount);
template <typename T>
__aicore__ void Duplicate(const LocalTensor<T>& dst, const T& scalarValue, const int32_t& calCount);
__aicore__ int64_t GetSubBlockIdx();
__aicore__ int64_t GetSubBlockNum();
__aicore__ int64_t GetBlockIdx();
__aicore__ int64_t GetBlockNum();
template <uint8_t modeId, pipe_t pipe> __aicore__ void CrossCoreSetFlag(uint16_t flagId);
template <uint8_t modeId = 0, pipe_t pipe = PIPE_S> __aicore__ void CrossCoreWaitFlag(uint16_t flagId);
template <typename T>
__aicore__ void LoadData(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LoadData2DParams& loadDataParams);
template <typename T, typename U, typename S>
__aicore__ void Mmad(const LocalTensor<T>& dst, const LocalTensor<U>& fm, const LocalTensor<S>& filter,
                     const MmadParams& mmadParams);
template <typename T, typename U, const FixpipeConfig& config = CFG_ROW_MAJOR>
__aicore__ void Fixpipe(const GlobalTensor<T>& dst, const LocalTensor<U>& src, const FixpipeParamsV220& intriParams);
template <typename T>
__aicore__ void InitConstValue(const LocalTensor<T>& dst, const InitConstValueParams<T>& initConstValueParams);
template <HardEvent event> __aicore__ void SetFlag(int32_t eventID);
template <HardEvent event> __aicore__ void WaitFlag(int32_t eventID);
template <pipe_t pipe> __aicore__ void PipeBarrier();
template <typename T> __aicore__ void SetAtomicAdd();
__aicore__ void SetAtomicNone();

}  // namespace AscendC
