// Registers the fused GELU as the custom op nanogpt::fused_gelu, with its CUDA kernel.
#include <torch/extension.h>
#include <torch/library.h>

torch::Tensor fused_gelu_cuda_forward(torch::Tensor x);

torch::Tensor fused_gelu(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda(), "fused_gelu: expected a CUDA tensor");
  return fused_gelu_cuda_forward(x.contiguous());
}

TORCH_LIBRARY(nanogpt, m) {
  m.def("fused_gelu(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(nanogpt, CUDA, m) {
  m.impl("fused_gelu", &fused_gelu);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &fused_gelu, "fused GELU (CUDA)");
}
