"""The commands' persistent compilation cache: where it is, how it is turned off, and that the
same command again reads its training program back instead of compiling it."""

from __future__ import annotations

import logging
import os

import jax

from jaxrl_pim.cli import main
from jaxrl_pim.xla_env import (
    CACHE_MIN_COMPILE_S,
    JAX_CACHE_DIR,
    JAX_CACHE_ENABLED,
    JAX_CACHE_MIN_COMPILE_S,
    compile_cache_dir,
    use_compile_cache,
)


def test_the_cache_folder_and_the_switch():
    home = os.path.expanduser("~")
    assert compile_cache_dir({}) == os.path.join(home, ".cache", "jaxrl_pim", "xla")
    assert compile_cache_dir({"XDG_CACHE_HOME": "/c"}) == "/c/jaxrl_pim/xla"
    assert compile_cache_dir({"XDG_CACHE_HOME": "/c", JAX_CACHE_DIR: "/mine"}) == "/mine"
    for off in ("off", "OFF", "0", "false", "no"):
        assert compile_cache_dir({"JAXRL_PIM_COMPILE_CACHE": off, JAX_CACHE_DIR: "/m"}) is None
    # what a command sets for jax and the processes it starts; the user's threshold is kept
    env = {"XDG_CACHE_HOME": "/c"}
    assert use_compile_cache(env) == "/c/jaxrl_pim/xla"
    assert env[JAX_CACHE_DIR] == "/c/jaxrl_pim/xla"
    assert env[JAX_CACHE_MIN_COMPILE_S] == CACHE_MIN_COMPILE_S
    env = {JAX_CACHE_DIR: "/m", JAX_CACHE_MIN_COMPILE_S: "2"}
    assert use_compile_cache(env) == "/m" and env[JAX_CACHE_MIN_COMPILE_S] == "2"
    env = {"JAXRL_PIM_COMPILE_CACHE": "off"}
    assert use_compile_cache(env) is None and env == {"JAXRL_PIM_COMPILE_CACHE": "off",
                                                      JAX_CACHE_ENABLED: "false"}


#: The smallest MARL run (2 spread agents, 1 env, 1 episode, no update round).
TINY = ["marl", "--agents", "2", "--num-envs", "1", "--capacity", "32", "--batch-size", "8",
        "--learning-starts", "16", "--episodes", "1", "--no-progress", "--no-estimate"]


def test_the_same_command_again_reads_its_training_program_back(caplog, capsys, monkeypatch):
    # the suite's cache folder (tests/conftest.py), every program written (the threshold the
    # command reads from jax's variable); the in-memory caches emptied between the runs, as a
    # new process starts
    from jaxrl_pim.marl import trainer

    assert os.environ.get(JAX_CACHE_DIR)  # the suite's, which the command keeps
    threshold = jax.config.jax_persistent_cache_min_compile_time_secs
    monkeypatch.setenv(JAX_CACHE_MIN_COMPILE_S, "0")
    caplog.set_level(logging.DEBUG, logger="jax._src.compiler")
    try:
        assert main(TINY) == 0
        jax.clear_caches()
        trainer._PROGRAMS.clear()
        caplog.clear()
        assert main(TINY) == 0
    finally:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", threshold)
    capsys.readouterr()
    text = caplog.text
    assert "cache hit for 'jit_train_from'" in text, text[-2000:]
    assert "MISS for 'jit_train_from'" not in text
    assert "uses host callbacks" not in text  # nothing kept the program out of the cache

