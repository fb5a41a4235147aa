"""The training command found by reading (opscan/targets/entry/): each source, the ranking, what is
left out; nothing of the project is run (a marker file a run would write stays absent)."""

from __future__ import annotations

from pathlib import Path

from opscan.index import ProjectIndex
from opscan.targets.entry import find_entries, given_entry
from opscan.targets.entry.shell_words import commands
from tests.support.corpus import write_sources

STEPS = """\
import torch
MARKER = __import__("pathlib").Path(__file__).with_name("RAN")
MARKER.write_text("the script ran")
def main():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(1, 2)).sum().backward()
    optimizer.step()
if __name__ == "__main__":
    main()
"""


def _found(root: Path) -> list[tuple[str, str, str]]:
    return [(e.command, e.kind, e.cwd) for e in find_entries(ProjectIndex(root))]


def test_a_readme_shell_block_gives_the_command_with_its_arguments(tmp_path):
    root = write_sources(tmp_path, {"train.py": STEPS, "README.md": """\
        # demo
        ```bash
        pip install -r requirements.txt
        python data/prepare.py
        python train.py --config configs/small.yaml
        python sample.py --ckpt out/ckpt.pt
        ```
        """, "data/prepare.py": "print('prepare')\n", "sample.py": "print('sample')\n"})
    found = _found(root)
    assert found[0] == ("python train.py --config configs/small.yaml", "readme", "")
    assert not any("prepare" in c or "sample" in c for c, _, _ in found)   # other jobs than training
    assert not (root / "RAN").exists()


def test_a_console_block_reads_only_prompted_lines_and_joins_continuations(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "docs/usage.md": """\
        ```console
        $ torchrun --nproc_per_node 8 main.py \\
            --epochs 3
        Epoch 1: loss 2.3
        python main.py --ignored output line
        ```
        """})
    assert _found(root)[0] == ("torchrun --nproc_per_node 8 main.py --epochs 3", "docs", "")


def test_a_shell_script_expands_its_variables_and_follows_cd(tmp_path):
    root = write_sources(tmp_path, {"src/pretrain.py": "from engine import train_one_epoch\n"
                                    "if __name__ == '__main__':\n    train_one_epoch()\n",
                                    "src/engine.py": "def train_one_epoch(model=None, optimizer=None):\n"
                                                     "    optimizer.step()\n",
                                    "scripts/pretrain.sh": """\
        #!/bin/bash
        MODEL=vit_base
        ARGS="--epochs 1 --lr 3e-4"
        cd src && CUDA_VISIBLE_DEVICES=0 nohup python pretrain.py --model $MODEL $ARGS --data $DATA_ROOT > log 2>&1 &
        """})
    entries = find_entries(ProjectIndex(root))
    assert (entries[0].command, entries[0].kind, entries[0].cwd) == (
        "python pretrain.py --model vit_base --epochs 1 --lr 3e-4 --data '$DATA_ROOT'", "shell-script", "src")
    assert "engine.py:2" in entries[0].why and "$DATA_ROOT" in entries[0].why   # evidence one import away; unset


def test_a_makefile_recipe_and_a_console_script(tmp_path):
    root = write_sources(tmp_path, {
        "Makefile": "PY ?= python3\nEPOCHS := 2\ntrain:\n\t@$(PY) fit.py --epochs $(EPOCHS)\n",
        "fit.py": STEPS,
        "pyproject.toml": '[project]\nname = "p"\n[project.scripts]\n'
                          'p-train = "pkg.cli:train"\np-serve = "pkg.cli:serve"\n',
        "pkg/__init__.py": "", "pkg/cli.py": STEPS.replace("def main", "def train")})
    found = _found(root)
    assert ("python3 fit.py --epochs 2", "makefile", "") in found
    assert ("p-train", "project-script", "") in found and not any(c == "p-serve" for c, _, _ in found)
    entry = next(e for e in find_entries(ProjectIndex(root)) if e.kind == "project-script")
    assert entry.entry_point == "pkg.cli:train"


