"""Imitating a device for the trace: the `neuron` PrivateUse1 backend and a device profile."""

from __future__ import annotations

import contextlib

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils._mode_utils import no_dispatch
from torch.utils._pytree import tree_leaves

from opscan.errors import TraceError
from opscan.records import DeviceProfile

DEVICES = ("neuron", "cpu", "cuda", "meta")
SDPA_POLICIES = {
    "math": "the math decomposition (matmul, softmax, ...); what any PrivateUse1 backend gets "
            "unless it registers an SDPA kernel choice in C++",
    "overrideable": "aten::_scaled_dot_product_fused_attention_overrideable and its backward, "
                    "the hook PyTorch offers PrivateUse1 backends for a fused attention kernel",
    "overrideable-4d": "the overrideable kernel when query, key and value are all 4-D, the math "
                       "decomposition otherwise (TorchNeuron's pre-release _fused_sdp_choice)",
}

# NOTE [default device profile]
# Without a profile from the coverage database, the trace imitates a PrivateUse1 backend that
# registers no kernels of its own beyond what every backend must have: every op reaches the
# backend in the form PyTorch's dispatcher gives a new backend, and SDPA takes the math path
# (TorchNeuron's real choice is made in C++ and cannot be seen from Python).
DEFAULT_PROFILE = DeviceProfile(name="generic-privateuse1", device="neuron", native_ops=(),
                                sdpa_policy="math")

_NEURON_READY = False
_REGISTERED: dict[str, object] = {"ops": (), "lib": None}


class _BackendModule(torch.utils.backend_registration._DummyBackendModule):
    """`torch.neuron`: what PyTorch asks of a backend module (plus the AMP dtypes)."""

    def get_amp_supported_dtype(self) -> list:
        return [torch.bfloat16, torch.float16, torch.float32]

    def is_bf16_supported(self) -> bool:
        return True

    def synchronize(self, device=None) -> None:
        return None

    def set_device(self, device) -> None:
        """One device (index 0): transformers' TrainingArguments selects it on a Trainium machine."""


# The dispatch key of the backend kernels each imitated device's ops reach.
BACKEND_KEYS = {"neuron": "PrivateUse1", "cpu": "CPU", "cuda": "CUDA", "meta": "Meta"}


def has_own_kernel(op: str, device_type: str) -> bool:
    """Whether the backend of `device_type` registers its own kernel for `op` (a device profile's
    native op, see apply_profile): then a real run hands it the op itself, not the op's
    CompositeImplicitAutograd body (fakes.real_one_hot; NOTE [inference mode] in recorder.py)."""
    key = BACKEND_KEYS.get(device_type)
    return key is not None and torch._C._dispatch_has_kernel_for_dispatch_key(op, key)


def ensure_neuron() -> None:
    """Make `neuron` a device type of this process (PrivateUse1, Python hooks), once."""
    global _NEURON_READY
    if _NEURON_READY:
        return
    current = torch._C._get_privateuse1_backend_name()
    if current == "neuron" and hasattr(torch, "neuron"):
        _NEURON_READY = True  # a real torch-neuronx install, or an earlier setup
        return
    if current != "privateuseone":
        raise TraceError(f"cannot imitate 'neuron': PrivateUse1 is already named {current!r} "
                         "in this process; use --device cpu")
    torch.utils.backend_registration._setup_privateuseone_for_python_backend(
        "neuron", backend_module=_BackendModule())
    from opscan.trace import meta_kernels

    meta_kernels.register()   # NOTE [fused recurrent cells]
    _NEURON_READY = True


# NOTE [constants on the imitated device]
# FakeTensorMode keeps the real value of small tensors made from Python data (`torch.tensor(3)`,
# the index tensor behind `x[..., [-2]]`) and really runs ops whose inputs are all such constants.
# A real run of `const.to("neuron")` then fails (`aten::empty_strided` has no neuron kernel): this
# stopped 20 causal LMs (transformers' sliding-window cache, falcon's list indexing). PyTorch skips
# that constant propagation when the target device is not available (`avoid_device_init`, also
# making `torch.tensor(data, device=X)` build on the CPU and move); the imitated devices are never
# available, so FakeMode says so, and clears constants for the other device-changing ops
# (`zeros_like(const, device=X)`). A moved value is then unknown: `.item()` on it is a stand-in.
# NOTE [inputs with values]
# Vision towers that take already-cut patches compute their sequence layout from an integer grid
# input (`grid_thw`: frames, rows, columns per image) with `.tolist()` and `repeat_interleave`; as
# a plain fake tensor its values are stand-ins (1 each) and the shapes no longer match the patches.
# Such inputs (Built.values) become fake tensors that keep their values, and while they are in the
# trace FakeMode keeps the values of every small integer result (up to KEPT_NUMEL elements) instead
# of only of one-element ones, of integer `arange`s (the index grids built from it) and of integer
# values moved to the imitated device, so the grid arithmetic is computed as a real run does, and
# keeps the results on the input's device (FakeTensorMode computes them on the CPU). Off for every
# other trace.
KEPT_NUMEL = 4096
_INDEX_FACTORIES = (torch.ops.aten.arange,)


