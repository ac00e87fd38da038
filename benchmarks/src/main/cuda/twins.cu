// CUDA C++ twins of the Java kernels MoeKernels.pack and MoeKernels.reduce: the same
// algorithm and the same parameter list, written the way a CUDA programmer would, so the
// kernel benchmark can time both through the same launcher and report Java/CUDA ratios.
// Built to PTX with nvcc (scripts/build-twins-ptx.sh, run by scripts/make-gpu-bundle.sh);
// never linked into the library.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

constexpr int kMaxThreads = 256;
constexpr int kWarp = 32;
constexpr int kPackIds = 2048;  // MoeKernels.PACK_IDS: expert ids staged per chunk of tokens
// MoeKernels.REPORT_BAD_ID, REPORT_BAD_COUNT, REPORT_REPEATED_ID
constexpr int kReportBadId = 1, kReportBadCount = 2, kReportRepeatedId = 3;

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
__device__ __forceinline__ int align16(int b) { return (b + 15) & -16; }

// Threads that copy one row together: a warp, or the whole block when it is smaller.
__device__ __forceinline__ int copy_width(int threads) { return min(kWarp, threads); }

// Whole warps per row team, as many as keep every warp busy: one warp per row when there are
// many rows, several warps on each of a decode block's one or two rows.
__device__ __forceinline__ int team_width(int threads, int items) {
  const int width = copy_width(threads), warps = threads / width;
  return width * (warps / clampi(items, 1, warps));
}

