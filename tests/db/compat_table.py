"""A realistic torch-neuronx compatibility table, generated for the import tests (issue 36).

Written from the table's description on the supported-operators page (opscan/db/compat.py, NOTE
[compatibility table format]); it is NOT AWS's table and states nothing about any release. It has
every row kind the reader knows, in the layout of the real file (a heading per namespace, one pipe
table under each): `Y` Native / Host-only / Needs a process group for public APIs, `CPU_FALLBACK`
for every dtype and for named dtypes, `N`, and aten operator cells (`Y` Native, `N`, `CPU_FALLBACK`).
`table()` returns the Markdown and what each op row must become, so a test can check every row.
"""

from __future__ import annotations

# public APIs (not aten ops): become counts per namespace in the release's notes
TORCH_NATIVE = """abs acos acosh add addbmm addcdiv addcmul addmm addmv addr all allclose amax amin any arange
argmax argmin asin asinh atan atan2 atanh baddbmm bitwise_and bitwise_not bitwise_or bitwise_xor bmm cat ceil
chunk clamp clone cos cosh cross diag diagonal div dot einsum empty empty_like eq erf erfc exp exp2 expm1 eye
flatten flip floor fmod full full_like gather ge gelu gt hypot index_select isfinite isinf isnan le lerp log
log10 log1p log2 logaddexp logical_and logical_not logical_or logsumexp lt masked_fill matmul max maximum mean
min minimum mm movedim mul mv narrow ne neg norm ones ones_like outer permute pow prod rand randint randn
reciprocal relu remainder repeat_interleave reshape roll rot90 round rsqrt select sigmoid sign sin sinh
softmax split sqrt square squeeze stack std sub sum t tan tanh tensordot tile transpose tril triu trunc
unbind unsqueeze var view_as_real where zeros zeros_like""".split()
TENSOR_NATIVE = """abs add addmm argmax bmm bool clamp contiguous copy_ cos cumsum_ div double expand
expand_as fill_ flatten float half index_add_ index_copy_ index_fill_ index_put_ int long masked_fill_
masked_scatter_ matmul max mean min mul neg new_empty new_full new_ones new_zeros norm permute pow repeat
reshape scatter_ scatter_add_ sigmoid sin size softmax sqrt squeeze sub sum t to transpose type_as
unsqueeze view view_as zero_""".split()
NN_FUNCTIONAL_NATIVE = """adaptive_avg_pool1d adaptive_avg_pool2d avg_pool1d avg_pool2d batch_norm
binary_cross_entropy binary_cross_entropy_with_logits conv1d conv2d conv_transpose1d conv_transpose2d
cosine_similarity cross_entropy dropout elu embedding gelu glu group_norm hardswish hardtanh instance_norm
kl_div layer_norm leaky_relu linear log_softmax logsigmoid max_pool1d max_pool2d mish mse_loss nll_loss
normalize one_hot pad pairwise_distance relu relu6 rms_norm scaled_dot_product_attention selu silu
smooth_l1_loss softmax softplus softsign tanhshrink unfold""".split()
HOST_ONLY = """manual_seed seed initial_seed get_default_dtype set_default_dtype is_tensor is_floating_point
numel set_printoptions get_rng_state set_rng_state use_deterministic_algorithms
are_deterministic_algorithms_enabled""".split()
DISTRIBUTED = """all_reduce all_gather all_gather_into_tensor reduce_scatter reduce_scatter_tensor broadcast
barrier send recv all_to_all all_to_all_single gather scatter reduce""".split()
NOT_SUPPORTED = ["torch.quantize_per_tensor", "torch.quantize_per_channel", "torch.dequantize",
                 "torch.backends.cudnn.allow_tf32", "torch.backends.cuda.matmul.allow_tf32", "torch.cuda.Stream",
                 "torch.cuda.Event", "torch.fake_quantize_per_tensor_affine"]

