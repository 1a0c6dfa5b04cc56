"""The learning criteria of ``benchmarks/learning.py``: the committed results passed every
criterion and were made by the library's present code.

The whole training runs take minutes, so the suite does not repeat them; instead a change to
any source file the published run imported (its SHA-256 is in the results file) fails
:func:`test_published_run_is_of_the_present_code` until the script is published again. The
script itself runs end to end at test sizes in ``test_provenance.py``'s smoke runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks import learning

PUBLISH = "python benchmarks/learning.py --publish"


def _published() -> dict:
    assert learning.PUBLISHED.is_file(), f"no published learning criteria; run {PUBLISH}"
    return json.loads(learning.PUBLISHED.read_text())


def test_published_run_passed_every_criterion() -> None:
    data = _published()
    assert data["config"]["mode"] == "full"
    assert [r["name"] for r in data["results"]["checks"]] == list(learning.CHECKS), \
        f"the published run is not of today's checks; run {PUBLISH}"
    failed = {r["name"]: [c["condition"] for c in r["conditions"] if not c["passed"]]
              for r in data["results"]["checks"] if not r["passed"]}
    assert not failed, f"learning criteria failed in the published run: {failed}"
    assert data["summary"]["learning_all_passed"] is True


def test_published_run_is_of_the_present_code() -> None:
    data = _published()
    sources = data["results"]["sources"]
    # the run saw the learners it judges (and this script)
    for module in ("benchmarks/learning.py", "jaxrl_pim/rl/ppo.py", "jaxrl_pim/rl/dqn.py",
                   "jaxrl_pim/actorq/single.py", "jaxrl_pim/marl/trainer.py",
                   "jaxrl_pim/studies/tasks.py", "jaxrl_pim/quant/__init__.py"):
        assert module in sources, module
    changed = learning.stale_sources(data)
    assert not changed, (f"{len(changed)} source file(s) changed since the published learning "
                         f"run ({', '.join(changed[:8])}): run {PUBLISH} (a few minutes) and "
                         "commit its results")


def test_stale_sources_names_a_changed_and_a_deleted_file(tmp_path: Path) -> None:
    for rel in ("jaxrl_pim/rl/dqn.py", "jaxrl_pim/rl/ppo.py", "jaxrl_pim/envs/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(learning.ROOT / rel, tmp_path / rel)
    recorded = learning.source_hashes(["jaxrl_pim/rl/dqn.py", "jaxrl_pim/rl/ppo.py",
                                       "jaxrl_pim/envs/__init__.py"], tmp_path)
    data = {"results": {"sources": recorded}}
    assert learning.stale_sources(data, tmp_path) == []
    with (tmp_path / "jaxrl_pim/rl/dqn.py").open("a") as f:
        f.write("\n# an edit\n")
    (tmp_path / "jaxrl_pim/envs/__init__.py").unlink()
    assert learning.stale_sources(data, tmp_path) == ["jaxrl_pim/rl/dqn.py",
                                                      "jaxrl_pim/envs/__init__.py"]


def test_summary_counts_failures_and_the_worst_margin() -> None:
    def cond(value, threshold, passed):
        margin = None if threshold is None else (value - threshold) / abs(threshold)
        return {"condition": "c", "value": value, "threshold": threshold, "margin": margin,
                "passed": passed}

    rows = [{"name": "a", "passed": True, "conditions": [cond(150.0, 100.0, True)]},
            {"name": "b", "passed": False, "conditions": [cond(-210.0, -200.0, False),
                                                          cond(None, None, True)]}]
    summary = learning.summarize({"config": {"mode": "full"}, "results": {"checks": rows}})
    assert summary["learning_checks_passed"] == 1 and summary["learning_checks_total"] == 2
    assert summary["learning_all_passed"] is False
    assert summary["learning_passed_a"] is True and summary["learning_passed_b"] is False
    assert summary["learning_worst_margin"] == -0.05
    assert summary["learning_worst_margin_check"] == "b"
