// Fused tanh-approximation GELU: forward kernel for float tensors.
#include <torch/extension.h>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void fused_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

torch::Tensor fused_gelu_cuda_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int blocks = (n + threads - 1) / threads;
  fused_gelu_kernel<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
