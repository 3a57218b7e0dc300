"""Compare the pictures of two book builds page by page, by content.

::

    .venv/bin/python tools/compare_builds.py OLD/_build/html NEW/_build/html

For a change that should leave every picture as it was (a refactor of the
plots, the widgets or the static book): build the book before and after, and
run this. Widget frames are files named by their content's hash, and images
inlined as ``data:`` URIs are hashed here, so a picture counts as the same only
if its bytes are. It prints, per page, how many distinct pictures each build
has and how many are in both, and ends with the total. Pictures drawn from
measurements of the building machine (chapters 3, 6-9 have some) differ
between any two builds; every other difference is a change.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

_PICTURE = re.compile(r"widget-frames/([0-9a-f]{16})\.png|data:image/(?:png|svg\+xml|gif);base64,([A-Za-z0-9+/=]+)")


def pictures(html: str) -> list:
    """The distinct pictures a page shows, in order: frame names, and ``data:`` images by a hash of their bytes.

    >>> pictures('<img src="widget-frames/0123456789abcdef.png"><img src="data:image/png;base64,AAAA">'
    ...          '<img src="widget-frames/0123456789abcdef.png">')
    ['0123456789abcdef', 'data:e2512172abf8cc9f']
    """
    seen, ordered = set(), []
    for m in _PICTURE.finditer(html):
        key = m.group(1) or "data:" + hashlib.sha1(m.group(2).encode()).hexdigest()[:16]
        if key not in seen:
            seen.add(key)
            ordered.append(key)
    return ordered


def compare(old: Path, new: Path) -> tuple[int, int, list]:
    """``(pictures in both, pictures in either, one line per page)`` for two ``_build/html`` folders."""
    same = total = 0
    lines = []
    for page in sorted(old.rglob("*.html")):
        rel = page.relative_to(old)
        other = new / rel
        if not other.exists():
            lines.append(f"{rel}: missing in {new}")
            continue
        a, b = set(pictures(page.read_text())), set(pictures(other.read_text()))
        if not a and not b:
            continue
        same, total = same + len(a & b), total + len(a | b)
        lines.append(f"{rel}: {len(a)} vs {len(b)} pictures, {len(a & b)} identical" + ("" if a == b else "   <-- differs"))
    return same, total, lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__.split("::")[1].split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    same, total, lines = compare(Path(argv[0]), Path(argv[1]))
    print("\n".join(lines))
    print(f"all pages: {same} of {total} distinct pictures identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