__device__ __forceinline__ float load_as_float(const void* p, long i, int dtype) {
  switch (dtype) {
    case 0: return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    case 1: return __half2float(reinterpret_cast<const __half*>(p)[i]);
    case 3: { __nv_fp8_e4m3 v; v.__x = reinterpret_cast<const __nv_fp8_storage_t*>(p)[i]; return float(v); }
    default: return reinterpret_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store_from_float(void* p, long i, int dtype, float v) {
  switch (dtype) {
    case 0: reinterpret_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case 1: reinterpret_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case 3: reinterpret_cast<__nv_fp8_e4m3*>(p)[i] = __nv_fp8_e4m3(v); break;
    default: reinterpret_cast<float*>(p)[i] = v;
  }
}

// pack's input report: the first caller claims slot 0 with its kind, writes the details, then the flag.
__device__ __forceinline__ void report_input(int* r, int kind, int token, int slot, int value) {
  if (atomicCAS(&r[0], 0, kind) == 0) {
    r[1] = token;
    r[2] = slot;
    r[3] = value;
    __threadfence();
    r[4] = 1;
  }
}

// ids [0, count) copied into shared memory by the block, four loads in flight per thread and step.
__device__ __forceinline__ void stage_ids(const int* src, int count, int* ids, int tid, int threads) {
  int i = tid;
  for (; i + 3 * threads < count; i += 4 * threads) {
    const int a = src[i], b = src[i + threads], c = src[i + 2 * threads], d = src[i + 3 * threads];
    ids[i] = a;
    ids[i + threads] = b;
    ids[i + 2 * threads] = c;
    ids[i + 3 * threads] = d;
  }
  for (; i < count; i += threads) ids[i] = src[i];
}

// Routes of a slot at this destination (MoeKernels.SLOT_*).
constexpr int kSlotElsewhere = 0, kSlotHere = 1, kSlotDropped = 2;

// Whether a slot before k of a token (ids: its staged ids) names id; repeats are skipped like -1
// so a token never has more than Kd pairs here.
__device__ __forceinline__ bool named_before(const int* ids, int k, int id) {
  bool seen = false;
  for (int j = 0; j < k; j++)
    if (ids[j] == id) seen = true;
  return seen;
}

// Slot k of token t (ids: its staged ids) at the destination whose experts start at firstExpert.
__device__ __forceinline__ int route_slot(const int* ids, int k, int t, int firstExpert, int expertsPerRank,
                                          int numExperts, bool dropsOutOfRange, bool check, int* inputReport) {
  const int id = ids[k], local = id - firstExpert;
  if (local >= 0 && local < expertsPerRank) {
    if (!named_before(ids, k, id)) return kSlotHere;
    if (check) report_input(inputReport, kReportRepeatedId, t, k, id);
    return kSlotDropped;
  }
  if (dropsOutOfRange && (id < 0 || id >= numExperts)) {
    if (check && id != -1) report_input(inputReport, kReportBadId, t, k, id);
    return kSlotDropped;
  }
  return kSlotElsewhere;
}

// The pair locations here of the chunk's tokens [skip, n), one thread per (token, slot): local slots numbered from the
// token's pair base in k order, -1 for dropped ones.
__device__ __forceinline__ void write_pair_locations(int* pairLocation, int chunk, int skip, int n, int topK,
                                                     const long long* tokenLocal, const long long* tokenDropped,
                                                     const int* tokenPairBase, int firstLocation) {
  for (int item = skip * topK + threadIdx.x; item < n * topK; item += blockDim.x) {
    const int token = item / topK, k = item - token * topK;
    const long long bit = 1LL << k, local = tokenLocal[token];
    int* slot = pairLocation + long(chunk) * topK + item;
    if ((local & bit) != 0) *slot = firstLocation + tokenPairBase[token] + __popcll(local & (bit - 1));
    else if ((tokenDropped[token] & bit) != 0) *slot = -1;
  }
}

// Local expert of a token's n-th pair here (in k order): the n-th slot of localMask.
__device__ __forceinline__ int nth_local_expert(const int* ids, int topK, int firstExpert, long long localMask,
                                                int n) {
  int seen = 0, result = 0;
  for (int k = 0; k < topK; k++) {
    if ((localMask & (1LL << k)) != 0) {
      if (seen == n) result = ids[k] - firstExpert;
      seen++;
    }
  }
  return result;
}

// A team of width lanes copies pieces 16-byte pieces, eight per lane at a time with the eight
// loads issued before the eight stores (one round trip to memory per eight: MoeKernels.copyPiecesDeep),
// then the tail of fewer than eight per lane the same way, predicated.
__device__ __forceinline__ void copy_pieces(uint4* dst, const uint4* src, int pieces, int lane, int width) {
  int i = lane;
  for (; i + 7 * width < pieces; i += 8 * width) {
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; j++) v[j] = src[i + j * width];
#pragma unroll
    for (int j = 0; j < 8; j++) dst[i + j * width] = v[j];
  }
  if (i < pieces) {
    const int count = (pieces - i + width - 1) / width;  // 1 to 7
    uint4 v[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
      if (j < count) v[j] = src[i + j * width];
#pragma unroll
    for (int j = 0; j < 8; j++)
      if (j < count) dst[i + j * width] = v[j];
  }
}

// pack's copy of the chunk's rows [lo, hi) (its ids from chunkIds on) to dispatchSend from row firstRow on: teams of warps
// take them in turn; token in 16-byte pieces, scales in words, then the meta, padding zeroed.
__device__ __forceinline__ void copy_rows_to_send(const uint8_t* x, const int* xScale, const int* chunkIds, int chunk,
                                                  uint8_t* dispatchSend, const int* rowToken, const int* rowPairBase,
                                                  const int* rowPairs, const long long* rowMask, int lo, int hi,
                                                  long firstRow, int xBytes, int scalesPerToken, int topK,
                                                  int firstExpert, int rowBytes) {
  const int tid = threadIdx.x, threads = blockDim.x, width = team_width(threads, hi - lo);
  const int team = tid / width, lane = tid - team * width, teams = threads / width;
  const int pieces = xBytes >> 4, scaleOffset = align16(xBytes);
  const int scaleWords = align16(4 * scalesPerToken) >> 2;
  const int metaOffset = scaleOffset + (scaleWords << 2), metaWords = align16(4 * (2 + topK)) >> 2;
  if (team >= teams) return;  // past the last whole team (block sizes not a multiple of 32)
  for (int r = lo + team; r < hi; r += teams) {
    const int t = rowToken[r];
    const long rowByte = (firstRow + r) * rowBytes;
    // The lane's first scale loaded before the token's pieces: both in flight together.
    const int* tokenScales = xScale + long(t) * scalesPerToken;
    const int laneScale = lane < scalesPerToken ? tokenScales[lane] : 0;
    // Indexed in pieces and words as the Java kernel does (rowBytes is a multiple of 16).
    copy_pieces(reinterpret_cast<uint4*>(dispatchSend) + (rowByte >> 4),
                reinterpret_cast<const uint4*>(x) + long(t) * pieces, pieces, lane, width);
    int* scales = reinterpret_cast<int*>(dispatchSend) + ((rowByte + scaleOffset) >> 2);
    for (int i = lane; i < scaleWords; i += width)
      scales[i] = i == lane ? laneScale : (i < scalesPerToken ? tokenScales[i] : 0);
    int* meta = reinterpret_cast<int*>(dispatchSend) + ((rowByte + metaOffset) >> 2);
    for (int i = lane; i < metaWords; i += width) {
      int value = 0;
      if (i == 0) value = rowPairBase[r];
      else if (i == 1) value = rowPairs[r];
      else if (i - 2 < rowPairs[r])
        value = nth_local_expert(chunkIds + (t - chunk) * topK, topK, firstExpert, rowMask[r], i - 2);
      meta[i] = value;
    }
  }
}

}  // namespace

// The bounds of MoeKernels.pack (@LaunchBounds): 256 threads, two blocks per SM.
extern "C" __global__ void __launch_bounds__(kMaxThreads, 2) pack_twin(const uint8_t* x, const float* xScale, const int* indices, int* numTokens,
                                     uint8_t* dispatchSend, int* sendRows, int* pairLocation, int* inputReport,
                                     int xBytes, int scalesPerToken, int topK, int expertsPerRank, int groupSize,
                                     int member, int rowBytes, int maxTokens, int pairsPerRegion, int fixedTokens,
                                     int checkIds) {
  // Scan buffers in two halves (ping-pong): one barrier per scan step.
  __shared__ int scanRows[2 * kMaxThreads];
  __shared__ int scanPairs[2 * kMaxThreads];
  // The chunk's rows, by row number within the chunk, for the cooperative copy.
  __shared__ int rowToken[kMaxThreads];
  __shared__ int rowPairBase[kMaxThreads];
  __shared__ int rowPairs[kMaxThreads];
  __shared__ long long rowMask[kMaxThreads];
  // Every token's routing, by token within the chunk, for the pair locations.
  __shared__ long long tokenLocal[kMaxThreads];
  __shared__ long long tokenDropped[kMaxThreads];
  __shared__ int tokenPairBase[kMaxThreads];
  // The chunk's expert ids, loaded by all threads together: one round trip to memory.
  __shared__ int chunkIds[kPackIds];

  // The rows and pairs of the tokens before this block's range, summed by the block.
  __shared__ int before[2];

  const int tid = threadIdx.x, threads = blockDim.x, dest = blockIdx.x;
  const int y = blockIdx.y, blocksY = gridDim.y;
  const int firstExpert = dest * expertsPerRank, numExperts = int(gridDim.x) * expertsPerRank;
  const int chunkTokens = min(threads, kPackIds / topK);
  // The first chunk's ids staged before m is known (up to the rows the tensors have): in flight with
  // the count's load. [stagedFirst, stagedEnd): the tokens whose ids chunkIds holds.
  int stagedFirst = 0;
  int stagedEnd = min(chunkTokens, fixedTokens >= 0 ? clampi(fixedTokens, 0, maxTokens) : maxTokens);
  stage_ids(indices, stagedEnd * topK, chunkIds, tid, threads);
  const int count = fixedTokens >= 0 ? fixedTokens : numTokens[0];
  const int m = clampi(count, 0, maxTokens);
  const bool first = dest == 0 && y == 0 && tid == 0;
  if (fixedTokens >= 0 && first) numTokens[0] = m;
  if (checkIds != 0 && m != count && first) report_input(inputReport, kReportBadCount, -1, -1, count);

  const bool serves = dest % groupSize == member;
  const long outRegionRow = long(dest / groupSize) * maxTokens;
  // Block y takes tokens [begin, end): it counts the ones before, then numbers and copies its own.
  const int begin = int(long(m) * y / blocksY), end = int(long(m) * (y + 1) / blocksY);

  // Token t's routing here, read once: localMask bits route here, dropMask bits get -1 from this block.
  auto route = [&](const int* ids, int n, int t, bool check, long long& localMask, long long& dropMask) {
    localMask = 0;
    dropMask = 0;
    if (tid < n) {
      for (int k = 0; k < topK; k++) {
        const int r = route_slot(ids + tid * topK, k, t, firstExpert, expertsPerRank, numExperts, dest == 0, check,
                                 inputReport);
        if (r == kSlotHere) localMask |= 1LL << k;
        else if (r == kSlotDropped) dropMask |= 1LL << k;
      }
    }
  };

  // Whole chunks before the one that holds begin are only counted; that chunk is numbered whole.
  const int firstChunk = begin - begin % chunkTokens;
  int rowsBefore = 0, pairsBefore = 0;
  if (firstChunk > 0) {
    if (tid == 0) before[0] = before[1] = 0;
    int countedRows = 0, countedPairs = 0;
    for (int chunk = 0; chunk < firstChunk; chunk += chunkTokens) {
      if (chunk < stagedFirst || chunk + chunkTokens > stagedEnd) {
        stage_ids(indices + long(chunk) * topK, chunkTokens * topK, chunkIds, tid, threads);
        stagedFirst = chunk;
        stagedEnd = chunk + chunkTokens;
      }
      __syncthreads();
      long long localMask, dropMask;
      route(chunkIds + (chunk - stagedFirst) * topK, chunkTokens, chunk + tid, false, localMask, dropMask);
      const int pairs = __popcll(localMask);
      countedRows += pairs > 0 ? 1 : 0;
      countedPairs += pairs;
      __syncthreads();  // the next chunk overwrites the ids
    }
    if (countedPairs > 0) {
      atomicAdd(&before[0], countedRows);
      atomicAdd(&before[1], countedPairs);
    }
    __syncthreads();
    rowsBefore = before[0];
    pairsBefore = before[1];
  }
  // The range is the same for every thread, so are the trip counts of the loops with barriers.
  for (int chunk = firstChunk; chunk < end; chunk += chunkTokens) {
    // the whole chunk is numbered; its tokens [skip, own) are the block's: checked, located, copied
    const int n = min(chunkTokens, m - chunk);
    const int skip = max(0, begin - chunk), own = min(n, end - chunk);
    if (chunk < stagedFirst || chunk + n > stagedEnd) {
      stage_ids(indices + long(chunk) * topK, n * topK, chunkIds, tid, threads);
      stagedFirst = chunk;
      stagedEnd = chunk + n;
    }
    const int* ids = chunkIds + (chunk - stagedFirst) * topK;
    __syncthreads();
    const int t = chunk + tid;
    long long localMask, dropMask;
    route(ids, n, t, checkIds != 0 && tid >= skip && tid < own, localMask, dropMask);
    const int pairs = __popcll(localMask);
    const int hasRow = pairs > 0 ? 1 : 0;
    scanRows[tid] = hasRow;
    scanPairs[tid] = pairs;
    __syncthreads();
    // Inclusive Hillis-Steele scan over the chunk's n tokens only (none for a decode round's one).
    int src = 0;
    for (int offset = 1; offset < n; offset <<= 1) {
      int r = scanRows[src + tid], p = scanPairs[src + tid];
      if (tid >= offset) { r += scanRows[src + tid - offset]; p += scanPairs[src + tid - offset]; }
      const int dst = kMaxThreads - src;
      scanRows[dst + tid] = r;
      scanPairs[dst + tid] = p;
      __syncthreads();
      src = dst;
    }
    const int chunkRow = scanRows[src + tid] - hasRow;
    const int pairBase = pairsBefore + scanPairs[src + tid] - pairs;
    const int chunkRows = scanRows[src + n - 1], chunkPairs = scanPairs[src + n - 1];
    // the block's rows are the chunk's rows [lo, hi)
    const int lo = skip > 0 ? scanRows[src + skip - 1] : 0, hi = own > 0 ? scanRows[src + own - 1] : 0;
    if (tid < n) {
      tokenLocal[tid] = localMask;
      tokenDropped[tid] = dropMask;
      tokenPairBase[tid] = pairBase;
      if (hasRow) {
        rowToken[chunkRow] = t;
        rowPairBase[chunkRow] = pairBase;
        rowPairs[chunkRow] = pairs;
        rowMask[chunkRow] = localMask;
      }
    }
    __syncthreads();
    write_pair_locations(pairLocation, chunk, skip, own, topK, tokenLocal, tokenDropped, tokenPairBase,
                         dest * pairsPerRegion);
    if (serves) {
      copy_rows_to_send(x, reinterpret_cast<const int*>(xScale), ids, chunk, dispatchSend, rowToken, rowPairBase,
                        rowPairs, rowMask, lo, hi, outRegionRow + rowsBefore, xBytes, scalesPerToken, topK,
                        firstExpert, rowBytes);
    }
    rowsBefore += chunkRows;
    pairsBefore += chunkPairs;
    __syncthreads();  // the next chunk overwrites the shared arrays
  }
  // the last range ends at m: its rows up to there are all of the destination's
  if (serves && y == blocksY - 1 && tid == 0) sendRows[dest / groupSize] = rowsBefore;
}

// The reduction as a CUDA programmer writes it: a template over top-k and the dtypes (the Java
// kernel's @Specialize parameters), instantiated for the benchmark's shape, with the generic
// version for every other shape. As in the Java kernel, a thread sums a quad of four elements:
// one 8-byte load per pair for 16-bit rows (4 bytes for fp8), float32 rows element by element.
__device__ __forceinline__ uint64_t load_quad(const void* p, int loc, int hidden, int h, int dtype) {
  const long first = long(max(loc, 0)) * hidden + h;  // skipped pairs read row 0
  if (dtype == 3) return reinterpret_cast<const uint32_t*>(p)[first >> 2];
  return reinterpret_cast<const uint64_t*>(p)[first >> 2];
}

__device__ __forceinline__ float quad_element(uint64_t q, int e, int dtype) {
  if (dtype == 3) {
    __nv_fp8_e4m3 v;
    v.__x = __nv_fp8_storage_t(q >> (8 * e));
    return float(v);
  }
  const unsigned short bits = static_cast<unsigned short>(q >> (16 * e));
  return dtype == 0 ? __bfloat162float(__ushort_as_bfloat16(bits)) : __half2float(__ushort_as_half(bits));
}

__device__ __forceinline__ unsigned short to_bits16(float v, int dtype) {
  return dtype == 0 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
}

template <int kTopK, int kYDtype, int kOutDtype>
__device__ __forceinline__ void reduce_impl(const void* combineRecv, const int* pairLocation, const float* weights,
                                            void* out, int hidden, int topK, int yDtype, int outDtype) {
  const int K = kTopK > 0 ? kTopK : topK;
  const int yd = kYDtype >= 0 ? kYDtype : yDtype;
  const int od = kOutDtype >= 0 ? kOutDtype : outDtype;
  const int t = blockIdx.x;
  const long first = long(t) * K;
  auto accumulate = [](float acc, int loc, float w, float v) { return loc >= 0 ? __fadd_rn(acc, __fmul_rn(w, v)) : acc; };
  for (int q = threadIdx.x; q < hidden / 4; q += blockDim.x) {
    const int h = 4 * q;
    float a[4] = {0.f, 0.f, 0.f, 0.f};
    if (yd == 2) {
      for (int e = 0; e < 4; e++) {
        for (int k = 0; k < K; k++) {
          const int l = pairLocation[first + k];
          a[e] = accumulate(a[e], l, weights[first + k], load_as_float(combineRecv, long(max(l, 0)) * hidden + h + e, yd));
        }
      }
    } else {
      int k = 0;
      for (; k + 4 <= K; k += 4) {  // four pairs per step, loads first
        int l[4];
        uint64_t r[4];
        for (int j = 0; j < 4; j++) l[j] = pairLocation[first + k + j];
        for (int j = 0; j < 4; j++) r[j] = load_quad(combineRecv, l[j], hidden, h, yd);
        for (int e = 0; e < 4; e++)
          for (int j = 0; j < 4; j++) a[e] = accumulate(a[e], l[j], weights[first + k + j], quad_element(r[j], e, yd));
      }
      for (; k < K; k++) {
        const int l = pairLocation[first + k];
        const uint64_t r = load_quad(combineRecv, l, hidden, h, yd);
        for (int e = 0; e < 4; e++) a[e] = accumulate(a[e], l, weights[first + k], quad_element(r, e, yd));
      }
    }
    const long o = long(t) * hidden + h;
    if (od == 0 || od == 1) {
      const uint64_t packed = uint64_t(to_bits16(a[0], od)) | uint64_t(to_bits16(a[1], od)) << 16
          | uint64_t(to_bits16(a[2], od)) << 32 | uint64_t(to_bits16(a[3], od)) << 48;
      reinterpret_cast<uint64_t*>(out)[o >> 2] = packed;
    } else {
      for (int e = 0; e < 4; e++) store_from_float(out, o + e, od, a[e]);
    }
  }
}

extern "C" __global__ void reduce_twin(const void* combineRecv, const int* pairLocation, const float* weights,
                                       const int* numTokens, void* out, int hidden, int topK, int yDtype,
                                       int outDtype) {
  if (int(blockIdx.x) >= numTokens[0]) return;
  if (topK == 8 && yDtype == 0 && outDtype == 0) {
    reduce_impl<8, 0, 0>(combineRecv, pairLocation, weights, out, hidden, topK, yDtype, outDtype);
  } else {
    reduce_impl<-1, -1, -1>(combineRecv, pairLocation, weights, out, hidden, topK, yDtype, outDtype);
  }
}
