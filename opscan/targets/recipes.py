"""Ways to build a repository's model with no configuration, read statically (stdlib ast; nothing runs).

Each recipe is a `repo:` target (built in the trace's child by opscan/targets/repository.py) with
how it was found, in the words the report shows:

| target | how found |
|---|---|
| `repo:FILE:Class` | an nn.Module class whose constructor opscan fills: config classes with defaults
                    (dataclasses, attrs/pydantic models, `__init__` defaults, `get_default_config()`),
                    small values by parameter name, config files shipped beside it |
| `repo:FILE:function` | a factory whose arguments have defaults, or take a name from a registry the file defines |
| `repo:FILE:function` | the smallest variant of a registry of model functions (a dict/list of them,
                       or a registering decorator: opscan/targets/registries.py) |
| `repo:hubconf.py:entry` | a torch.hub entry point, called with `pretrained=False` |
| `repo:README.md#N` | the N-th fenced Python block of a README/doc that builds a model and calls it |
| `repo:FILE#main` | the file's `if __name__ == "__main__":` demo |
| `repo:FILE::TEST` | a test of the repository that builds a model and calls it (repo_tests.py) |

The child runs a script-like file (one that trains at import) as its definitions only (imports,
classes, functions, constant assignments), never its top-level statements. `rank` orders recipes
so the repository's main model comes first (NOTE [main model]).
"""

from __future__ import annotations

import ast
import builtins
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from opscan.targets import factories
from opscan.records import CandidateKind

# The kinds of what a repository builds with no configuration (a view of records.CandidateKind).
REPO_KINDS: dict[str, str] = {k.value: k.description for k in CandidateKind if k.from_repository}

# Small values by parameter name (the child fills required arguments with them: construct.py).
NAMED: dict[str, object] = {}
for _names, _value in (
        ("vocab_size num_tokens n_vocab vocab ntoken ntokens num_embeddings", 256),
        ("block_size max_seq_len seq_len context_length max_len n_ctx max_position_embeddings n_positions "
         "sequence_length max_length seq_length", 64),
        ("dim d_model n_embd hidden_size embed_dim hidden_dim width emb_dim d_hidden ninp nhid n_embed "
         "embedding_dim model_dim dim_in dim_out input_dim", 64),
        ("depth n_layer n_layers num_layers layers nlayers num_hidden_layers num_blocks n_blocks", 2),
        ("heads n_head n_heads num_heads nhead num_attention_heads n_kv_head n_kv_heads num_key_value_heads", 2),
        ("dim_head head_dim", 32), ("mlp_dim ff_dim d_ff intermediate_size ffn_dim dim_feedforward", 128),
        ("num_classes n_classes classes num_labels n_class", 10),
        ("image_size img_size resolution", 32), ("patch_size", 4),
        ("in_channels in_chans channels in_ch input_channels num_channels n_channels", 3),
        ("out_channels out_ch out_chans output_channels", 3), ("num_latents", 8), ("latent_dim", 64),
        ("dropout drop_rate attn_dropout p_drop", 0.0), ("timesteps num_timesteps", 10)):
    NAMED.update(dict.fromkeys(_names.split(), _value))

_ENDINGS = (("depth", 2), ("layers", 2), ("blocks", 2), ("heads", 2), ("classes", 10), ("tokens", 256),
            ("bands", 4), ("freq", 10), ("dim", 64), ("dims", 64), ("hidden", 64), ("width", 64),
            ("features", 64), ("channels", 3), ("size", 64))
# Collections by their last word (`attention_resolutions`: the downsample rates that get attention,
# `channel_mults`, `dilation_rates`): a small tuple, whatever the first word says (`dim_mults`).
_COLLECTIONS = {"resolutions": (16, 8), "rates": (1, 2), "mults": (1, 2)}


def named_value(name: str):
    """The small value for a required argument by its name (NAMED, else by its last word), else None."""
    if name in NAMED:
        return NAMED[name]
    last = name.lower().rsplit("_", 1)[-1]
    first = name.lower().split("_", 1)[0]
    if "_" in name and last in _COLLECTIONS:
        return _COLLECTIONS[last]
    return next((value for word, value in _ENDINGS if word in (last, first)), None)


