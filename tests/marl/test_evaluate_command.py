"""`jaxrl-pim marl --env jaxmarl:...` trains and `jaxrl-pim marl evaluate` reads the run back.

One tiny checkpointed run on JaxMARL's spread through the command (the ``jaxmarl_run`` fixture
of ``conftest.py``, shared with ``test_policies.py``); ``evaluate`` must print the mean return
per team with its standard error equal to ``marl.evaluate`` on the same checkpoint, and write
a GIF; bad input (no folder, an empty folder, a non-GIF path, an unsupported JaxMARL env) is
one line with exit status 2; ``jaxrl-pim marl`` without ``evaluate`` keeps training.
"""

from __future__ import annotations

import json
import sys

import jax
import numpy as np
import pytest

from jaxrl_pim.cli import main
from jaxrl_pim.marl import evaluate, load_policies
from tests.support.marl import JAXMARL_MARKS

pytestmark = JAXMARL_MARKS


def test_train_then_evaluate_and_render(jaxmarl_run, tmp_path, capsys):
    ckpt = jaxmarl_run.checkpoint
    assert jaxmarl_run.status == 0
    assert "marl maddpg jaxmarl:MPE_simple_spread_v3 agents=3: episodes 0->3" in jaxmarl_run.out
    assert json.loads(jaxmarl_run.report.read_text())["results"]["teams"] == ["agent"]

    gif, ev = tmp_path / "spread.gif", tmp_path / "eval.json"
    assert main(["marl", "evaluate", "--checkpoint", str(ckpt), "--episodes", "6",
                 "--seed", "3", "--render", str(gif), "--json", str(ev)]) == 0
    out = capsys.readouterr().out
    pol = load_policies(ckpt)
    want = evaluate(pol.config, pol.params, jax.random.PRNGKey(3), 6)[:, 0]
    se = want.std(ddof=1) / np.sqrt(6)
    assert (f"greedy policy, 6 episodes, mean return per team (+- standard error): "
            f"agent {want.mean():.2f} +- {se:.2f}") in out
    np.testing.assert_allclose(np.asarray(json.loads(ev.read_text())["results"]["returns"]),
                               want[:, None], rtol=1e-6)
    assert gif.read_bytes()[:6] == b"GIF89a"


@pytest.mark.parametrize("argv, message", [
    (["marl", "evaluate", "--checkpoint", "{tmp}/missing"], "is not a folder"),
    (["marl", "evaluate", "--checkpoint", "{tmp}"], "holds no checkpoint"),
    (["marl", "evaluate", "--checkpoint", "{tmp}", "--render", "x.png"], "writes a GIF"),
    (["marl", "--env", "jaxmarl:SMAX"], "is not supported; JaxMARL environments"),
    (["marl", "--env", "jaxmarl:MPE_simple_spread_v3", "--agents", "4"], "does not apply"),
])
def test_bad_input_is_one_line(argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_missing_jaxmarl_names_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jaxmarl", None)  # `import jaxmarl` now fails
    assert main(["marl", "--env", "jaxmarl:MPE_simple_spread_v3", "--episodes", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'jaxrl-pim[jaxmarl]'" in err[0], err
