"""Small fixes so every page of the static book loads cleanly with no network.

- sphinx-thebe registers its inline configuration script twice in this
  toolchain (Sphinx 7.4), and the second ``const THEBE_JS_URL`` declaration is
  a JavaScript error on every page: drop exact duplicate scripts.
- pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless a
  default mode is configured: set one.
- Refuse to build a page that would load a script from another host, so an
  offline reader never meets a blank widget or a missing animation.
"""

from __future__ import annotations

from sphinx.errors import ExtensionError


def _key(script):
    attrs = tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items()))
    return getattr(script, "filename", None) or "", attrs  # None and "" both mean inline


def _dedupe_and_check(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key in seen:
            continue
        seen.add(key)
        kept.append(script)
        filename = getattr(script, "filename", None) or ""
        if filename.startswith(("http://", "https://", "//")):
            raise ExtensionError(f"{pagename}: a script would load from the network: {filename}")
    scripts[:] = kept


def _default_mode(app, config):
    context = dict(config.html_context or {})
    context.setdefault("default_mode", "light")
    config.html_context = context


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _dedupe_and_check, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