# A parameter named like a config object (`config`, `cfg`, `hparams`, ...): read here and by the
# child's constructor filling (opscan/targets/construct.py), one pattern.
CONFIG_ARG = re.compile(r"(config|conf|cfg|args|hparams|params|settings|options)$", re.IGNORECASE)
# ... and one named like the options object a training script's argparse returns (`Model(opt)`):
# NOTE [options from the training script's parser] in script_options.py.
OPTIONS_ARG = re.compile(r"^(opt|opts|option|options|args|arg|params|hparams|hps|hp|flags|cfg|config|conf)$",
                         re.IGNORECASE)
_MAIN_FILE = re.compile(r"(^|_)(model|models|modeling|net|network|gpt|transformer|unet|vit|arch)", re.IGNORECASE)
_MAIN_CLASS = re.compile(r"(GPT|Transformer|Model|Net|UNet|Unet|ViT|LM|Llama|Diffusion|Encoder|Classifier)$")
_SUPERSEDED = re.compile(r"(^|[_-])(old|legacy|deprecated|backup|bak|orig)$", re.IGNORECASE)   # glow_old.py: ranks low
_SKIP_PARTS = {"tests", "test", "testing", "docs", "doc", "examples", "example", "scripts", "tools",
               "benchmarks", "benchmark", "experiments", "experimental"}
_PYTHON_FENCE = {"", "python", "py", "python3", "pycon"}


def fenced_blocks(text: str) -> list[tuple[int, str]]:
    """(line, code) of each fenced block labelled Python (or unlabelled) in Markdown, in order."""
    out, lines, index = [], text.splitlines(), 0
    while index < len(lines):
        opening = lines[index].strip()
        if opening.startswith(("```", "~~~")):
            fence, label = opening[:3], opening[3:].strip().lower().split(" ")[0].strip("{}.")
            end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith(fence)), len(lines))
            if label in _PYTHON_FENCE:
                out.append((index + 1, "\n".join(lines[index + 1:end])))
            index = end + 1
            continue
        index += 1
    return out


@dataclass(frozen=True)
class Recipe:
    """One way to build a model of the repository: its target, how it was found, and its rank."""

    target: str
    kind: CandidateKind       # one of REPO_KINDS
    path: str
    line: int
    how: str                  # one line, e.g. "GPT(GPTConfig()): a dataclass with a default for every field"
    score: int = 0            # larger first (NOTE [main model])


# NOTE [main model]
# A repository defines many nn.Module classes; most are parts (attention, MLP, blocks). The main
# model is the one nothing else builds: within its file (a "root" class, as discovery.py finds them)
# and, scored here, the one in a file named like a model (model.py, models/, modeling_*.py) and
# not under tests/docs/examples, whose name reads like a model (GPT, Transformer, UNet, ViT, ...),
# with the longest definition, and taking a config (not in a file named as superseded: glow_old.py). Examples in the
# repository's own words (README
# blocks, hubconf entries) build the model the authors meant and call it with real inputs, so they
# rank first; a `__main__` demo next to the model code too. A builder with no required argument
# that says it returns a model (`def llama3_2_1b() -> TransformerDecoder`) is the repository's own
# way to build one: it ranks just below them, the smallest size its name spells first. A wrapper
# (a class taking another model class of its file, NOTE [wrappers] in construct.py) counts as a
# root even when another class builds it, and one named `*Wrapper` as model-named. Activations,
# losses, variants and parts rank below whole models (NOTE [parts below models]). Ties are broken
# by path and line, so the order is deterministic.