# (API, aten op named in the limitations column, dtypes or () for every dtype)
FALLBACKS = [
    ("torch.sort", "aten::sort.values_stable", ()),
    ("torch.argsort", "aten::sort.stable", ()),
    ("torch.unique", "aten::_unique2", ()),
    ("torch.histc", "aten::histc", ()),
    ("torch.bucketize", "aten::bucketize.Tensor", ()),
    ("torch.searchsorted", "aten::searchsorted.Tensor", ()),
    ("torch.kthvalue", "aten::kthvalue", ()),
    ("torch.median", "aten::median.dim", ()),
    ("torch.nanmedian", "aten::nanmedian.dim", ()),
    ("torch.mode", "aten::mode", ()),
    ("torch.linalg.svd", "aten::_linalg_svd", ("float64",)),
    ("torch.linalg.eigh", "aten::_linalg_eigh", ("float64",)),
    ("torch.cumsum", "aten::cumsum", ("float32", "int64")),
    ("torch.cumprod", "aten::cumprod", ("int32", "int64")),
    ("torch.topk", "aten::topk", ("bfloat16",)),
    ("torch.nonzero", "aten::nonzero", ("bool",)),
]
# aten operator cells (namespace torch.ops.aten): (op, value)
ATEN_CELLS = [("aten::linear", "Y"), ("aten::relu", "Y"), ("aten::add.Tensor", "Y"),
              ("aten::quantize_per_tensor", "N"), ("aten::_fft_c2c", "CPU_FALLBACK")]


def _table(namespace: str, rows: list[tuple[str, str, str]], header=("API", "Status", "Limitations")) -> list[str]:
    lines = [f"## `{namespace}`", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [f"| {api} | {value} | {limits} |" for api, value, limits in rows]
    return lines + [""]


def table() -> tuple[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """(the Markdown, op -> (status the release must give it, dtypes of its per-dtype fallback))."""
    lines = ["# torch-neuronx API compatibility (generated for opscan's tests)", "",
             "Generated by tests/db/compat_table.py; NOT AWS's table.", ""]
    torch_rows = [(f"torch.{name}", "Y", "Native") for name in TORCH_NATIVE]
    torch_rows += [(f"torch.{name}", "Y", "Host-only") for name in HOST_ONLY]
    torch_rows += [(api, "N", "not supported") for api in NOT_SUPPORTED]
    for api, op, dtypes in FALLBACKS:
        said = f"`{op}` runs on CPU" + (f" for {', '.join('torch.' + d for d in dtypes)}" if dtypes else "")
        torch_rows.append((api, "CPU_FALLBACK", said))
    lines += _table("torch", torch_rows)
    lines += _table("torch.Tensor", [(f"torch.Tensor.{name}", "Y", "Native") for name in TENSOR_NATIVE])
    lines += _table("torch.nn.functional", [(f"torch.nn.functional.{name}", "Y", "Native")
                                            for name in NN_FUNCTIONAL_NATIVE])
    lines += _table("torch.distributed", [(f"torch.distributed.{name}", "Y", "Needs a process group")
                                          for name in DISTRIBUTED])
    lines += _table("torch.ops.aten", [(op, value, "Native" if value == "Y" else "") for op, value in ATEN_CELLS],
                    header=("Operator", "Supported", "Notes"))
    expected: dict[str, tuple[str, tuple[str, ...]]] = {}
    for _, op, dtypes in FALLBACKS:
        expected[op] = ("limited", dtypes) if dtypes else ("cpu-fallback", ())
    for op, value in ATEN_CELLS:
        expected[op] = ({"Y": "native", "N": "unsupported", "CPU_FALLBACK": "cpu-fallback"}[value], ())
    return "\n".join(lines), expected


def row_count() -> int:
    """Body rows of the table (every API row and operator row)."""
    return (len(TORCH_NATIVE) + len(HOST_ONLY) + len(NOT_SUPPORTED) + len(FALLBACKS) + len(TENSOR_NATIVE)
            + len(NN_FUNCTIONAL_NATIVE) + len(DISTRIBUTED) + len(ATEN_CELLS))
