"""The documentation site builds with ``mkdocs build --strict``, offline, and the README stays the entrance.

The build runs into a temporary folder (nothing written in the checkout). Strict mode turns every warning into a
failure: a page missing from the nav, a link to a missing page or anchor, an API object mkdocstrings cannot find.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: Hosts a built page must never load from: the site renders offline (no web fonts, no CDN scripts).
REMOTE_ASSETS = re.compile(r"""(?:src|href)=["']https?://(?!127\.0\.0\.1)[^"']+\.(?:css|js|woff2?|ttf)["']""")


class _Loader(yaml.SafeLoader):
    """mkdocs.yml may hold !!python/name tags (Material's emoji options); none are needed to read the keys here."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    site = tmp_path_factory.mktemp("site")
    mkdocs = Path(sys.executable).parent / "mkdocs"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return site, done


def test_the_site_builds_strict(built_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    site, done = built_site
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    for page in (
        "index.html",
        "get-started.html",
        "concepts/index.html",
        "reference/policy.html",
        "reference/cli.html",
        "reference/python-api.html",
        "architecture.html",
    ):
        assert (site / page).is_file(), page


def test_the_site_loads_nothing_from_the_network(built_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    site, _ = built_site
    config = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert config["theme"]["font"] is False  # Material would link Google Fonts otherwise
    plugins = {p if isinstance(p, str) else next(iter(p)) for p in config.get("plugins", [])}
    assert not plugins & {"privacy", "social", "material/privacy", "material/social"}, plugins
    for page in site.rglob("*.html"):
        found = REMOTE_ASSETS.findall(page.read_text(encoding="utf-8"))
        assert not found, (page.relative_to(site), found[:3])


def test_the_python_api_page_renders_the_docstrings(built_site: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    site, _ = built_site
    page = (site / "reference" / "python-api.html").read_text(encoding="utf-8")
    for name in ("fairgate.engine.audit.audit", "fairgate.document.result.AuditResult", "fairgate.policy.core.Policy"):
        assert f'id="{name}"' in page, name


def test_the_readme_is_an_entrance_with_the_two_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    setup = ".venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -e '.[test]'"
    commands = [line for line in readme.splitlines() if line.startswith("python3.11 -m venv .venv")]
    assert commands == [
        f"python3.11 -m venv .venv && .venv/bin/pip install -q uv && {setup} && .venv/bin/fairgate demo",
        f"python3.11 -m venv .venv && .venv/bin/pip install -q uv && {setup} && .venv/bin/pytest",
    ]
    # .ci/run runs the same test command (split over lines there).
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3.11 -m venv .venv && .venv/bin/pip install -q uv" in ci
    assert f"{setup} && .venv/bin/pytest" in ci


def test_the_readme_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "the README links to the docs"
    missing = [link for link in local if not (REPO / link).exists()]
    assert not missing, missing


def test_user_docs_hold_no_issue_numbers_or_session_notes() -> None:
    pattern = re.compile(r"\bissues? #?\d+|\bintegration branch\b|\bthis session\b|\binteg-\w+", re.IGNORECASE)
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        text = page.read_text(encoding="utf-8")
        hits = pattern.findall(text)
        assert not hits, (page.relative_to(REPO), hits[:3])


def test_the_audit_document_fields_are_rendered_from_the_schema(
    built_site: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    site, _ = built_site
    page = (site / "reference" / "audit-document.html").read_text(encoding="utf-8")
    assert "document-fields:" not in page  # every marker replaced by the hook (tools/mkdocs_hooks.py)
    schema = json.loads((REPO / "fairgate" / "document" / "schema" / "audit_result.schema.json").read_text())
    for field in schema["properties"]:
        assert f"<code>{field}</code>" in page, field