# NOTE [parts below models]
# Some classes of a repository are no model at all, and others are parts of one; read statically,
# each ranks below the whole-model classes by how sure the sign is (part_penalty):
# - no parameter-holding layer (`self.x = <a call>`, add_module, register_parameter, setattr, an
#   argument named like a module kept, a base other than nn.Module): an activation (Swish, SiLU) or
#   an abstract block; its trace would be one elementwise op: -600;
# - a loss: named `*Loss` / `*Criterion`, or a forward taking a prediction and a target
#   (`forward(pred, target)`, `forward(model_output)`): -600;
# - a variant: a subclass of another model class of the repository whose constructor passes its
#   `*args, **kwargs` on to its base (`SuperResModel(UNetModel)`): below its base even when that
#   base ranks low as one (-300), so -400 (construct.forwarded fills the base's arguments);
# - a part's name (PART_NAME: Mlp, FeedForward, Attention, Block, Norm, Embedding, Layer, ...),
#   unless it also reads like a model (_MAIN_CLASS): -200; in a folder or file of parts (`layers/`,
#   `modules/`, `ops/`, `blocks/`, `nn/`, `utils/`, `nn.py`): -200.
# Classes built inside another class of their file are parts already (discovery.py keeps only the
# roots); a CapWords function called inside another of the file's classes or functions
# (`FeedForward(dim)` used by `Transformer`) ranks -300 for the same reason (factory_recipes).
PART_NAME = re.compile(r"(Mlp|MLP|FeedForward|FFN|Attention|Attn|Block|Norm|Embedding|Embed|Embedder|Activation|"
                       r"Swish|SiLU|GELU|GLU|ReLU|Mish|Sigmoid|Tanh|Dropout|DropPath|Layer|Layers|Residual|Pool|"
                       r"Head|Conv|Linear|Gate|Gating|Scale)\d*$")
_PART_PLACES = {"layers", "modules", "ops", "blocks", "nn", "utils", "util", "common"}
_LOSS_NAME = re.compile(r"(Loss|Criterion)\d*$")
_PREDICTION = {"pred", "preds", "prediction", "predictions", "logits", "output", "outputs", "model_output",
               "y_pred", "input", "inputs", "y_hat"}
_TARGET = {"target", "targets", "gt", "ground_truth", "y_true", "label", "labels", "gt_labels"}
_PLAIN_BASES = {"Module", "ABC", "object"}
_MODULE_ARG = re.compile(r"(model|net|module|backbone|encoder|decoder|layer|block|body|head|fn|transformer)s?$",
                         re.IGNORECASE)
_VALUE_CALLS = {"int", "float", "str", "bool", "len", "max", "min", "abs", "round", "tuple", "list", "dict", "set",
                "sum", "getattr", "isinstance", "range", "sqrt", "log", "exp", "pow", "default", "exists", "pair",
                "zeros", "ones", "tensor", "arange", "randn", "rand", "empty", "full", "linspace", "as_tensor",
                "zeros_like", "ones_like", "partial", "get", "lower", "format"}


def part_penalty(node: ast.ClassDef, rel: str, wrappers=frozenset()) -> int:
    """How far below the whole-model classes a class ranks as a part, a loss, an activation or a
    variant (NOTE [parts below models]); 0 for a class that reads like a whole model."""
    penalty = 0
    if not holds_parameters(node) and node.name not in wrappers:
        penalty += 600
    if is_loss(node):
        penalty += 600
    if forwards_to_base(node):
        penalty += 400
    if PART_NAME.search(node.name) and not _MAIN_CLASS.search(node.name):
        penalty += 200
    places = rel.split("/")[:-1] + [PurePosixPath(rel).stem]
    if _PART_PLACES & set(places):
        penalty += 200
    return penalty


def holds_parameters(node: ast.ClassDef) -> bool:
    """True when the class may hold a parameter: a base other than nn.Module, or anywhere in its body
    a call's result or a module-named argument kept on `self`, add_module / register_parameter / setattr."""
    if any(ast.unparse(b).split(".")[-1] not in _PLAIN_BASES for b in node.bases):
        return True
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)) and sub.value is not None:
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            if not any(_on_self(t) for t in targets):
                continue
            if any(isinstance(c, ast.Call) and _callee(c) not in _VALUE_CALLS for c in ast.walk(sub.value)):
                return True
            if isinstance(sub.value, ast.Name) and _MODULE_ARG.search(sub.value.id):
                return True
        if isinstance(sub, ast.Call) and _callee(sub) in ("add_module", "register_parameter", "register_module",
                                                          "setattr"):
            return True
    return False


def is_loss(node: ast.ClassDef) -> bool:
    """A loss: named `*Loss`/`*Criterion`, or its forward takes a prediction and a target (or only a
    model's output)."""
    if _LOSS_NAME.search(node.name):
        return True
    forward = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "forward"), None)
    required = required_parameters(forward) - {"self"}
    return bool(required & _PREDICTION and required & _TARGET) or required == {"model_output"}