def test_a_script_stepping_an_optimizer_when_run_is_found_with_nothing_written(tmp_path):
    loop = "import torch\nopt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1)\nfor i in range(3):\n" \
           "    opt.step()\n"
    root = write_sources(tmp_path, {"experiment.py": STEPS, "tests/test_train.py": STEPS, "loop.py": loop,
                                    "library.py": STEPS.replace('if __name__ == "__main__":\n    main()\n', "")})
    assert _found(root) == [("python experiment.py", "main-step", ""), ("python loop.py", "main-step", "")]


def test_ranking_evidence_then_source_then_order(tmp_path):
    root = write_sources(tmp_path, {
        "train.py": STEPS, "finetune.py": "import sys\nprint(sys.argv)\n",   # named for training only
        "README.md": "```sh\npython finetune.py --lr 1\npython train.py --lr 2\n```\n",
        "scripts/run.sh": "python train.py --lr 3\n"})
    found = [c for c, _, _ in _found(root)]
    # steps an optimizer beats a name; README before a shell script; a written file has no main-step entry
    assert found == ["python train.py --lr 2", "python train.py --lr 3", "python finetune.py --lr 1"]


def test_a_readme_command_whose_step_is_imports_deep_outranks_a_script_no_text_names(tmp_path):
    """NOTE [a written command whose step is imports deep]: main.py -> pipeline -> trainer steps."""
    root = write_sources(tmp_path, {
        "main.py": "from pipe.orchestrator import Orchestrator\nOrchestrator().run()\n",
        "pipe/__init__.py": "", "pipe/orchestrator.py": "from pipe.trainer import Trainer\n"
        "class Orchestrator:\n    def run(self):\n        Trainer().fit()\n",
        "pipe/trainer.py": STEPS.replace('if __name__ == "__main__":\n    main()\n', ""),
        "interpolate.py": STEPS,   # steps an optimizer over latent codes when run; no text names it
        "README.md": "## Usage\n```sh\npython main.py\n```\n"})
    entries = find_entries(ProjectIndex(root))
    assert [(e.command, e.kind) for e in entries] == [("python main.py", "readme"),
                                                     ("python interpolate.py", "main-step")]
    assert "pipe/trainer.py:" in entries[0].why
    # a script found only because it trains when run keeps one level: main.py alone is no command
    (root / "README.md").unlink()
    assert _found(root) == [("python interpolate.py", "main-step", "")]


def test_commands_whose_script_is_not_in_the_project_are_left_out(tmp_path):
    root = write_sources(tmp_path, {"README.md": "```sh\npython train.py\npython -m pkg.train\n"
                                                 "python /opt/other/train.py\n```\n"})
    assert _found(root) == []
    (root / "pkg").mkdir()
    (root / "pkg" / "train.py").write_text(STEPS, encoding="utf-8")
    assert _found(root) == [("python -m pkg.train", "readme", "")]


def test_a_given_entry_is_taken_as_written():
    entry = given_entry("  python pretrain.py --model vit_base ")
    assert (entry.command, entry.kind) == ("python pretrain.py --model vit_base", "given")


def test_shell_words_split_a_line_into_simple_commands():
    found = commands("X=1\nexport Y=two\ncd a && python t.py $X ${Y} ${Z:-zed} | tee log; time python u.py\n")
    assert [(c.words, c.cwd) for c in found] == [(("python", "t.py", "1", "two", "zed"), "a"),
                                                      (("tee", "log"), "a"), (("python", "u.py"), "a")]


