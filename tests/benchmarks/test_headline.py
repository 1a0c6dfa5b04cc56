"""The headline table (``benchmarks/headline.py``): worst and median over variants computed
from a results file (never the best), the opponent's version read from the file, losses
named as losses, missing files counted as not measured, and the table first on the page."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import headline, make_docs

ROOT = Path(__file__).resolve().parents[2]


def _results(root: Path, rel: str, data: dict) -> None:
    path = root / "benchmarks" / "results" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_rows_give_worst_and_median_and_name_losses(tmp_path: Path, monkeypatch) -> None:
    comps = (
        headline.Comparison("cpu/a.json", "w", "lib", "NumPy", "config.v", key="by_n",
                            variant="{} agents"),
        headline.Comparison("cpu/b.json", "w", "lib", "Numba", "system.packages.numba",
                            worst_key="lo", median_key="mid", worst_variant_key="lo_name"),
        headline.Comparison("h200/c.json", "w", "lib", "X", "config.v", key="r"),
    )
    monkeypatch.setattr(headline, "COMPARISONS", comps)
    _results(tmp_path, "cpu/a.json", {"config": {"v": "2.4"},
                                      "summary": {"by_n": {"3": 0.5, "6": 2.0, "12": 4.0}}})
    _results(tmp_path, "cpu/b.json", {"system": {"packages": {"numba": "0.68"}},
                                      "summary": {"lo": 1.25, "mid": 3.0, "lo_name": "Q",
                                                  "cpu_ratio_by_variant": {"Q": 1, "S": 2}}})
    rows, missing = headline.headline_rows(tmp_path)
    assert [m.file for m in missing] == ["h200/c.json"]
    a, b = rows
    assert (a["worst"], a["median"], a["worst_variant"], a["variants"]) == (0.5, 2.0, "3", 3)
    assert (b["worst"], b["median"], b["version"], b["variants"]) == (1.25, 3.0, "0.68", 2)
    text = headline.headline_table(tmp_path, tmp_path / "docs" / "benchmarks.md")
    lines = text.splitlines()
    assert "| NumPy 2.4 | 0.500x (3 agents) | 2.00x | 3 | slower at some variants |" in lines[2]
    assert "| Numba 0.68 | 1.25x (Q) | 3.00x | 2 | faster at every variant |" in lines[3]
    assert "(../benchmarks/results/cpu/a.json)" in lines[2]
    assert "1 comparison(s) have no results file yet and are not measured" in text


def test_a_reduced_size_file_stands_in_and_says_so(tmp_path: Path, monkeypatch) -> None:
    comps = (headline.Comparison("cpu/e.json", "run", "lib", "Opp", "config.v", key="r",
                                 fallback="cpu/e_quick.json"),
             headline.Comparison("cpu/f.json", "run", "lib", "Opp", "config.v", key="r",
                                 fallback="cpu/f_quick.json"))
    monkeypatch.setattr(headline, "COMPARISONS", comps)
    _results(tmp_path, "cpu/e_quick.json", {
        "config": {"v": "1.0", "mode": "quick",
                   "sizes": {"agents": [3], "measured_episodes": 100, "seeds": 4, "x": 1}},
        "summary": {"r": 0.25}})
    rows, missing = headline.headline_rows(tmp_path)
    assert [m.file for m in missing] == ["cpu/f.json"]  # neither file: not measured
    assert rows[0]["path"].name == "e_quick.json" and rows[0]["worst"] == 0.25
    line = headline.headline_table(tmp_path, tmp_path / "docs" / "b.md").splitlines()[2]
    assert line.startswith("| run (--quick run: agents 3; measured episodes 100; seeds 4) |")
    assert "| 0.250x |" in line and "[e_quick.json](../benchmarks/results/cpu/e_quick.json)" in line
    # the full-size file, once measured, replaces it
    _results(tmp_path, "cpu/e.json", {"config": {"v": "1.0"}, "summary": {"r": 2.0}})
    rows, _ = headline.headline_rows(tmp_path)
    assert rows[0]["path"].name == "e.json" and rows[0]["sizes"] is None


def test_three_significant_digits() -> None:
    assert [headline.sig3(x) for x in (0.38215, 21.659, 1050.1, 2.0374, 404.13)] == [
        "0.382", "21.7", "1,050", "2.04", "404"]


def test_benchmarks_page_opens_with_the_headline_table() -> None:
    page = make_docs.benchmarks_page(ROOT)
    first_table = page.index("| workload | jaxrl_pim | opponent |")
    assert first_table < page.index("\n## `")  # before the first device's section
    assert "## Headline" in page[:first_table]


def test_a_gpu_comparison_gives_one_row_per_accelerator_folder(tmp_path: Path,
                                                                monkeypatch) -> None:
    comp = headline.Comparison("gpu/s.json", "w", "lib", "flashbax", "config.v", key="r")
    monkeypatch.setattr(headline, "COMPARISONS", (comp,))
    _results(tmp_path, "cpu/s.json", {"config": {"v": "0"}, "summary": {"r": 9.0}})
    rows, missing = headline.headline_rows(tmp_path)
    assert rows == [] and missing == [comp]  # a CPU file is not an accelerator's
    _results(tmp_path, "h200/s.json", {"config": {"v": "0.1"}, "summary": {"r": 0.684}})
    _results(tmp_path, "h100/s.json", {"config": {"v": "0.1"}, "summary": {"r": 1.5}})
    rows, missing = headline.headline_rows(tmp_path)
    assert [(r["device"], r["worst"]) for r in rows] == [("h100", 1.5), ("h200", 0.684)]
    assert missing == []
    lines = headline.headline_table(tmp_path, tmp_path / "docs" / "b.md").splitlines()
    assert "| 0.684x |" in lines[3] and "| slower | `h200` |" in lines[3]