def forwards_to_base(node: ast.ClassDef) -> bool:
    """A variant: a subclass of another class (a base other than nn.Module) whose `__init__` takes
    `*args`/`**kwargs` and passes them on to its base."""
    if not node.bases or ast.unparse(node.bases[0]).split(".")[-1] in _PLAIN_BASES:
        return False
    init = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
    if init is None or init.args.vararg is None and init.args.kwarg is None:
        return False
    passed = {init.args.vararg.arg if init.args.vararg else None, init.args.kwarg.arg if init.args.kwarg else None}
    for call in ast.walk(init):
        if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("__init__"):
            starred = {a.value.id for a in call.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)}
            starred |= {k.value.id for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)}
            if starred & passed:
                return True
    return False


def _on_self(target) -> bool:
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_on_self(t) for t in target.elts)
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _callee(call: ast.Call) -> str:
    return ast.unparse(call.func).split(".")[-1]


def wrapper_classes(classes: dict[str, ast.ClassDef]) -> set[str]:
    """Classes whose constructor takes another model class of the file as a required argument, by
    annotation (`attn_layers: AttentionLayers`) or by name (`encoder` -> Encoder): the model
    around its body (NOTE [wrappers] in construct.py), a main model even when another class builds it."""
    lowered = {name.lower() for name in classes}
    out = set()
    for name, node in classes.items():
        init = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
        for arg in init.args.args + init.args.kwonlyargs if init is not None else []:
            hint = ast.unparse(arg.annotation).split(".")[-1].strip("'\"") if arg.annotation else ""
            spelled = {arg.arg.replace("_", "").lower(), arg.arg.replace("attn", "attention").replace("_", "").lower()}
            if arg.arg in required_parameters(init) \
                    and (hint in classes and hint != name or spelled & (lowered - {name.lower()})):
                out.add(name)
    return out