class FakeMode(FakeTensorMode):
    """FakeTensorMode for a device that exists only in the trace (never runs a real kernel there)."""

    keep_values = False   # set when a trace has inputs with values (NOTE [inputs with values])

    def may_turn_const(self, t) -> bool:
        if super().may_turn_const(t):
            return True
        return (self.keep_values and not t.is_floating_point() and not t.is_complex()
                and t.numel() <= KEPT_NUMEL and not self.is_our_fake(t) and t.device.type == "cpu"
                and t.layout == torch.strided)

    @property
    def avoid_device_init(self) -> bool:
        return True

    def dispatch(self, func, types, args=(), kwargs=None):
        if self.keep_values and func.overloadpacket in _INDEX_FACTORIES:
            out = self._kept_factory(func, args, kwargs or {})
            if out is not None:
                return out
        if self.keep_values and func is torch.ops.aten._to_copy.default:
            out = self._kept_copy(args, kwargs or {})
            if out is not None:
                return out
        out = self._dispatch(func, types, args, kwargs)
        if self.keep_values:
            _keep_device(args, kwargs, out)
        return out

    def _kept_copy(self, args, kwargs):
        """An integer value moved to the imitated device keeps its value (NOTE [inputs with values])."""
        src = args[0] if args else None
        if not isinstance(src, FakeTensor) or src.constant is None or len(args) != 1:
            return None
        dtype = kwargs.get("dtype") or src.dtype
        if dtype.is_floating_point or dtype.is_complex:
            return None
        device = torch.device(kwargs["device"]) if kwargs.get("device") is not None else src.fake_device
        with no_dispatch():
            real = src.constant.to(dtype=dtype).clone()
        return self._kept_fake(real, device)

    def _kept_factory(self, func, args, kwargs):
        """`torch.arange(n)` with its values, on the device asked for (NOTE [inputs with values])."""
        if any(isinstance(a, torch.Tensor) for a in tree_leaves((args, kwargs))):
            return None
        dtype = kwargs.get("dtype")
        if dtype is not None and (dtype.is_floating_point or dtype.is_complex):
            return None
        device = torch.device(kwargs["device"]) if kwargs.get("device") is not None else torch.device("cpu")
        with no_dispatch():
            real = func(*args, **{**kwargs, "device": torch.device("cpu")})
        if real.is_floating_point() or real.numel() > KEPT_NUMEL:
            return None
        return self._kept_fake(real, device)

    def _kept_fake(self, real, device: torch.device):
        """A fake tensor that keeps the values of `real` (a CPU tensor), placed on `device`."""
        fake = self.fake_tensor_converter.from_real_tensor(self, real, make_constant=True)
        if device.type != "cpu":
            fake.fake_device = device if device.index is not None else torch.device(device.type, 0)
        return fake

    def _dispatch(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = kwargs.get("device")
        if target is None or torch.device(target).type == "cpu":
            return super().dispatch(func, types, args, kwargs)
        held = [(t, t.constant) for t in tree_leaves((args, kwargs))
                if isinstance(t, FakeTensor) and t.constant is not None]
        for t, _ in held:
            t.constant = None
        try:
            return super().dispatch(func, types, args, kwargs)
        finally:
            for t, constant in held:
                t.constant = constant


def _keep_device(args, kwargs, out) -> None:
    """Values computed from inputs with values stay on their device (FakeTensorMode computes
    them on the CPU and would put the result there)."""
    devices = {t.fake_device for t in tree_leaves((args, kwargs))
               if isinstance(t, FakeTensor) and t.constant is not None and t.fake_device.type != "cpu"}
    if len(devices) != 1:
        return
    device = next(iter(devices))
    for t in tree_leaves(out):
        if isinstance(t, FakeTensor) and t.constant is not None and t.fake_device.type == "cpu":
            t.fake_device = device


def _refuse(*args, **kwargs):
    raise TraceError("a device-profile placeholder kernel ran outside a fake-tensor trace")


def apply_profile(profile: DeviceProfile) -> None:
    """Register do-nothing PrivateUse1 kernels for the profile's native ops, so the trace stops there.

    Fake tensors never run these kernels: registering them only changes which level of an op
    the dispatcher hands to the backend (the op itself instead of its decomposition).
    """
    ops = tuple(sorted(set(profile.native_ops)))
    if ops == _REGISTERED["ops"]:
        return
    old = _REGISTERED["lib"]
    if old is not None:
        old._destroy()
    _REGISTERED["lib"] = None
    _REGISTERED["ops"] = ()
    if not ops:
        return
    lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901 - process-local, removed on change
    for name in ops:
        ns, _, rest = name.partition("::")
        if ns != "aten":
            continue
        try:
            packet_name, _, ov = rest.partition(".")
            packet = getattr(torch.ops.aten, packet_name)
            op = getattr(packet, ov or "default")
        except (AttributeError, RuntimeError):
            continue  # an op this torch does not have: nothing to register
        if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "PrivateUse1"):
            continue
        lib.impl(op.name().partition("::")[2], _refuse, "PrivateUse1")
    _REGISTERED["lib"] = lib
    _REGISTERED["ops"] = ops


