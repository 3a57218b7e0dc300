"""scripts/publish.sh pushes the built site, reader notebooks included, where the launch buttons point.

Run on a throwaway clone whose repository URL (in its _config.yml, the one
place it is set) is a local bare repository, with a stand-in build output
(the real build is tested in test_book.py / test_reader_notebooks.py).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, toc_chapters

GIT_ID = ["-c", "user.name=test", "-c", "user.email=test@localhost"]


def git(cwd, *args, check=True):
    return subprocess.run(["git", *GIT_ID, "-C", str(cwd), *args], capture_output=True, text=True, check=check)


@pytest.fixture
def clone(tmp_path):
    bare = tmp_path / "book.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "publish.sh", work / "scripts" / "publish.sh")
    shutil.copy2(ROOT / "_toc.yml", work / "_toc.yml")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"]["url"] = f"file://{bare}"
    (work / "_config.yml").write_text(yaml.safe_dump(config))
    chapters = [c for c in toc_chapters() if (ROOT / f"{c}.ipynb").exists()]
    for chapter in chapters:
        (work / f"{chapter}.ipynb").parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f"{chapter}.ipynb", work / f"{chapter}.ipynb")
    (work / ".gitignore").write_text("_build/\n.venv\n")
    (work / ".venv").symlink_to(ROOT / ".venv")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "book")
    git(work, "remote", "add", "origin", f"file://{bare}")
    return work, bare, chapters


def fake_build(work, chapters, sha):
    html = work / "_build" / "html"
    html.mkdir(parents=True, exist_ok=True)
    (html / "index.html").write_text("<html>book</html>")
    for chapter in chapters:
        page = html / f"{chapter}.ipynb"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(json.dumps({"cells": [], "metadata": {"distbook": {"commit": sha}}}))


def publish(work, *args):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost"}
    return subprocess.run(["bash", "scripts/publish.sh", "--no-build", *args], cwd=work, capture_output=True,
                          text=True, env=env, timeout=120)


def test_publish_refuses_an_unpushed_commit_then_pushes_the_site(clone):
    work, bare, chapters = clone
    sha = git(work, "rev-parse", "HEAD").stdout.strip()
    fake_build(work, chapters, sha)
    r = publish(work)
    assert r.returncode != 0 and "is not on origin yet" in r.stderr
    git(work, "push", "-q", "origin", "main")
    r = publish(work)
    assert r.returncode == 0, r.stderr
    branch = yaml.safe_load((work / "_config.yml").read_text())["repository"]["branch"]
    listing = git(bare, "ls-tree", "-r", "--name-only", branch).stdout.split()
    assert ".nojekyll" in listing and "index.html" in listing
    for chapter in chapters:
        assert f"{chapter}.ipynb" in listing  # where the launch buttons open it
    assert sha in git(bare, "log", "-1", "--format=%s", branch).stdout


def test_publish_refuses_a_dirty_tree_a_stale_build_and_a_wrong_remote(clone):
    work, bare, chapters = clone
    sha = git(work, "rev-parse", "HEAD").stdout.strip()
    git(work, "push", "-q", "origin", "main")
    fake_build(work, chapters, "0" * 40)
    r = publish(work, "--dry-run")
    assert r.returncode != 0 and "not HEAD" in r.stderr
    fake_build(work, chapters, sha)
    assert publish(work, "--dry-run").returncode == 0
    (work / "_toc.yml").write_text((work / "_toc.yml").read_text() + "\n")
    r = publish(work, "--dry-run")
    assert r.returncode != 0 and "uncommitted changes" in r.stderr
    git(work, "checkout", "_toc.yml")
    git(work, "remote", "add", "elsewhere", "https://example.invalid/other/repo")
    r = publish(work, "--dry-run", "--remote", "elsewhere")
    assert r.returncode != 0 and "repository.url" in r.stderr


def test_licences_and_citation_name_the_one_repository_and_version():
    import tomllib

    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert citation["cff-version"] == "1.2.0" and citation["title"] and citation["authors"]
    assert citation["repository-code"] == url
    assert citation["version"] == project["version"]
    assert set(citation["license"]) == {"CC-BY-4.0", "MIT"}
    assert "Creative Commons Attribution 4.0 International" in (ROOT / "LICENSE-CONTENT").read_text()
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "CC BY 4.0" in yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["extra_footer"]