def class_recipes(tree: ast.Module, rel: str, roots: dict[str, ast.ClassDef], runs_on_import: bool,
                  wrappers: set[str] = frozenset(), bases: frozenset[str] = frozenset(), shipped=None) -> list[Recipe]:
    """`repo:FILE:Class` for the file's root nn.Module classes (and its wrappers); `bases`: the
    repository's classes other model classes derive from (a base class ranks low); `shipped(required)`:
    where a config file beside the code holds them all, else "" (opscan/targets/shipped.py)."""
    configs = config_classes(tree)
    out = []
    for name, node in roots.items():
        if name.startswith("_"):
            continue
        init = next((i for i in node.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
        required = required_parameters(init) - {"self"} if init is not None else set()
        outside = [ast.unparse(b).split(".")[-1] for b in node.bases]
        inherited = outside[0] if outside and outside[0] not in roots and outside[0] not in ("Module", "nn.Module") \
            and not ast.unparse(node.bases[0]).endswith("nn.Module") else ""
        how = _class_how(name, required, init, configs, inherited)
        unnamed = [r for r in required if named_value(r) is None and not CONFIG_ARG.search(r) and name not in wrappers]
        table = shipped(required) if shipped is not None and unnamed else ""
        if table:   # NOTE [constructor arguments from a shipped file] in shipped.py
            where, _, cut = table.partition(" (")
            how = f"{name}(**{where}): constructor arguments from a config file beside it" + (f" ({cut}" if cut else "")
            unnamed = []
        own = any(isinstance(i, ast.FunctionDef) and i.name == "get_default_config" for i in node.body)
        if own and any(CONFIG_ARG.search(r) for r in required):
            how = f"{name}({name}.get_default_config()): the model's own default config, unset sizes filled by name"
        if name in wrappers:
            how = how.replace("small values chosen by parameter name", "a wrapper: its model argument built "
                              "from its class, the rest by parameter name")
        if forwards_to_base(node):
            how += f"; the required arguments it passes on to {outside[0]} filled by name too"
        if runs_on_import:
            how += f" (definitions of {PurePosixPath(rel).name} only: it runs code at import)"
        length = (node.end_lineno or node.lineno) - node.lineno
        score = min(length, 400) \
            + (150 if _MAIN_FILE.search(PurePosixPath(rel).stem) or "models" in rel.split("/") else 0) \
            + (150 if _MAIN_CLASS.search(name) or name in wrappers and name.endswith("Wrapper") else 0) \
            + (200 if name.lower() == PurePosixPath(rel).stem.lower() else 0) \
            + (50 if any(CONFIG_ARG.search(r) for r in required) else 0) \
            - (300 if _SKIP_PARTS & set(rel.split("/")[:-1]) else 0) - 20 * rel.count("/") \
            - (300 if name in bases else 0) - part_penalty(node, rel, wrappers) \
            - 300 * len(unnamed) - (200 if _SUPERSEDED.search(PurePosixPath(rel).stem) else 0)
        out.append(Recipe(f"repo:{rel}:{name}", CandidateKind.REPO_CLASS, rel, node.lineno, how, score))
    return out


def _class_how(name: str, required: set[str], init, configs: dict[str, ast.ClassDef], inherited: str = "") -> str:
    if init is None and inherited:
        return f"{name}(config): the constructor of {inherited}, its config built from the class " \
               "(a registry of named variants, its defaults, or fields by name)"
    if not required:
        return f"{name}(): every constructor argument has a default"
    annotated = {a.arg: ast.unparse(a.annotation) for a in (init.args.args if init else []) if a.annotation}
    for arg in sorted(required):
        hint = annotated.get(arg, "")
        cls = next((c for c in configs if c == hint.split(".")[-1].strip("'\"")), None) or \
            (next(iter(configs)) if CONFIG_ARG.search(arg) and len(configs) == 1 else None)
        if cls:
            return f"{name}({cls}()): {config_words(configs[cls])}"
    imported = next((annotated[a].split(".")[-1].strip("'\"") for a in sorted(required)
                     if re.search(r"(Config|Args|Cfg|Params|Settings|Conf)$", annotated.get(a, ""))), None)
    if imported:   # defined in another file: how it is built is known only in the child
        return f"{name}({imported}): a config built from its class (a registry variant by from_name, " \
               "its defaults, or fields by name)"
    if any(CONFIG_ARG.search(r) or OPTIONS_ARG.match(r) for r in required):   # NOTE [configs from the
        # repository's config files], NOTE [options from the training script's parser]
        return f"{name}({', '.join(sorted(required))}): a config from the repository's config files " \
               "(YAML, JSON, TOML, get_config()) or its argparse defaults holding what it reads, else small " \
               "values chosen by parameter name"
    return f"{name}({', '.join(sorted(required))}): small values chosen by parameter name"


def config_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    """Top-level classes that look like configs: dataclasses, attrs/pydantic models, *Config/*Args."""
    out = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        decorators = {ast.unparse(d).split("(")[0].split(".")[-1] for d in node.decorator_list}
        bases = {ast.unparse(b).split(".")[-1] for b in node.bases}
        if decorators & {"dataclass", "define", "attrs", "s", "frozen"} or bases & {"BaseModel", "BaseSettings",
                                                                                     "NamedTuple", "PretrainedConfig"} \
                or re.search(r"(Config|Args|Cfg|Params|HParams|Settings)$", node.name):
            out[node.name] = node
    return out


def config_words(node: ast.ClassDef) -> str:
    fields = [i for i in node.body if isinstance(i, ast.AnnAssign)]
    kind = "a dataclass" if any("dataclass" in ast.unparse(d) for d in node.decorator_list) else "a config class"
    if fields and all(f.value is not None for f in fields):
        return f"{kind} with a default for every field"
    if any(isinstance(i, ast.FunctionDef) and i.name == "get_default_config" for i in node.body):
        return f"{kind} with get_default_config()"
    return f"{kind}; fields without a default are filled by name"


def factory_recipes(tree: ast.Module, rel: str, factories: list[ast.FunctionDef]) -> list[Recipe]:
    """`repo:FILE:fn` for factories whose required arguments take a variant name from a registry."""
    registries = registry_names(tree)
    used = {c.func.id for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            for c in ast.walk(node)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id != node.name}
    out = []
    for fn in tree.body:   # CapWords functions that build a model from named sizes, e.g. MLPMixer(*, dim, depth)
        if isinstance(fn, ast.FunctionDef) and fn.name[:1].isupper() and fn not in factories \
                and required_parameters(fn) and all(named_value(r) is not None for r in required_parameters(fn)):
            part = (300 if fn.name in used else 0) \
                + (200 if PART_NAME.search(fn.name) and not _MAIN_CLASS.search(fn.name) else 0)
            out.append(Recipe(f"repo:{rel}:{fn.name}", CandidateKind.REPO_FACTORY, rel, fn.lineno,
                              f"{fn.name}({', '.join(sorted(required_parameters(fn)))}): "
                              "small values chosen by parameter name",
                              250 + min((fn.end_lineno or fn.lineno) - fn.lineno, 100) - part))
    for fn in factories:
        required = required_parameters(fn) - {"batch", "seq_len"}
        if not required:
            continue
        if registries and len(required) == 1:
            arg = next(iter(required))
            out.append(Recipe(f"repo:{rel}:{fn.name}", CandidateKind.REPO_FACTORY, rel, fn.lineno,
                              f"{fn.name}({arg}=...): a variant name from the registry {registries[0]}", 300))
    return out


_MODEL_TYPE = re.compile(r"(GPT|Transformer|Model|Net|UNet|Unet|ViT|LM|Decoder|Encoder|Module|Llama|Diffusion)$")
_SIZE_WORD = re.compile(r"(?:^|[-_.])(0_\d+|\d+)([mb])(?=$|[-_.])", re.IGNORECASE)


def builder_recipes(tree: ast.Module, rel: str, factories: list[ast.FunctionDef]) -> list[Recipe]:
    """`repo:FILE:fn` for public functions with no required argument that say they return a model
    (`def llama3_2_1b() -> TransformerDecoder`); the smallest size spelled in the name first."""
    out = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_") or fn in factories \
                or required_parameters(fn) \
                or fn.returns is None or not _MODEL_TYPE.search(ast.unparse(fn.returns).split(".")[-1].strip("'\"")):
            continue
        size = _SIZE_WORD.findall(fn.name)
        millions = float(size[0][0].replace("_", ".")) * (1000 if size[0][1].lower() == "b" else 1) if size else None
        penalty = int(20 * math.log10(millions + 1)) if millions is not None else 100
        out.append(Recipe(f"repo:{rel}:{fn.name}", CandidateKind.REPO_FACTORY, rel, fn.lineno,
                          f"{fn.name}() -> {ast.unparse(fn.returns)}: a builder with no required argument "
                          "(repeated blocks cut to 2)", 600 - penalty))
    return out


def registry_names(tree: ast.Module) -> list[str]:
    """Module-level dicts keyed by strings (named variants), e.g. `CONFIGS = {"tiny": dict(...), ...}`."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict) and node.value.keys \
                and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.value.keys):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out.extend(ast.unparse(t) for t in targets if isinstance(t, ast.Name))
    return out


# NOTE [toy demos]
# Helper files end with `__main__` demos that build a part with toy sizes (`PositionalEncoding(8)`
# on an `nn.Embedding(8, 10)`): run to their first model call they trace, and two of them once
# ended the search (MAIN_MODELS) before the repository's model was tried. A demo ranks with the
# whole models only in a file named like a model and when it builds a class not named like a part;
# any other demo ranks below every model class (-200), to be tried when nothing better builds.

def main_recipe(tree: ast.Module, rel: str, classes: set[str]) -> Recipe | None:
    """`repo:FILE#main` when the file's `__main__` block builds one of its classes and calls it."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            body = ast.Module(body=node.body, type_ignores=[])
            built = {ast.unparse(c.func).split(".")[-1] for c in ast.walk(body) if isinstance(c, ast.Call)}
            if built & classes:
                whole = {c for c in built & classes if not (PART_NAME.search(c) and not _MAIN_CLASS.search(c))}
                score = 250 if _MAIN_FILE.search(PurePosixPath(rel).stem) and whole else -200   # NOTE [toy demos]
                return Recipe(f"repo:{rel}#main", CandidateKind.MAIN_DEMO, rel, node.lineno,
                              f"the `__main__` demo of {rel} (line {node.lineno}), stopped at its first model call",
                              score)
    return None


def readme_recipes(text: str, rel: str) -> list[Recipe]:
    """`repo:DOC#N` for fenced Python blocks that import torch or a model and call something built."""
    out = []
    for index, (line, code) in enumerate(fenced_blocks(text), 1):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        names = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                 for t in n.targets if isinstance(t, ast.Name)}
        called = {ast.unparse(c.func) for c in ast.walk(tree) if isinstance(c, ast.Call)}
        imports = any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body)
        if imports and "torch" in code and names & called:
            out.append(Recipe(f"repo:{rel}#{index}", CandidateKind.README, rel, line,
                              f"the fenced example {index} of {rel} (line {line}), stopped at its model call",
                              700 if "/" not in rel else 350))
    return out


