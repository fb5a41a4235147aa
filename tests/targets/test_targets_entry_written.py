"""Training commands as READMEs write them (opscan/targets/entry/): continuations the author meant
(NOTE [documentation continuations]), a shell script run with the README's arguments and the branch
they select (NOTE [a script invoked with its arguments], NOTE [branches the arguments select]), a
README one folder down (NOTE [a document's own folder]) and commands set aside by their options
(NOTE [commands set aside by their options]). Nothing of the project is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from opscan.index import ProjectIndex
from opscan.targets.entry import find_entries
from opscan.targets.entry.shell_branches import decide
from opscan.targets.entry.shell_words import commands
from tests.support.corpus import write_sources

STEPS = """\
import torch
MARKER = __import__("pathlib").Path(__file__).with_name("RAN")
MARKER.write_text("the script ran")
def main():
    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(1, 2)).sum().backward()
    optimizer.step()
if __name__ == "__main__":
    main()
"""


def _entries(root: Path):
    found = find_entries(ProjectIndex(root))
    assert not any(root.rglob("RAN"))   # read, never run
    return found


def test_a_continuation_followed_by_a_comment_continues_the_command(tmp_path):
    root = write_sources(tmp_path, {"train.py": STEPS, "README.md": """\
        ```shell
        python train.py \\
            --teacher_name wrn-28-4 \\        # the teacher network
            --dataset cifar100 \\             # train on CIFAR-100
            --tensorboard                     # log with tensorboard
        ```
        """})
    first = _entries(root)[0]
    assert first.command == "python train.py --teacher_name wrn-28-4 --dataset cifar100 --tensorboard"
    assert "line continuation" in first.why


def test_powershell_backtick_continuations_continue_the_command(tmp_path):
    root = write_sources(tmp_path, {"src/main.py": STEPS, "README.md": """\
        ```bash
        python src/main.py `
        --output_dir experiments `
        --name "SMPModel" `
        --epochs 300
        ```
        """})
    first = _entries(root)[0]
    assert first.command == "python src/main.py --output_dir experiments --name SMPModel --epochs 300"
    assert "PowerShell" in first.why


def test_a_comment_line_and_a_real_escape_are_left_as_the_shell_reads_them():
    # a `\` at the end of a comment line continues nothing; an escaped space inside a word stays one
    words = [c.words for c in commands("# python a.py \\   # note\npython b.py my\\ file\n")]
    assert words == [("python", "b.py", "my file")]


RUN_SH = """\
gpu_n=$1
DATASET=$2
EPOCHS=${3:-100}
if [[ "$gpu_n" == "cpu" ]]; then
    python main.py \\
        -dataset $DATASET \\
        -epoch $EPOCHS \\
        -device 'cpu'
else
    CUDA_VISIBLE_DEVICES=$gpu_n  python main.py \\
        -dataset $DATASET \\
        -epoch $EPOCHS
fi
exec /bin/bash
"""


def test_a_readme_running_a_shell_script_gives_its_arguments_and_the_branch_they_select(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "run.sh": RUN_SH, "README.md": """\
        ```
            # cpu
            bash run.sh cpu msl
            # gpu
            bash run.sh 0 msl 5
        ```
        """})
    found = [(e.command, e.kind, e.line) for e in _entries(root)]
    # the accelerator's command first; the CPU one set aside by its `-device cpu`; each ran one branch
    assert found[:2] == [("python main.py -dataset msl -epoch 5", "readme", 5),
                         ("python main.py -dataset msl -epoch 100 -device cpu", "readme", 3)]
    # read alone, the script's arguments are unknown: both branches, `$2` as written
    assert ("python main.py -dataset '$2' -epoch 100 -device cpu", "shell-script", 5) in found
    assert ("python main.py -dataset '$2' -epoch 100", "shell-script", 10) in found


def test_a_placeholder_argument_leaves_its_parameter_unknown(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "run.sh": RUN_SH, "README.md": """\
        ```
        bash run.sh <gpu_id> msl
        ```
        """})
    commands_found = [e.command for e in _entries(root) if e.kind == "readme"]
    # `$1` unknown: both branches; `$2` is msl, not shifted into `$1`'s place
    assert commands_found == ["python main.py -dataset msl -epoch 100",
                              "python main.py -dataset msl -epoch 100 -device cpu"]


def test_a_sourced_script_under_scripts_runs_from_where_the_readme_runs_it(tmp_path):
    root = write_sources(tmp_path, {"train.py": STEPS, "scripts/kd.sh": 'python3 train.py --kd_method kd "$@"\n',
                                    "README.md": "```shell\nsource scripts/kd.sh --epochs 2\n```\n"})
    first = _entries(root)[0]
    assert (first.command, first.kind, first.cwd) == ("python3 train.py --kd_method kd --epochs 2", "readme", "")
    assert "scripts/kd.sh:1" in first.why


@pytest.mark.parametrize(("test", "value"), [
    ('[[ "cpu" == "cpu" ]]', True), ("[ gpu = cpu ]", False), ("[ a != b ]", True), ('[ -z "" ]', True),
    ("[ -n x ]", True), ("! [ a = a ]", False), ("test a = a", True), ("[[ cuda0 == cuda* ]]", True),
    ('[ "$X" = cpu ]', None), ("[ -f data.txt ]", None), ("grep -q x y", None)])
def test_a_branch_is_decided_only_by_the_forms_it_can_read(test, value):
    assert decide(test) is value


def test_a_readme_one_folder_down_runs_its_commands_from_its_own_folder(tmp_path):
    root = write_sources(tmp_path, {"code/fbank/training/clean_100.py": STEPS, "code/README.md": """\
        # Training
        ```
        cd fbank/training/

        python clean_100.py # train with all clean data
        ```
        """, "copy/fbank/training/clean_100.py": STEPS})
    first = _entries(root)[0]
    assert (first.command, first.cwd) == ("python clean_100.py", "code/fbank/training")


def test_a_command_asking_for_another_job_ranks_after_the_training_one(tmp_path):
    root = write_sources(tmp_path, {"main.py": STEPS, "README.md": """\
        ## Testing
        ```bash
        python main.py --load_model best.pth --test_only testset --gpu -1
        ```
        ## Training
        ```bash
        python main.py --epochs 200 --test_path data/test.csv
        ```
        """})
    found = _entries(root)
    assert [e.command for e in found] == ["python main.py --epochs 200 --test_path data/test.csv",
                                               "python main.py --load_model best.pth --test_only testset --gpu -1"]
    assert "another job" in found[1].why


def test_a_required_positional_of_a_script_nothing_writes_a_command_for_is_filled_and_said(tmp_path):
    script = STEPS.replace("def main():", """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument('path', type=str, help='path of specified dataset')
parser.add_argument('steps', type=int)
parser.add_argument('extra', nargs='?')
parser.add_argument('-d', '--data', default='celeba', choices=['celeba', 'lsun'])
def main():""")
    (entry,) = _entries(write_sources(tmp_path, {"train.py": script}))
    assert entry.command == "python train.py path 1"   # `extra` may be left out; `--data` has its default
    assert "path (a placeholder: its own name, positional)" in entry.why


def test_capitalised_placeholders_take_a_config_file_of_the_project_or_are_left_out(tmp_path):
    root = write_sources(tmp_path, {"run.py": STEPS, "config/bert_only.json": "{}", "config/bert_hinge.json": "{}",
                                    "README.md": """\
        - Train: `python run.py -r -m CONFIG_FILE`
        ```
        python run.py --data_dir DATA_DIR --pattern TRAIN --split TEST --epochs 3 PATH
        ```
        """})
    found = {e.command: e.why for e in _entries(root)}
    # a value in capitals is kept; a placeholder is dropped with its option, or is a config file of the project
    assert "python run.py --pattern TRAIN --split TEST --epochs 3" in found
    assert "python run.py -r -m config/bert_hinge.json" in found
    assert "assumed" in found["python run.py -r -m config/bert_hinge.json"]


def test_a_capitalised_word_naming_a_file_of_the_project_is_its_value(tmp_path):
    root = write_sources(tmp_path, {"train.py": STEPS, "DATA_DIR/x.txt": "x",
                                    "README.md": "```\npython train.py DATA_DIR\n```\n"})
    assert _entries(root)[0].command == "python train.py DATA_DIR"


def test_a_config_override_list_keeps_its_capitalised_keys(tmp_path):
    # NOTE [capitalised placeholders]: yacs' KEY VALUE pairs; OUTPUT_DIR is a key, not a placeholder
    root = write_sources(tmp_path, {"tools/train.py": STEPS, "configs/base.yml": "x: 1\n", "exp/run_cuhk.sh": """\
        python3 tools/train.py --config_file='configs/base.yml' OUTPUT_DIR "/data/ckpt/cuhk03" OURS.ALPHA "8.0"
        """})
    first = _entries(root)[0]
    assert first.command == "python3 tools/train.py --config_file=configs/base.yml OUTPUT_DIR /data/ckpt/cuhk03 " \
        "OURS.ALPHA 8.0"
    assert "placeholder" not in first.why


def test_a_module_command_runs_from_the_folder_that_holds_its_package(tmp_path):
    # NOTE [a module run from the folder that holds its package]: `cd src` in an earlier block
    root = write_sources(tmp_path, {"src/main/__init__.py": "", "src/main/twotower.py": STEPS, "README.md": """\
        4. ```bash
           cd src
           mkdir data
           ```
        5. ```bash
           python -m main.twotower --batch-size 8
           ```
        """})
    first = _entries(root)[0]
    assert (first.command, first.cwd) == ("python -m main.twotower --batch-size 8", "src")


def test_a_test_script_stepping_through_a_shared_module_ranks_after_the_training_script(tmp_path):
    shared = STEPS.replace("def main():", "def fit():").split("if __name__")[0]   # a module, not a script
    runner = "from models.vae import fit\nif __name__ == '__main__':\n    fit()\n"
    trainer = "import pytorch_lightning as pl\nfrom models.vae import Model\ntrainer = pl.Trainer()\n" \
        "trainer.fit(Model())\n"   # the training script's evidence is a trainer's loop, not a step
    root = write_sources(tmp_path, {"models/__init__.py": "", "models/vae.py": shared,
                                    "test.py": runner, "train.py": trainer, "README.md": """\
        ## Evaluate
        ```bash
        python test.py --model_type beta_vae --checkpoint ckpt.pth
        ```
        ## Train
        ```bash
        python train.py --model_type beta_vae --epochs 50
        ```
        """})
    found = _entries(root)
    assert [e.command for e in found] == ["python train.py --model_type beta_vae --epochs 50",
                                               "python test.py --model_type beta_vae --checkpoint ckpt.pth"]
    assert "another job" in found[1].why


def test_a_help_command_ranks_after_the_training_command_written_after_it(tmp_path):
    # NOTE [commands set aside by their options]: `--help` prints the parser's help; `-h 64` is a value
    root = write_sources(tmp_path, {"train.py": STEPS, "other.py": STEPS, "README.md": """\
        ```
        python train.py --help
        ```
        ```
        python train.py --epochs 3
        ```
        ```
        python other.py -h 64
        ```
        """})
    found = _entries(root)
    assert [e.command for e in found] == ["python train.py --epochs 3", "python other.py -h 64",
                                               "python train.py --help"]
    assert "help" in found[2].why and "help" not in found[1].why

def test_a_config_placeholder_leaves_the_scripts_own_default_config_and_reads_a_joined_option(tmp_path):
    # NOTE [capitalised placeholders]: `--cfg_file=CONFIG_FILE` (ObjectReassembly's README); the
    # script's default names a file of the project, the config folder's first file is a base others extend
    script = STEPS.replace("def main():", "import argparse\n"
                           "parser = argparse.ArgumentParser()\n"
                           "parser.add_argument('--cfg_file', default='config/extractor/ours.yml')\n"
                           "parser.add_argument('--data', default='missing/data.yml')\n"
                           "def main():")
    root = write_sources(tmp_path, {"train.py": script, "config/base.yml": "a: 1\n",
                                    "config/extractor/ours.yml": "a: 2\n", "README.md": """\
        ```
        python train.py --cfg_file=CONFIG_FILE
        ```
        """})
    first = _entries(root)[0]
    assert first.command == "python train.py"
    assert "config/extractor/ours.yml" in first.why and "assumed" in first.why


@pytest.mark.parametrize("readme, command", [
    # a default that names no file of the project: the config folder's first file, joined to its option
    ("python train.py --data=CONFIG_FILE", "python train.py --data=config/base.yml"),
    # an option with no default at all: the same
    ("python train.py --other CONFIG_FILE", "python train.py --other config/base.yml"),
    # a joined placeholder that is no config: dropped with its option
    ("python train.py --out=DATA_DIR --epochs 3", "python train.py --epochs 3"),
    # a joined value in capitals that is no placeholder stays
    ("python train.py --split=TEST", "python train.py --split=TEST"),
])
def test_a_config_placeholder_without_a_default_of_the_script_takes_the_first_config_file(tmp_path, readme, command):
    script = STEPS.replace("def main():", "import argparse\n"
                           "parser = argparse.ArgumentParser()\n"
                           "parser.add_argument('--data', default='missing/data.yml')\n"
                           "parser.add_argument('--other')\n"
                           "def main():")
    root = write_sources(tmp_path, {"train.py": script, "config/base.yml": "a: 1\n",
                                    "README.md": f"```\n{readme}\n```\n"})
    assert _entries(root)[0].command == command


def test_a_readme_line_that_is_one_emphasised_command_is_read_and_prose_is_not(tmp_path):
    root = write_sources(tmp_path, {"code/ReadMe.md": "- Train the model:\n\n*python train.py --name new*\n\n"
                                                      "We *python train.py fast* in prose.\n",
                                    "code/train.py": STEPS, "README.md": "# A model\n"})
    found = _entries(root)
    assert [(e.command, e.cwd) for e in found] == [("python train.py --name new", "code")]


VENDORED_DEMO = """\
import torch
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.Adam(model.parameters())
for _ in range(3):
    optimizer.zero_grad()
    model(torch.randn(1, 2)).sum().backward()
    optimizer.step()
"""


@pytest.mark.parametrize("folder", ["models/pytorch-ssim-master", "third_party/ssim", "libs/ssim"])
def test_a_script_of_a_copy_of_another_project_ranks_after_the_projects_own(tmp_path, folder):
    files = {f"{folder}/max_ssim.py": VENDORED_DEMO, f"{folder}/README.md": "# ssim\n",
             "README.md": "Train:\n\n*python train.py*\n", "train.py": STEPS.replace("optimizer.step()", "pass"),
             "models/train_loop.py": "def optimize(o):\n    o.step()\n"}
    if folder.startswith("libs"):   # a folder with packaging and a licence of its own
        files.update({f"{folder}/setup.py": "", f"{folder}/LICENSE.txt": "MIT\n"})
    found = _entries(write_sources(tmp_path, files))
    assert [e.command for e in found] == ["python train.py", f"python {folder}/max_ssim.py"]
    assert "a copy of another project" in found[1].why and "copy" not in found[0].why


def test_a_subfolder_with_packaging_but_no_licence_is_the_projects_own(tmp_path):
    files = {"libs/ssim/max_ssim.py": VENDORED_DEMO, "libs/ssim/setup.py": "",
             "README.md": "Train:\n\n*python train.py*\n", "train.py": STEPS.replace("optimizer.step()", "pass")}
    found = _entries(write_sources(tmp_path, files))
    assert [e.command for e in found][0] == "python libs/ssim/max_ssim.py"   # steps an optimizer: first
