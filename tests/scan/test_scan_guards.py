"""Short-circuit guards (NOTE [short-circuit guards] in opscan/scan/string_contexts.py): what an
`and`/`or` after a device check, a conditional expression, or an early return keeps to the checked
device is reported guarded (it never blocks); what runs on every device is not."""

from __future__ import annotations

import textwrap

from opscan.scan import load_rules, scan_memory

RULES = load_rules()


def guarded(source: str) -> list[tuple[int, str, bool]]:
    got = scan_memory({"m.py": textwrap.dedent(source)}, RULES).findings
    return [(f.location.line, f.subject, f.guarded) for f in got if f.subject == "torch.cuda.get_device_name"
            or f.subject == "torch.cuda.is_bf16_supported"]


def test_what_follows_a_device_check_in_and_or_is_guarded():
    assert guarded("""\
        import torch
        a = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        b = "float16" if torch.cuda.is_available() and not torch.cuda.is_bf16_supported() else "bfloat16"
        c = not torch.cuda.is_available() or torch.cuda.is_bf16_supported()
        d = torch.cuda.is_bf16_supported() and torch.cuda.is_available()
        e = flag and torch.cuda.is_bf16_supported()
        """) == [(2, "torch.cuda.is_bf16_supported", True), (3, "torch.cuda.is_bf16_supported", True),
                 (4, "torch.cuda.is_bf16_supported", True), (5, "torch.cuda.is_bf16_supported", False),
                 (6, "torch.cuda.is_bf16_supported", False)]


def test_an_early_return_on_a_missing_device_guards_the_rest_of_the_block():
    assert guarded("""\
        import torch

        def name():
            if not torch.cuda.is_available():
                return "cpu"
            return torch.cuda.get_device_name()

        def names():
            for i in range(torch.accelerator.device_count()):
                if torch.cuda.device_count() == 0:
                    continue
                print(torch.cuda.get_device_name(i))
            return torch.cuda.get_device_name()

        def other_path():
            if torch.cuda.is_available():
                return 1
            return torch.cuda.get_device_name()

        def refuses():
            if not torch.cuda.is_available():
                raise SystemExit("needs a GPU")
            return torch.cuda.get_device_name()
        """) == [(6, "torch.cuda.get_device_name", True), (12, "torch.cuda.get_device_name", True),
                 (13, "torch.cuda.get_device_name", False), (18, "torch.cuda.get_device_name", False),
                 (23, "torch.cuda.get_device_name", False)]


def test_a_guarded_error_does_not_block(tmp_path, capsys):
    from opscan.cli import main

    (tmp_path / "m.py").write_text("import torch\nok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()\n")
    assert main(["scan", str(tmp_path)]) == 0
    assert "no blockers" in capsys.readouterr().out
