"""The documentation site builds with ``mkdocs build --strict``.

A broken link or anchor, a page missing from the navigation, a navigation entry without a
page, or a docstring the API reference cannot parse is a warning, and a strict build stops on
any warning, so this test fails on each of them. The build goes into a temporary folder; the
repository is left as it was.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: The public modules that have a page in the API reference (``docs/api/<name>.md``).
API_MODULES = ("envs", "data", "tabular", "replay", "marl", "rl", "quant", "actorq",
               "studies", "checkpoint", "distributed", "cli", "report", "provenance")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["NO_MKDOCS_2_WARNING"] = "1"  # Material's banner about its successor
    env["JAX_PLATFORMS"] = "cpu"
    return env


def _build(config: Path, site: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
         "--site-dir", str(site)],
        cwd=config.parent, env=_env(), capture_output=True, text=True, timeout=timeout)


def _warnings(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stdout + proc.stderr).splitlines()
    return "\n".join(line for line in lines if "WARNING" in line or "Error" in line)[-6000:]


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def _load_config() -> dict:
    # mkdocs.yml uses no custom YAML tags, so the safe loader reads it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def test_api_reference_has_a_page_per_public_module() -> None:
    nav = _nav_pages(_load_config()["nav"])
    for name in API_MODULES:
        page = ROOT / "docs" / "api" / f"{name}.md"
        assert page.is_file(), f"missing API page {page}"
        assert re.search(rf"^::: jaxrl_pim\.{name}\s*$", page.read_text(), re.M), page
        assert f"api/{name}.md" in nav, f"api/{name}.md is not in mkdocs.yml's nav"


def test_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    proc = _build(ROOT / "mkdocs.yml", site, timeout=600)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{_warnings(proc)}"
    # every API page rendered the objects of its module from their docstrings
    for name in API_MODULES:
        html = (site / "api" / name / "index.html").read_text()
        assert f'id="jaxrl_pim.{name}.' in html, f"api/{name}: no object rendered"
    assert 'id="jaxrl_pim.tabular.make_train"' in (site / "api/tabular/index.html").read_text()
    assert 'id="jaxrl_pim.cli.launch.launch"' in (site / "api/cli/index.html").read_text()
    # repository files the pages link to (plots of the benchmark page) are in the site
    linked = re.findall(r"\]\(\.\./(benchmarks/results/[^)\s]+)\)",
                        (ROOT / "docs" / "benchmarks.md").read_text())
    for rel in linked:
        copied = site / "_repo" / rel
        assert copied.is_file() and copied.read_bytes() == (ROOT / rel).read_bytes(), rel


def _tiny_site(tmp_path: Path, page: str) -> Path:
    """A one-page site in ``tmp_path/repo`` using the project's link hook."""
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "data").mkdir()
    (repo / "data" / "result.json").write_text('{"x": 1}\n')
    (repo / "docs" / "index.md").write_text(page)
    (repo / "docs" / "hooks.py").write_text((ROOT / "docs" / "hooks.py").read_text())
    (repo / "mkdocs.yml").write_text(
        "site_name: t\ntheme: {name: mkdocs}\nhooks: [docs/hooks.py]\n"
        "exclude_docs: |\n  /hooks.py\n"
        "validation: {links: {not_found: warn, anchors: warn}}\n")
    return repo / "mkdocs.yml"


def test_links_to_repository_files_work_and_missing_ones_fail(tmp_path: Path) -> None:
    good = "# t\n\n[results](../data/result.json)\n\n```text\n[not a link](../data/no.json)\n```\n"
    config = _tiny_site(tmp_path, good)
    proc = _build(config, tmp_path / "site", timeout=300)
    assert proc.returncode == 0, _warnings(proc)
    assert (tmp_path / "site/_repo/data/result.json").read_text() == '{"x": 1}\n'
    assert 'href="_repo/data/result.json"' in (tmp_path / "site/index.html").read_text()

    (config.parent / "docs" / "index.md").write_text(good + "\n[gone](../data/missing.json)\n")
    proc = _build(config, tmp_path / "site2", timeout=300)
    assert proc.returncode != 0
    assert "missing.json" in _warnings(proc)


def test_docstring_roles_become_markdown_code() -> None:
    spec = importlib.util.spec_from_file_location("griffe_rst", ROOT / "docs" / "griffe_rst.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = ("See :class:`~jaxrl_pim.tabular.TabularConfig` and :func:`jaxrl_pim.envs.make`,\n"
            "or :py:mod:`.dqn`. Typical use::\n\n    x = 1  # a::b stays\n\n::\n\n    y = 2\n")
    assert module.markdown(text) == (
        "See `TabularConfig` and `jaxrl_pim.envs.make`,\nor `.dqn`. Typical use:\n\n"
        "    x = 1  # a::b stays\n\n\n\n    y = 2\n")