class SdpaRouter(TorchFunctionMode):
    """Sends F.scaled_dot_product_attention where the profile's SDPA policy says."""

    def __init__(self, policy: str) -> None:
        super().__init__()
        self.policy = policy

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention and _overrideable(self.policy, args, kwargs):
            return _sdpa_overrideable(*args, **kwargs)
        return func(*args, **kwargs)


def _overrideable(policy: str, args, kwargs) -> bool:
    """Whether the SDPA policy sends this call to the overrideable kernel."""
    if policy == "overrideable":
        return True
    if policy != "overrideable-4d":
        return False
    qkv = list(args[:3]) + [kwargs[k] for k in ("query", "key", "value") if k in kwargs]
    return len(qkv) == 3 and all(isinstance(t, torch.Tensor) and t.dim() == 4 for t in qkv)


def _sdpa_overrideable(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                       scale=None, enable_gqa=False):
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, dim=-3)
        value = value.repeat_interleave(repeat, dim=-3)
    out = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        query, key, value, attn_mask, dropout_p, is_causal, False, scale=scale)
    return out[0]


def sdpa_context(device: str, profile: DeviceProfile):
    """The context that applies the SDPA policy (only for the imitated PrivateUse1 device)."""
    if device != "neuron" or profile.sdpa_policy == "math":
        return contextlib.nullcontext()
    if profile.sdpa_policy not in SDPA_POLICIES:
        raise TraceError(f"unknown SDPA policy {profile.sdpa_policy!r} in profile {profile.name!r} "
                         f"(known: {', '.join(SDPA_POLICIES)})")
    return SdpaRouter(profile.sdpa_policy)


# NOTE [autocast on the imitated device]
# A PrivateUse1 backend registers its own autocast kernels (AutocastPrivateUse1); PyTorch has none
# for it. opscan registers CUDA's published autocast policy: these ops run in the autocast dtype,
# the FP32 ones in float32, every other op falls through unchanged. TorchNeuron's own policy is not
# known from its documentation: treat dtypes under --amp as CUDA-like, not as TorchNeuron's.
AUTOCAST_LOWER = (
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu",
    "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm",
    "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "scaled_dot_product_attention",
)
AUTOCAST_FP32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus",
    "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm",
    "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
    "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
    "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm",
    "logsumexp", "softmax.int", "log_softmax.int", "cross_entropy_loss", "cumprod", "cumsum",
    "prod", "sum", "norm.Scalar",
)
_AUTOCAST: dict[str, object] = {}


def ensure_autocast() -> None:
    """Register fall-through + CUDA-like autocast kernels for the imitated device, once."""
    if _AUTOCAST:
        return
    key = torch._C.DispatchKey.AutocastPrivateUse1
    fallback = torch.library.Library("_", "IMPL")  # noqa: TOR901
    fallback.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    lib = torch.library.Library("aten", "IMPL")  # noqa: TOR901
    for names, lower in ((AUTOCAST_LOWER, True), (AUTOCAST_FP32, False)):
        for name in names:
            packet_name, _, overload = name.partition(".")
            packet = getattr(torch.ops.aten, packet_name, None)
            op = getattr(packet, overload or "default", None) if packet is not None else None
            if op is None:
                continue
            lib.impl(op.name().partition("::")[2], _autocast_kernel(op, lower, key), "AutocastPrivateUse1")
    _AUTOCAST.update(fallback=fallback, lib=lib)


def _autocast_kernel(op, lower: bool, key):
    excluded = torch._C.DispatchKeySet(key)

    def cast(value, dtype):
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != dtype \
                and value.device.type != "cpu":
            return value.to(dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(cast(v, dtype) for v in value)
        return value

    def kernel(*args, **kwargs):
        dtype = torch.get_autocast_dtype("neuron") if lower else torch.float32
        with torch._C._ExcludeDispatchKeyGuard(excluded):
            args = tuple(cast(a, dtype) for a in args)
            kwargs = {k: cast(v, dtype) for k, v in kwargs.items()}
            return op(*args, **kwargs)

    return kernel