HELPER_STEPS = """\
def train_epoch(model, optimizer, loader):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""


def test_a_script_that_trains_when_run_through_a_helper_or_a_function_of_its_own(tmp_path):
    # NOTE [scripts that train when run]: module-level training through a project helper, a function
    # of the file called at its end, a function handed to a process; a module that only names a
    # trainer in a table, and a library module whose stepping function nothing runs, are no commands
    root = write_sources(tmp_path, {
        "train_epoch.py": HELPER_STEPS,
        "script.py": "import torch\nfrom train_epoch import train_epoch\nmodel = torch.nn.Linear(2, 2)\n"
                     "opt = torch.optim.Adam(model.parameters())\nfor epoch in range(2):\n"
                     "    loss = train_epoch(model, opt, [torch.randn(1, 2)])\n",
        "ddpm.py": "import torch\ndef fit(model):\n    optimizer = torch.optim.AdamW(model.parameters())\n"
                   "    optimizer.step()\nmodel = torch.nn.Linear(2, 2)\nfit(model)\n",
        "launcher.py": "import torch.multiprocessing as mp\nfrom train_epoch import train_epoch\n"
                       "if __name__ == '__main__':\n    p = mp.Process(target=train_epoch, args=())\n    p.start()\n",
        "registry.py": "from train_epoch import train_epoch\nTRAINERS = {'epoch': train_epoch}\n",
        "library.py": "import torch\ndef fit(model):\n    optimizer = torch.optim.AdamW(model.parameters())\n"
                      "    optimizer.step()\n"})
    found = _found(root)
    assert [c for c, _, _ in found] == ["python ddpm.py", "python launcher.py", "python script.py"]
    assert {k for _, k, _ in found} == {"main-step"}
    why = {e.command: e.why for e in find_entries(ProjectIndex(root))}
    assert "calls fit() when run" in why["python ddpm.py"] and "ddpm.py:4" in why["python ddpm.py"]
    script = why["python script.py"]
    assert "runs train_epoch of train_epoch.py" in script and "train_epoch.py:4" in script
    assert not (root / "RAN").exists()


def test_a_script_that_only_uses_a_class_of_a_training_module_is_no_command(tmp_path):
    # generating with the model class of a module that also trains is not training: only the function
    # that steps, called or handed on (as `m.train_epoch`), makes the script a command
    helper = "import torch\nclass Net(torch.nn.Module):\n    pass\n" + HELPER_STEPS
    root = write_sources(tmp_path, {
        "lm.py": helper,
        "use_net.py": "import lm\nif __name__ == '__main__':\n    net = lm.Net()\n",
        "run.py": "import lm\nif __name__ == '__main__':\n    lm.train_epoch(lm.Net(), None, [])\n"})
    assert [c for c, _, _ in _found(root)] == ["python run.py"]


REQUIRED = STEPS.replace("def main():", """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--dataset", required=True)
parser.add_argument("--epochs", type=int, required=True)
parser.add_argument("--mode", choices=["train", "eval"], required=True)
parser.add_argument("--lr", type=float, default=0.1)
def main():""")


def test_a_readme_command_written_from_the_scripts_folder_runs_there(tmp_path):
    """"code in `python` folder", then `python main.py --dataset=ml-1m`: the file is python/main.py."""
    root = write_sources(tmp_path, {"python/main.py": REQUIRED, "python/model.py": "import torch\n",
                                    "README.md": "code in `python` folder.\n\n```\npython main.py --dataset=ml-1m "
                                                 "--epochs=3 --mode=train\n```\n"})
    assert _found(root) == [("python main.py --dataset=ml-1m --epochs=3 --mode=train", "readme", "python")]
    # a folder the README does not name holds main.py too: still the one named
    write_sources(tmp_path, {"other/main.py": REQUIRED})
    assert _found(root)[0] == ("python main.py --dataset=ml-1m --epochs=3 --mode=train", "readme", "python")
    # two named folders holding it: nothing is guessed, the scripts found training stand
    write_sources(tmp_path, {"README.md": "code in `python` and in `other`.\n\n```\npython main.py --dataset=x\n```\n"})
    assert [kind for _, kind, _ in _found(root)] == ["main-step", "main-step"]


def test_required_options_of_a_script_nothing_writes_a_command_for_are_filled_and_said(tmp_path):
    root = write_sources(tmp_path, {"main.py": REQUIRED})
    (entry,) = find_entries(ProjectIndex(root))
    assert entry.command == "python main.py --dataset dataset --epochs 1 --mode train"
    assert "assumed" in entry.why and "--mode train (its first choice)" in entry.why


def test_the_windows_python_launcher_of_a_readme_is_a_python_command_and_ranks_first(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "image_only.py": STEPS,
                                    "README.md": "## multimodal\n```\npy main.py\n```\n"
                                                 "## image only\n```\npy -3 image_only.py\n```\n"})
    assert _found(root) == [("python main.py", "readme", ""), ("python image_only.py", "readme", "")]


def test_a_command_written_as_inline_code_in_the_readmes_prose_is_read_after_its_blocks(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "finetune.py": STEPS, "test.py": STEPS,
                                    "README.md": "### Getting started\n* 1. Train: `python main.py`. </br>\n"
                                                 "* 2. Test: `python test.py`.\n* `pip install -r x.txt`\n"
                                                 "```sh\npython finetune.py --lr 1\n```\n"})
    assert [(c, k) for c, k, _ in _found(root)][:2] == [("python finetune.py --lr 1", "readme"),
                                                             ("python main.py", "readme")]


def _gcn_like(root: Path) -> None:
    """A script written for `cd pygcn && python train.py`: its data path is relative to its folder."""
    (root / "data" / "cora").mkdir(parents=True)
    (root / "data" / "cora" / "cora.content").write_text("1 0.5 0.25\n2 0.75 0.125\n", encoding="utf-8")
    (root / "data" / "cora" / "cora.cites").write_text("1 2\n", encoding="utf-8")
    (root / "pygcn").mkdir()
    (root / "pygcn" / "utils.py").write_text(
        "import numpy as np\n\ndef load_data(path='../data/cora/', dataset='cora'):\n"
        "    return np.genfromtxt('{}{}.content'.format(path, dataset))\n", encoding="utf-8")
    (root / "pygcn" / "train.py").write_text(
        "import torch\nfrom utils import load_data\nx = torch.tensor(load_data(), dtype=torch.float32)\n"
        "model = torch.nn.Linear(3, 2)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(x).sum().backward()\noptimizer.step()\n", encoding="utf-8")


def test_a_script_whose_relative_paths_resolve_only_from_its_folder_runs_from_there(tmp_path):
    """NOTE [a script run from its own folder]: pygcn's `python pygcn/train.py` from the root."""
    from opscan.targets.entry.own_folder import own_folder

    _gcn_like(tmp_path)
    script = str(tmp_path / "pygcn" / "train.py")
    assert own_folder(script, str(tmp_path), str(tmp_path)) == (str((tmp_path / "pygcn").resolve()), "../data/cora/")
    assert own_folder(script, str(tmp_path / "pygcn"), str(tmp_path)) == ("", "")   # already there
    (tmp_path / "pygcn" / "a_eval.py").write_text("DATA = '../data/cora/cora.cites'\n", encoding="utf-8")
    assert own_folder(script, str(tmp_path), str(tmp_path))[1] == "../data/cora/"   # the imported module's first
    (tmp_path / "pygcn" / "eval.py").write_text("OUT = 'data/cora/cora.content'\n", encoding="utf-8")
    assert own_folder(script, str(tmp_path), str(tmp_path)) == ("", "")   # a path only the root resolves: stay