def runs_code_on_import(tree: ast.Module) -> bool:
    """True when the module does more at import than define things (outside `if __name__ == ...`)."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.For, ast.While, ast.With, ast.AsyncFor, ast.AsyncWith, ast.Try)):
            if isinstance(node, ast.Try) and all(isinstance(n, (ast.Import, ast.ImportFrom, ast.Pass, ast.Assign))
                                                 for n in node.body):
                continue   # try: import x / except ImportError: x = None
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            callee = ast.unparse(node.value.func)
            if not ("register" in callee or callee.startswith(("torch.library.", "logging.", "warnings."))
                    or callee.endswith((".define", ".impl", ".fallthrough"))):
                return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and ast.unparse(call.func).split(".")[-1] in (
                        "train", "fit", "load", "from_pretrained", "compile", "to", "cuda"):
                    return True
    return False


def definitions(tree: ast.Module) -> ast.Module:
    """The module's definitions only: imports, classes, functions, and assignments of constants,
    literals and containers (what a script's model classes need; never its training statements)."""
    keep = []
    defined = set(dir(builtins))   # NOTE [definitions that read what was left out]
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            keep.append(node)
        elif isinstance(node, ast.Try) and all(isinstance(n, (ast.Import, ast.ImportFrom, ast.Pass, ast.Assign))
                                               for n in node.body):
            keep.append(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and all(
                ast.unparse(c.func) in _SAFE_CALLS for c in ast.walk(node.value) if isinstance(c, ast.Call)) \
                and _reads_only(node, defined):
            keep.append(node)
        else:
            continue
        defined |= _bound(node)
    return ast.Module(body=keep, type_ignores=[])


# NOTE [definitions that read what was left out]
# A script run as its definitions keeps the module-level assignments of constants and containers;
# one that reads a name the cut left out (`agent.env = gui_env` after `gui_env = gym.make(...)`,
# `env._max_episode_steps = 500` after `env = gym.make(...)`) would fail the whole load with a
# NameError, so it goes too: an assignment is kept only when every name it reads (its value, and
# the object an attribute or item target sets on) is bound by what was kept before it, or a builtin.


def _reads_only(node: ast.Assign | ast.AnnAssign, defined: set[str]) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    read = [n.id for part in [node.value, *targets] if part is not None for n in ast.walk(part)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    return all(name in defined for name in read)


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a kept statement binds (a `try:` of imports and assignments included)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for inner in ast.walk(node):
        if isinstance(inner, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in inner.names}
    return out


_SAFE_CALLS = {"dict", "list", "tuple", "set", "frozenset", "field", "dataclasses.field", "namedtuple",
               "collections.namedtuple", "TypeVar", "logging.getLogger", "os.environ.get", "Path",
               "torch.device", "int", "float", "str", "bool", "range"}


def required_parameters(fn) -> set[str]:
    """The required parameter names of `fn` (none for None): opscan/targets/factories.py `required`."""
    return set(factories.required(fn)) if fn is not None else set()


# the repository's examples come first, whatever the scores below them
_FIRST = (CandidateKind.README, CandidateKind.HUBCONF)


def rank(recipes: list[Recipe]) -> list[Recipe]:
    """Best first (NOTE [main model]; its tests: NOTE [which test] in repo_tests.py); deterministic."""
    return sorted(recipes, key=lambda r: (r.kind not in _FIRST, -r.score, r.path, r.line, r.target))
