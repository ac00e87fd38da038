// CUDA C++ twins of the Java kernels MoeKernels.pack and MoeKernels.reduce: the same
// algorithm and the same parameter list, written the way a CUDA programmer would, so the
// kernel benchmark can time both through the same launcher and report Java/CUDA ratios.
// Built to PTX with nvcc (scripts/make-gpu-bundle.sh); never linked into the library.
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

constexpr int kMaxThreads = 256;
constexpr int kWarp = 32;

__device__ __forceinline__ int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
__device__ __forceinline__ int align16(int b) { return (b + 15) & -16; }

__device__ __forceinline__ int count_local_pairs(const int* idx, int t, int topK, int first, int perRank) {
  int pairs = 0;
  for (int k = 0; k < topK; k++) {
    int local = idx[t * topK + k] - first;
    if (local >= 0 && local < perRank) pairs++;
  }
  return pairs;
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

}  // namespace

extern "C" __global__ void pack_twin(const uint8_t* x, const float* xScale, const int* indices, int* numTokens,
                                     uint8_t* dispatchSend, int* sendRows, int* pairLocation, int* inputReport,
                                     int xBytes, int scalesPerToken, int topK, int expertsPerRank, int groupSize,
                                     int member, int rowBytes, int maxTokens, int pairsPerRegion, int fixedTokens,
                                     int checkIds) {
  __shared__ int scanRows[2 * kMaxThreads];
  __shared__ int scanPairs[2 * kMaxThreads];
  __shared__ int rowToken[kMaxThreads];
  __shared__ int rowPairBase[kMaxThreads];
  __shared__ int rowPairs[kMaxThreads];

  const int tid = threadIdx.x, threads = blockDim.x, dest = blockIdx.x;
  const int first = dest * expertsPerRank, numExperts = gridDim.x * expertsPerRank;
  const int count = fixedTokens >= 0 ? fixedTokens : numTokens[0];
  const int m = clampi(count, 0, maxTokens);
  const bool firstThread = dest == 0 && blockIdx.y == 0 && tid == 0;
  if (fixedTokens >= 0 && firstThread) numTokens[0] = m;
  if (checkIds) {
    if (m != count && firstThread) report_input(inputReport, 2, -1, -1, count);
    const long ids = long(m) * topK, stride = long(gridDim.x) * gridDim.y * threads;
    for (long i = (long(blockIdx.y) * gridDim.x + dest) * threads + tid; i < ids; i += stride) {
      const int id = indices[i];
      if (id < -1 || id >= numExperts) report_input(inputReport, 1, int(i / topK), int(i % topK), id);
    }
  }
  const long regionRow = long(dest / groupSize) * maxTokens;
  const bool serves = dest % groupSize == member;
  const bool leader = blockIdx.y == 0;  // the y blocks of a destination share the copies
  const int width = min(kWarp, threads), warp = tid / width, lane = tid % width, warps = threads / width;
  const int pieces = xBytes >> 4, scaleOffset = align16(xBytes);
  const int scaleWords = align16(4 * scalesPerToken) >> 2;
  const int metaOffset = scaleOffset + (scaleWords << 2), metaWords = align16(4 * (2 + topK)) >> 2;

  int rowsBefore = 0, pairsBefore = 0;
  for (int chunk = 0; chunk < m; chunk += threads) {
    const int t = chunk + tid;
    const int pairs = t < m ? count_local_pairs(indices, t, topK, first, expertsPerRank) : 0;
    const int hasRow = pairs > 0;
    scanRows[tid] = hasRow;
    scanPairs[tid] = pairs;
    __syncthreads();
    int src = 0;
    for (int offset = 1; offset < threads; offset <<= 1) {
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
    const int chunkRows = scanRows[src + threads - 1], chunkPairs = scanPairs[src + threads - 1];
    if (t < m && leader) {
      int location = dest * pairsPerRegion + pairBase;
      for (int k = 0; k < topK; k++) {
        const int id = indices[t * topK + k], local = id - first;
        if (local >= 0 && local < expertsPerRank) pairLocation[t * topK + k] = location++;
        else if (dest == 0 && (id < 0 || id >= numExperts)) pairLocation[t * topK + k] = -1;
      }
    }
    if (t < m) {
      if (hasRow) { rowToken[chunkRow] = t; rowPairBase[chunkRow] = pairBase; rowPairs[chunkRow] = pairs; }
    }
    __syncthreads();
    if (serves && warp < warps) {
      for (int r = blockIdx.y * warps + warp; r < chunkRows; r += gridDim.y * warps) {
        const int tok = rowToken[r];
        const long rowByte = (regionRow + rowsBefore + r) * rowBytes;
        uint4* dst = reinterpret_cast<uint4*>(dispatchSend + rowByte);
        const uint4* srcRow = reinterpret_cast<const uint4*>(x) + long(tok) * pieces;
        for (int i = lane; i < pieces; i += width) dst[i] = srcRow[i];
        int* scales = reinterpret_cast<int*>(dispatchSend + rowByte + scaleOffset);
        for (int i = lane; i < scaleWords; i += width)
          scales[i] = i < scalesPerToken ? reinterpret_cast<const int*>(xScale)[long(tok) * scalesPerToken + i] : 0;
        int* meta = reinterpret_cast<int*>(dispatchSend + rowByte + metaOffset);
        for (int i = lane; i < metaWords; i += width) {
          int value = 0;
          if (i == 0) value = rowPairBase[r];
          else if (i == 1) value = rowPairs[r];
          else if (i - 2 < rowPairs[r]) {
            int seen = 0;
            for (int k = 0; k < topK; k++) {
              const int local = indices[tok * topK + k] - first;
              if (local >= 0 && local < expertsPerRank) { if (seen == i - 2) value = local; seen++; }
            }
          }
          meta[i] = value;
        }
      }
    }
    rowsBefore += chunkRows;
    pairsBefore += chunkPairs;
    __syncthreads();
  }
  if (serves && leader && tid == 0) sendRows[dest / groupSize] = rowsBefore;
}

// The reduction as a CUDA programmer writes it: a template over top-k and the dtypes (the Java
// kernel's @Specialize parameters), instantiated for the benchmark's shape, with the generic
// version for every other shape.
template <int kTopK, int kYDtype, int kOutDtype>
__device__ __forceinline__ void reduce_impl(const void* combineRecv, const int* pairLocation, const float* weights,
                                            void* out, int hidden, int topK, int yDtype, int outDtype) {
  const int K = kTopK > 0 ? kTopK : topK;
  const int yd = kYDtype >= 0 ? kYDtype : yDtype;
  const int od = kOutDtype >= 0 ? kOutDtype : outDtype;
  const int t = blockIdx.x;
  const long first = long(t) * K;
  // Same structure as the Java kernel: four pairs per step, loads first; skipped pairs read row 0.
  auto load_pair = [&](int loc, int h) { return load_as_float(combineRecv, long(max(loc, 0)) * hidden + h, yd); };
  auto accumulate = [](float acc, int loc, float w, float v) { return loc >= 0 ? __fadd_rn(acc, __fmul_rn(w, v)) : acc; };
  for (int h = threadIdx.x; h < hidden; h += blockDim.x) {
    float acc = 0.f;
    int k = 0;
    for (; k + 4 <= K; k += 4) {
      const int l0 = pairLocation[first + k], l1 = pairLocation[first + k + 1];
      const int l2 = pairLocation[first + k + 2], l3 = pairLocation[first + k + 3];
      const float v0 = load_pair(l0, h), v1 = load_pair(l1, h), v2 = load_pair(l2, h), v3 = load_pair(l3, h);
      acc = accumulate(acc, l0, weights[first + k], v0);
      acc = accumulate(acc, l1, weights[first + k + 1], v1);
      acc = accumulate(acc, l2, weights[first + k + 2], v2);
      acc = accumulate(acc, l3, weights[first + k + 3], v3);
    }
    for (; k < K; k++) {
      const int l = pairLocation[first + k];
      acc = accumulate(acc, l, weights[first + k], load_pair(l, h));
    }
    store_from_float(out, long(t) * hidden + h, od, acc);
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