def test_paths_that_resolve_from_both_folders_or_outside_the_project_move_nothing(tmp_path):
    from opscan.targets.entry.own_folder import own_folder

    (tmp_path / "proj" / "src" / "configs").mkdir(parents=True)
    (tmp_path / "proj" / "configs").mkdir()
    (tmp_path / "data").mkdir()   # beside the project, not inside it
    (tmp_path / "proj" / "src" / "train.py").write_text(
        "A = 'configs/base.yaml'\nB = '../../data'\nC = 'https://host/x/y'\n", encoding="utf-8")
    assert own_folder(str(tmp_path / "proj" / "src" / "train.py"), str(tmp_path / "proj"),
                      str(tmp_path / "proj")) == ("", "")


def test_inline_code_written_with_three_backticks_on_one_line_opens_no_block(tmp_path):
    """"```python setup.py install```" read as a fence swallowed the README's usage block up to its
    opening fence (gpackage-gcn-torch): a backtick fence's info string holds no backtick."""
    root = write_sources(tmp_path, {"pkg/train_gdp.py": STEPS, "README.md": """\
        ## Installation

        ```python setup.py install```

        ## Usage

        ```bash
        $ cd pkg

        # GDP dataset
        $ python train_gdp.py
        ```
        """})
    assert _found(root)[0] == ("python train_gdp.py", "readme", "pkg")


