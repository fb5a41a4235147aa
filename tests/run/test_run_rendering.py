"""An RL environment's rendering with no screen (NOTE [rendering with no screen] in
opscan/trace/run/rendering.py): a library environment's `render` that raises for want of pygame or a
display answers None and is named; any other error, and a project's own environment, as they are."""

from __future__ import annotations

import sys
import textwrap

import pytest

from opscan.trace.run.stand_in_hooks import installed
from opscan.trace.run.stand_ins import StandIns
from opscan.trace.sources import SourceFinder

# a gym-like library: `make` returns a wrapper of the environment, whose render imports pygame
_LIBRARY = """\
class DependencyNotInstalled(Exception):
    pass
class Env:
    render_mode = None
    def render(self):
        raise NotImplementedError
class Wrapper(Env):
    def __init__(self, env):
        self.env = env
    @property
    def unwrapped(self):
        return self.env.unwrapped if isinstance(self.env, Wrapper) else self.env
    def reset(self):
        return self.env.reset()
    def render(self):
        return self.env.render()
class CartPole(Env):
    def __init__(self, render_mode=None):
        self.render_mode = render_mode
    def reset(self):
        if self.render_mode == "human":
            self.render()
        return [0.0, 0.0, 0.0, 0.0]
    def render(self):
        try:
            import pygame_not_installed_here
        except ImportError:
            raise DependencyNotInstalled("pygame is not installed, run `pip install gym[classic_control]`")
class Broken(Env):
    def render(self):
        raise ValueError("a bug of the environment")
def make(name, render_mode=None):
    return Wrapper(CartPole(render_mode) if name == "CartPole-v1" else Broken())
"""


@pytest.fixture()
def library(tmp_path, monkeypatch):
    """The gym-like library, installed outside the project; the project is tmp_path/project."""
    (tmp_path / "site" / "gym").mkdir(parents=True)
    (tmp_path / "site" / "gym" / "__init__.py").write_text(_LIBRARY, encoding="utf-8")
    (tmp_path / "project").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "gym", raising=False)
    yield tmp_path / "project"
    sys.modules.pop("gym", None)


def test_a_library_environment_renders_nothing_when_pygame_is_absent(library):
    made = StandIns(str(library), SourceFinder(str(library)))
    with installed(made):
        import gym

        env = gym.make("CartPole-v1")
        assert env.render() is None
        human = gym.make("CartPole-v1", render_mode="human")
        assert human.reset() == [0.0, 0.0, 0.0, 0.0]   # reset renders in human mode
        with pytest.raises(ValueError, match="a bug"):   # not a missing screen: raised as it is
            gym.make("Broken-v0").render()
    assert [(r.kind, r.subject) for r in made.replaced] == [("rendering", "gym: CartPole.render")]
    with pytest.raises(gym.DependencyNotInstalled):   # put back after the run
        gym.CartPole().render()


def test_a_projects_own_environment_and_a_run_without_stand_ins_are_left_alone(library, monkeypatch):
    project_env = library / "project_env.py"
    project_env.write_text(textwrap.dedent("""\
        import gym
        class Mine(gym.Env):
            def render(self):
                raise gym.DependencyNotInstalled("pygame")
        def make_mine():
            return gym.Wrapper(Mine())
        """), encoding="utf-8")
    made = StandIns(str(library), SourceFinder(str(library)))
    monkeypatch.syspath_prepend(str(library))
    try:
        with installed(made):
            import gym
            import project_env

            with pytest.raises(gym.DependencyNotInstalled):   # the project's own class: as it is
                project_env.make_mine().render()
    finally:
        sys.modules.pop("project_env", None)
    assert made.replaced == []
    with installed(None):   # `opscan run`: no stand-ins
        import gym

        with pytest.raises(gym.DependencyNotInstalled):
            gym.make("CartPole-v1").render()


@pytest.mark.parametrize("library_name", ["gym", "gymnasium"])
def test_the_real_library_classic_control_renders_nothing_without_pygame(tmp_path, library_name):
    real = pytest.importorskip(library_name)
    try:
        import pygame  # noqa: F401
        pytest.skip("pygame is installed: the missing-dependency case cannot happen here")
    except ImportError:
        pass
    made = StandIns(str(tmp_path), SourceFinder(str(tmp_path)))
    with installed(made):
        env = real.make("CartPole-v1", render_mode="rgb_array")
        env.reset(seed=0)
        assert env.render() is None
    assert [r.kind for r in made.replaced] == ["rendering"]
