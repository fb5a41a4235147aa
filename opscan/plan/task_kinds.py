"""The kinds of port task, each with its fix, the TorchNeuron fact behind it and that fact's source.

Facts and URLs come from the TorchNeuron 2.33 docs as recorded in the project's neuron-facts
(see docs/tasks.md); a kind whose fact the docs do not state says so instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

from opscan.records import Finding, TaskKind

# NOTE [task stages]: the stages of the port, used to break ties in the task order (a task's stage
# never makes it depend on another task; ordering.EDGES says which task must precede which, and
# why): device-agnostic code first, then distributed set-up, then kernels and op gaps, then
# performance settings.
STAGES: dict[str, str] = {
    "device-agnostic": "code that picks or assumes the CUDA device",
    "distributed": "process groups and collectives",
    "kernels": "custom kernels, CUDA-only libraries and ops the backend lacks",
    "performance": "settings and ops that cost speed, not correctness",
}

_DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest"
URL_RELEASE_NOTES = f"{_DOCS}/release-notes/components/torchneuron.html"
URL_ABOUT = f"{_DOCS}/torch/about-pytorch-neuron.html"
URL_TORCH_INDEX = f"{_DOCS}/torch/index.html"
URL_DISTRIBUTED = f"{_DOCS}/torch/guides/torch-distributed.html"
URL_COMPILE = f"{_DOCS}/torch/compile/reference-torch-compile.html"
URL_NKI = f"{_DOCS}/torch/guides/how-to-work-with-nki.html"
URL_BEST_PRACTICES = f"{_DOCS}/torch/reference/best-practices-pytorch-neuron.html"
URL_API_REF = f"{_DOCS}/torch/reference/api/index.html"
URL_OP_TABLE = "https://github.com/aws-neuron/torch-neuronx/blob/main/docs/torch_api_compatibility.md"
URL_MEMORY = f"{_DOCS}/torch/guides/memory-profiling-guide.html"
URL_PROFILER = f"{_DOCS}/tools/neuron-explorer/how-to-profile-pytorch.html"


@dataclass(frozen=True)
class Kind:
    """One kind of task: how findings are matched to it and what the task says."""

    id: TaskKind          # its kind in the one table of task kinds (records.TaskKind, NOTE [task kinds])
    title: str            # "{sites}" / "{files}" are filled in
    action: str
    why: str
    sources: tuple[str, ...]
    stage: str            # one of STAGES
    every_step: bool      # the code it fixes runs in every training step
    check: str = ""       # how the change is checked (its risk): NOTE [check overhead]
    check_hours: float | None = None   # that check's hours; None: the cost model's task-hours

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", TaskKind(self.id))


# NOTE [check overhead]: what a mechanical task costs beyond its edits is checking the change, and
# that follows its risk, not its size: a flag guard is read and run once (minutes); a device
# change needs a run of the script on the device; autocast a few training steps with the loss
# compared; compile changes a compiled run; the process group a distributed test run (several
# processes, collectives). Libraries, kernels and op work keep the cost model's `task-hours`.
SOURCE_KINDS: tuple[Kind, ...] = (
    Kind("distributed-backend", "move the process group from NCCL to `neuron` ({sites})",
         "call `init_process_group(backend=\"neuron\")` (or omit the backend / use "
         "`torch.distributed.get_default_backend_for_device(dev)`) and replace `== \"nccl\"` checks",
         "TorchNeuron's process-group backend is `neuron`; DDP, FSDP2 and DTensor run on it",
         (URL_DISTRIBUTED,), "distributed", False,
         "a distributed test run: several processes, collectives", 2.0),
    Kind("mixed-precision", "make autocast and GradScaler device-agnostic ({sites})",
         "use `torch.autocast(device_type=dev.type)` and `torch.amp.GradScaler(device=dev.type)`",
         "TorchNeuron autocast takes `device_type=\"neuron\"`",
         (URL_TORCH_INDEX,), "device-agnostic", True,
         "a few training steps under autocast, the loss compared", 0.5),
    Kind("torch-compile", "adapt torch.compile calls ({sites})",
         "use `torch.compile(backend=\"neuron\")`, drop `mode=` and `dynamic=True`",
         "TorchNeuron compiles through its `neuron` backend; non-default modes are ignored with a "
         "warning and `dynamic=True` is rejected",
         (URL_COMPILE,), "performance", True, "a compiled run", 1.0),
    Kind("cuda-graphs", "remove CUDA graph capture ({sites})",
         "drop `torch.cuda.graph` / `CUDAGraph` capture, or use `torch.compile(backend=\"neuron\")`",
         "the TorchNeuron 2.33 docs that could be read describe no CUDA-graph equivalent",
         (URL_TORCH_INDEX,), "performance", True, "a run of the step without capture", 1.0),
    Kind("backend-flags", "guard cuDNN / TF32 flags by device ({sites})",
         "guard `torch.backends.cudnn.*` and TF32 flags with `if dev.type == \"cuda\"`; use "
         "`torch.set_float32_matmul_precision(...)`",
         "the TorchNeuron 2.33 docs that could be read document no equivalent of these flags",
         (URL_TORCH_INDEX,), "performance", False, "a flag guard: read it, run once", 0.1),
    Kind("profiler", "profile the neuron device ({sites})",
         "use `ProfilerActivity.PrivateUse1` (with a NeuronConfig) instead of `ProfilerActivity.CUDA`",
         "TorchNeuron profiling uses torch.profiler with ProfilerActivity.CPU and PrivateUse1",
         (URL_PROFILER,), "performance", False, "one profiled run", 0.25),
    Kind("device-agnostic", "make device selection device-agnostic ({sites})",
         "pick the device once with `torch.accelerator.current_accelerator(check_available=True)` "
         "and pass it on; replace `torch.cuda.*` calls by their `torch.accelerator` equivalents",
         "TorchNeuron runs on device `neuron` (PrivateUse1); code written against torch.accelerator "
         "needs no change",
         (URL_RELEASE_NOTES, URL_ABOUT), "device-agnostic", True, "a run of the script on the device", 0.25),
    Kind("device-dispatch", "add `neuron` to the device dispatch, as done for the other accelerators ({sites})",
         "beside each npu/xpu/mps branch add the `neuron` case: test `dev.type == \"neuron\"` (or compare with "
         "`torch.accelerator.current_accelerator().type`), return `\"neuron\"` where a detector returns "
         "another accelerator, and add `\"neuron\"` to the tables of supported devices",
         "TorchNeuron runs on device `neuron` (PrivateUse1); a dispatch that names only other accelerators "
         "takes its CPU or CUDA branch on a Neuron device",
         (URL_RELEASE_NOTES, URL_ABOUT), "device-agnostic", False, "a run of the script on the device", 0.25),
)

# The dependency manifests' tasks (rules OPS501-OPS508, docs/dependencies.md). The torch move comes
# first: the ops are judged for the torch the release pairs with (ordering.EDGES).
TORCH_VERSION_KIND = Kind(
    "torch-version", "upgrade to the paired torch and the packages built for it ({sites})",   # torch_move.title
    "move the torch requirement to a version the release pairs with, and with it every package built "
    "for one torch (torchvision, torchaudio, xformers, ...); drop packages with no build for it "
    "(torchtext); install from PyTorch's CPU wheel index instead of a CUDA one; relock",
    "TorchNeuron's packages are built for one torch each (torch-neuronx 2.13.x with torch 2.13, 2.14.x with "
    "2.14): install the torch-neuronx family matching the PyTorch version",
    (URL_RELEASE_NOTES,), "device-agnostic", False,
    "the test suite and a training run on the new torch")

CUDA_PACKAGES_KIND = Kind(
    "cuda-packages", "drop CUDA builds from the install ({sites})",
    "remove NVIDIA runtime wheels, `*-cu12` builds, conda CUDA packages and channels from the Trainium "
    "install (or move them to a CUDA-only extra), and build images on a base without CUDA",
    "a Trainium host has no NVIDIA GPU: CUDA builds install libraries nothing loads, and CUDA images carry "
    "a CUDA torch",
    (URL_ABOUT,), "device-agnostic", False, "a fresh install of the environment", 1.0)

LIBRARY_KIND = Kind(   # action and why come from the library's catalog entry (libraries.yaml) when it has one
    "library", "replace CUDA-only library `{name}` ({sites})",
    "no catalog entry: give this code a pure-PyTorch path, or port the kernels it uses to NKI "
    "(`@nki.jit` registered with `@nki_op`)",
    "TorchNeuron runs PyTorch's ATen ops on `neuron`; libraries that ship their own CUDA kernels "
    "have no Neuron build",
    (URL_ABOUT,), "kernels", True)

KERNEL_KIND = Kind(    # action and why come from the kernel family in libraries.yaml when it has one
    "kernel", "port custom kernel {name} to NKI (`@nki_op`) or provide a PyTorch path",
    "write the kernel in NKI (`@nki.jit`) and register it with `@nki_op` (declare mutated args, add "
    "the backward with `register_autograd`), or fall back to a PyTorch implementation",
    "CUDA and Triton kernels do not run on Trainium; TorchNeuron registers NKI kernels as PyTorch "
    "custom ops with `@nki_op`",
    (URL_NKI,), "kernels", True)

UNSUPPORTED_KIND = Kind(
    "unsupported-ops", "provide {n_ops} the backend rejects: {ops}",
    "rewrite the code that dispatches them with supported ops, or implement them in NKI (`@nki_op`)",
    "the coverage database records these ops as raising an error on TorchNeuron",
    (URL_NKI,), "kernels", True)

FALLBACK_KIND = Kind(
    "cpu-fallback", "ops that would run on CPU every training step: {ops}",
    "replace them with ops that have a Neuron kernel, or write an NKI kernel (`@nki_op`)",
    "TorchNeuron runs ops without a Neuron implementation on the CPU by default (convenient for "
    "bring-up, slow): tensors are copied to the host and back",
    (URL_BEST_PRACTICES,), "performance", True)

UNKNOWN_KIND = Kind(
    "unknown-ops", "{n_ops} of unknown status: probe on a Trn2 instance (`opscan db probe`)",
    "run `opscan db probe` on a Trn2/Trn3 instance with the matching torch-neuronx and add the "
    "results to the coverage database",
    "the per-op compatibility table of TorchNeuron is linked from its API reference but no "
    "readable copy records these ops for this release",
    (URL_API_REF, URL_OP_TABLE), "device-agnostic", True)

MAYBE_FALLBACK_KIND = Kind(
    "may-fall-back", "ops that may run on the CPU every training step: {ops}",
    "probe them on a Trn2 instance (`opscan db probe --report REPORT.json`); replace those that fall back "
    "with ops that have a Neuron kernel, or write an NKI kernel (`@nki_op`)",
    "the release does not list these ops, and TorchNeuron runs ops without a Neuron implementation on the "
    "CPU by default: each runs on the device or on the CPU, copying its tensors to the host and back",
    (URL_BEST_PRACTICES,), "performance", True)

# The snapshot the `compilation` facts of shared/neuron-facts/torchneuron-devsnapshot-2026-04-21.yaml
# were read from (a pre-release source mirror: the facts hold for that commit, verify on a release).
_SNAPSHOT = "https://github.com/parmoham-aws/test-repo-parmoham/blob/98154b867aa24562a3213e520d9ad7fd41032291"
URL_NEFF_CACHE = f"{_SNAPSHOT}/tests/cache/test_persistent_caching_e2e.py"
URL_MOE_RECOMPILES = f"{_SNAPSHOT}/docs/torchtitan/gpt-oss/TorchTitan_Neuron_Tutorial_GPT-OSS_on_AWS_Trainium.md"

STATIC_SHAPES_KIND = Kind(   # made from the trace's compile forecast (opscan/trace/signatures.py), not a rule
    "static-shapes", "make shapes static ({sites})",
    "pad or bucket variable lengths to a few fixed sizes in the collate function, drop or pad the short "
    "last batch (`drop_last=True`), and route MoE tokens with a fixed capacity (a grouped matmul, "
    "`torch.nonzero_static`) instead of `nonzero` / boolean masks",
    "TorchNeuron compiles each eager op for its input shapes and dtypes and caches it under them: a new "
    "shape is a new compile (pre-release source snapshot 2026-04-21; its GPT-OSS tutorial lists MoE "
    "recompiles from changing shapes and variable padding as a limitation)",
    (URL_NEFF_CACHE, URL_MOE_RECOMPILES), "performance", True,
    "a few training steps, the compile cache's counters compared", 1.0)

# Op-specific advice for ops on CPU fallback (matched on the overload packet).
OP_ADVICE: dict[str, str] = {
    "aten::_fused_adamw_": "switch to the foreach AdamW (`torch.optim.AdamW(..., foreach=True, fused=False)`)",
    "aten::_fused_adam_": "switch to the foreach Adam (`torch.optim.Adam(..., foreach=True, fused=False)`)",
    "aten::_fused_sgd_": "switch to the foreach SGD (`torch.optim.SGD(..., foreach=True, fused=False)`)",
}


# Every task kind a rule can declare (records.TASKS), by id; "none" is not port work.
BY_TASK: dict[str, Kind] = {kind.id: kind for kind in (*SOURCE_KINDS, LIBRARY_KIND, KERNEL_KIND,
                                                        TORCH_VERSION_KIND, CUDA_PACKAGES_KIND)}
# The op-gap kinds (model.OP_TASKS), by id: the task an op status makes (model.OpStatus.task).
OP_KINDS: dict[str, Kind] = {kind.id: kind for kind in (UNSUPPORTED_KIND, FALLBACK_KIND,
                                                               MAYBE_FALLBACK_KIND, UNKNOWN_KIND)}


def source_kind(finding: Finding) -> Kind | None:
    """The kind of task that fixes `finding`, from the task kind its rule declares (Finding.task);
    None when it is not port work (task `none`, e.g. parse errors, or no task at all)."""
    return BY_TASK.get(finding.task)


def library_name(finding: Finding) -> str:
    """The top-level package an import finding is about (its subject), else its file's stem."""
    return finding.subject or file_stem(finding.location.path)


def kernel_name(finding: Finding) -> str:
    """The kernel's own name when the code states it (the finding's subject), else "" (the caller
    falls back to the file)."""
    return finding.subject


def file_stem(path: str) -> str:
    """`ops/scan.cu` -> `scan`."""
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