def test_a_placeholder_in_angle_brackets_is_dropped_with_its_option_not_read_as_a_redirection():
    """NOTE [placeholders]: PVCGAN_Torch's README `python Train.py -s <int>` left `-s` valueless."""
    found = commands("python Train.py -s <int>\npython main.py <config.yaml> --epochs 2 > log.txt\n"
                     "python eval.py < inputs.txt\n")
    assert [c.words for c in found] == [("python", "Train.py"), ("python", "main.py", "--epochs", "2"),
                                             ("python", "eval.py")]


def test_a_placeholder_in_square_brackets_is_dropped_too_but_not_a_list_value():
    """NOTE [placeholders]: CVVin23's README `python train_dis.py [MODEL] [RESUME] [DEVICE]` (the
    script's parser exits 2 on them); a bracketed value that is no name (`'[(160,224,160)]'`, `[0]`) stays."""
    found = commands("python train_dis.py [MODEL] [RESUME] [DEVICE] [BATCH_SIZE]\n"
                     "python train.py --res '[(160,224,160)]' --gpus [0] --size [input_size]\n")
    assert [c.words for c in found] == [("python", "train_dis.py"),
                                         ("python", "train.py", "--res", "[(160,224,160)]", "--gpus", "[0]")]


def test_a_pyproject_whose_tool_table_is_a_value_ends_no_search(tmp_path):
    """`tool = "x"` is valid TOML: the search for console scripts reads past it (no traceback), and
    the commands found elsewhere are still found."""
    root = write_sources(tmp_path, {"train.py": STEPS, "pyproject.toml": 'tool = "x"\n[project]\nname = "p"\n'})
    assert ("python train.py", "main-step", "") in _found(root)


def test_a_usage_slot_of_alternatives_is_read_as_its_first_choice():
    """NOTE [alternatives of a usage line]: `--features=[spect/mfcc/cqcc]` passed whole is refused."""
    found = commands("python model_main.py --track=[logical/physical] --features=[spect/mfcc/cqcc] --lr=5e-5\n"
                     "python train.py --mode <train|test> --data [a/b] x\n"
                     "python train_dis.py [MODEL]\nls data/[ab]/*.png\npython a.py --path=data/[x/y]/z\n")
    assert [c.words for c in found] == [
        ("python", "model_main.py", "--track=logical", "--features=spect", "--lr=5e-5"),
        ("python", "train.py", "--mode", "train", "--data", "a", "x"),
        ("python", "train_dis.py"),                       # one name: a placeholder, dropped
        ("ls", "data/[ab]/*.png"), ("python", "a.py", "--path=data/[x/y]/z")]   # not a slot of its own
    assert found[0].read_as == ("[logical/physical] as logical (its first choice)",
                                "[spect/mfcc/cqcc] as spect (its first choice)")


def test_a_slurm_script_behind_srun_with_python_options_and_a_parent_path_is_read(tmp_path):
    """NOTE [a cluster's launcher]: `srun python -u ../train.py` in scripts/train.sh (a SLURM batch script)."""
    root = write_sources(tmp_path, {
        "train.py": "import torch\nfrom util.misc import fit\nif __name__ == '__main__':\n    fit()\n",
        "util/__init__.py": "", "util/misc.py": STEPS.replace('if __name__ == "__main__":\n    main()\n', "")
        .replace("def main():", "def fit():"),
        "scripts/train.sh": "#!/bin/bash\n#SBATCH --gres=gpu:1\nsrun --ntasks=1 /opt/conda/bin/python -u \\\n"
                            "\t../train.py --lr 1e-4\n"})
    entries = find_entries(ProjectIndex(root))
    assert [(e.command, e.cwd, e.kind) for e in entries] == [
        ("/opt/conda/bin/python -u ../train.py --lr 1e-4", "scripts", "shell-script")]
    assert "util/misc.py:" in entries[0].why
    from opscan.targets.entry.launch import parse_command

    parsed = parse_command(["python", "-u", "-W", "ignore", "../train.py", "--lr", "1e-4"], "neuron")
    assert (parsed["script"], parsed["argv"]) == ("../train.py", ["--lr", "1e-4"])
