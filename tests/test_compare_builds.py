"""tools/compare_builds.py: two builds' pictures compared by content, page by page."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("compare_builds", ROOT / "tools" / "compare_builds.py")
compare_builds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_builds)


def _page(folder: Path, name: str, html: str) -> None:
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(html)


def test_a_changed_picture_is_found_and_the_same_ones_are_counted(tmp_path, capsys):
    old, new = tmp_path / "old", tmp_path / "new"
    same = '<img src="widget-frames/0123456789abcdef.png">'
    _page(old, "notebooks/a.html", same + '<img src="data:image/png;base64,AAAA">')
    _page(new, "notebooks/a.html", same + '<img src="data:image/png;base64,AAAB">')  # one byte differs
    _page(old, "notebooks/b.html", same)
    _page(new, "notebooks/b.html", same)
    _page(old, "index.html", "<p>no pictures</p>")
    _page(new, "index.html", "<p>no pictures</p>")
    assert compare_builds.main([str(old), str(new)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["notebooks/a.html: 2 vs 2 pictures, 1 identical   <-- differs",
                   "notebooks/b.html: 1 vs 1 pictures, 1 identical",
                   "all pages: 2 of 4 distinct pictures identical"]


def test_the_doctest_and_the_usage():
    import doctest

    assert doctest.testmod(compare_builds).failed == 0
    assert compare_builds.main([]) == 2
