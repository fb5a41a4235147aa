"""The project's training command, found by reading it (never by running it).

`find_entries(index)` reads the README's and docs' shell blocks, shell scripts, Makefile recipes,
[project.scripts] and the scripts that step an optimizer under `__main__`, keeps the commands that
launch the project's training code, and ranks them (NOTE [training command ranking] in ranking.py);
`given_entry(command)` is `--entry`'s. `launch.parse_command` reads a command as `opscan run` does.
Module map: shell_words (shell text -> simple commands), sources (where commands are written),
training (whether a file trains: NOTE [what trains]), ranking (the entries, best first), launch and
accelerate_launch (a command -> the script, its arguments and its launcher's environment).
Stdlib only.
"""

from __future__ import annotations

from opscan.targets.entry.ranking import find_entries, given_entry

__all__ = ["find_entries", "given_entry"]
