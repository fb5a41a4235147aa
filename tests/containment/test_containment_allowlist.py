"""The child's file allow-list (opscan/containment/allowlist.py), its cgroup v2 delegation
(cgroup.py) and its seccomp filter (seccomp.py), checked without starting a child: on trees made
here, a Host of the test's own, a fake cgroup folder. The real children are in
tests/reliability/test_reliability_escapes.py."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from opscan.containment import Policy, child_environment
from opscan.containment.allowlist import OVERLAY, RO, RW, Host, generated_files, make_plan, named_paths
from opscan.containment.cgroup import join, mount_point, own_cgroup
from opscan.containment.limits import kernel_at_least
from opscan.containment.seccomp import program


def _host(tmp_path: Path, home: Path, environ: dict[str, str] | None = None, sys_path=()) -> Host:
    env = {"HOME": str(home), "PATH": f"/usr/bin:/bin:{home / 'bin'}", **(environ or {})}
    return Host(environ=env, cwd=str(tmp_path / "work" / "repo"), sys_path=tuple(sys_path), prefixes=(),
                executable="/usr/bin/true", homes=(str(home),))


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    home, repo = tmp_path / "home", tmp_path / "work" / "repo"
    for folder in (home / ".ssh", home / "lib", home / "bin", repo / ".git", tmp_path / "work" / "other",
                   tmp_path / "data" / "hf"):
        folder.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("key")
    (home / ".cache").symlink_to(tmp_path / "data")                 # a dotfiles home: ~/.cache is a link
    (tmp_path / "data" / "hf" / "token").write_text("hf_x")
    (tmp_path / "work" / ".env").write_text("X=1")
    return home, repo


def test_neither_the_home_nor_the_folder_above_the_project_is_ever_a_place(tmp_path):
    home, repo = _tree(tmp_path)
    environ = {"PYTHONPATH": os.pathsep.join([str(home), "..", str(tmp_path / "work"), str(home / "lib"),
                                              str(home / ".ssh"), "/", "/etc", "/home"])}
    plan = make_plan(Policy(overlays=(str(repo),)), str(tmp_path / "scratch"), {}, _host(tmp_path, home, environ))
    places = set(plan.places)
    assert plan.places[str(repo)] == OVERLAY and plan.places[str(home / "lib")] == RO
    for never in (home, tmp_path / "work", home / ".ssh", home / "bin", Path("/"), Path("/etc"), Path("/home")):
        assert str(never) not in places, never
    assert {str(home), str(tmp_path / "work"), str(home / ".ssh")} <= set(plan.refused)
    assert not any(place.startswith(str(home / ".ssh")) for place in places)
    assert str(repo / ".git") in plan.hidden                          # the checkout's .git
    assert "/etc/passwd" not in places and "/etc/shadow" not in places and "/etc/pip.conf" not in places


def test_a_symlinked_home_entry_becomes_a_link_and_its_real_folder(tmp_path):
    home, repo = _tree(tmp_path)
    env = child_environment({"HOME": str(home)}, Policy(), str(tmp_path / "scratch"))
    env["HF_HOME"] = str(home / ".cache" / "hf")
    plan = make_plan(Policy(overlays=(str(repo),)), str(tmp_path / "scratch"), env, _host(tmp_path, home))
    assert plan.places[str(tmp_path / "data" / "hf")] == RO           # mounted at its real path ...
    assert plan.links[str(home / ".cache")] == str(tmp_path / "data")  # ... reached through the same link
    assert str(tmp_path / "data" / "hf" / "token") in plan.hidden      # without the login token


def test_secret_places_are_hidden_inside_a_given_folder_even_through_a_link(tmp_path):
    """A project that is the home folder itself: its secret places are hidden; a ~/.aws that links
    out of every place needs nothing (and breaks nothing)."""
    home, _ = _tree(tmp_path)
    (tmp_path / "dotfiles" / "aws").mkdir(parents=True)
    (home / ".aws").symlink_to(tmp_path / "dotfiles" / "aws")
    environ = {"PYTHONPATH": str(tmp_path / "dotfiles" / "aws")}   # a variable naming the link's target
    plan = make_plan(Policy(overlays=(str(home),)), str(tmp_path / "scratch"), {}, _host(tmp_path, home, environ))
    assert plan.places[str(home)] == OVERLAY
    assert str(home / ".ssh") in plan.hidden
    assert not any(h.startswith(str(tmp_path / "dotfiles")) for h in plan.hidden)
    assert str(tmp_path / "dotfiles" / "aws") not in plan.places


def test_writable_and_readable_places_keep_their_mode(tmp_path):
    home, repo = _tree(tmp_path)
    out, data = tmp_path / "work" / "repo" / "runs", tmp_path / "data"
    out.mkdir()
    plan = make_plan(Policy(overlays=(str(repo),), writable=(str(out),), readable=(str(data),)),
                     str(tmp_path / "scratch"), {}, _host(tmp_path, home))
    assert (plan.places[str(out)], plan.places[str(data)]) == (RW, RO)


def test_what_the_user_names_is_readable_but_never_a_home_folder(tmp_path):
    home, repo = _tree(tmp_path)
    (repo / "train.py").write_text("")
    (home / "model.py").write_text("")
    (tmp_path / "data" / "hf" / "config.json").write_text("{}")
    named = named_paths(["python", "train.py", "--data", str(tmp_path / "data"), f"{home}/model.py:build",
                         f"hf:{tmp_path / 'data' / 'hf'}", str(home)], str(repo), {"HOME": str(home)})
    assert named == (str(repo), str(tmp_path / "data"), str(home / "model.py"), str(tmp_path / "data" / "hf"))


def test_the_childs_own_etc_files_name_its_user_and_nothing_of_the_host(tmp_path):
    files = generated_files(4321, 4321, str(tmp_path / "home"))
    assert "x:4321:4321:" in files["passwd"] and str(tmp_path / "home") in files["passwd"]
    assert set(files) == {"passwd", "group", "hosts", "nsswitch.conf"}
    assert len(files["passwd"].splitlines()) == 3


def _cgroups(tmp_path: Path, enabled: str) -> tuple[Path, str]:
    fs = tmp_path / "cgroup"
    own = fs / "user.slice" / "opscan.scope"
    own.mkdir(parents=True)
    (fs / "user.slice" / "cgroup.subtree_control").write_text(enabled)
    (fs / "user.slice" / "cgroup.procs").write_text("")
    return fs, "/user.slice/opscan.scope"


def test_a_delegated_cgroup_gets_a_sibling_with_the_trees_limits(tmp_path):
    fs, own = _cgroups(tmp_path, "cpu memory pids\n")
    uid = os.getuid() or 4321   # as root: the folder is given to another user, as systemd's user manager has it
    if os.getuid() == 0:
        os.chown(fs / "user.slice", uid, uid)
    group = join("opscan-scratch-x", 800 << 20, 100, fs=str(fs), own=own, uid=uid)
    assert group == str(fs / "user.slice" / "opscan-scratch-x")
    values = {name: (Path(group) / name).read_text() for name in ("memory.max", "pids.max", "cgroup.procs")}
    assert values == {"memory.max": str(800 << 20), "pids.max": "100", "cgroup.procs": "0"}


def test_a_cgroup_tree_that_is_not_delegated_is_left_alone(tmp_path):
    fs, own = _cgroups(tmp_path, "cpu\n")                      # no memory controller for its children
    assert join("opscan-scratch-x", 800 << 20, 100, fs=str(fs), own=own, uid=os.getuid()) is None
    fs, own = _cgroups(tmp_path / "other", "memory pids\n")     # writable, but someone else's
    assert join("opscan-scratch-x", 800 << 20, 100, fs=str(fs), own=own, uid=4321 + 1) is None
    assert join("opscan-scratch-x", 800 << 20, 100, fs=str(fs), own=own, uid=0) is None   # root: no delegate mark
    assert not (fs / "user.slice" / "opscan-scratch-x").exists()
    assert join("opscan-scratch-x", None, 100, fs=str(fs), own="/") is None


def test_the_cgroup2_mount_and_the_own_cgroup_are_read_from_proc(tmp_path):
    (tmp_path / "mountinfo").write_text(
        "30 1 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "31 1 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n")
    (tmp_path / "cgroup").write_text("4:memory:/x\n0::/user.slice/opscan.scope\n")
    assert mount_point(str(tmp_path / "mountinfo")) == "/sys/fs/cgroup/unified"
    assert own_cgroup(str(tmp_path / "cgroup")) == "/user.slice/opscan.scope"


def test_the_seccomp_program_ends_every_path_on_a_return():
    for machine in ("x86_64", "aarch64"):
        code = program(machine)
        instructions = [struct.unpack("=HBBI", code[i:i + 8]) for i in range(0, len(code), 8)]
        for index, (op, jt, jf, _) in enumerate(instructions):
            if op & 0x07 == 0x05:   # a jump: both targets inside the program
                assert index + 1 + max(jt, jf) < len(instructions)
        assert instructions[-1][0] == instructions[-2][0] == 0x06   # allow, then deny
        assert instructions[-1][3] == 0x00050000 | 1                 # EPERM


def test_kernel_versions_are_compared_as_numbers():
    assert kernel_at_least(6, 14, "6.18.44-fc-v1300") and kernel_at_least(5, 14, "5.14.0-362.el9.x86_64")
    assert not kernel_at_least(5, 14, "5.4.0-1103-aws") and not kernel_at_least(6, 14, "6.8.0-1")
