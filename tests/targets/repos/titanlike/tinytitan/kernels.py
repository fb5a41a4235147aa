"""GPU kernels: imported at module level, never called on the default path (as torchtitan's MoE dispatcher)."""

import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, n: tl.constexpr):
    pass
