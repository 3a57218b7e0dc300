"""Interactive controls: ipywidgets that wire sliders to a model and a plot.

Import a topic's module explicitly, e.g. ``from distlib.widgets import ring``.
Widgets never call ``display()`` themselves; show one by making it the last
expression of a cell.

:func:`widget_classes` finds every chapter widget (each module's public
:class:`~distlib.widgets._base.FigureWidget` subclasses), so that the tests
and ``tools/bad_inputs.py`` build each from its own ``EXAMPLE`` and
``BAD_INPUTS`` with no list of widgets kept anywhere else.
"""

from __future__ import annotations

__all__ = ["widget_classes"]


def widget_classes() -> dict:
    """``{class name: class}`` of every public ``FigureWidget`` subclass defined in a module of this package.

    Each module is imported (ipywidgets and matplotlib with them), in the
    order of the modules' names; a module's widgets come in the order it
    defines them. A class counts where it is defined, not where it is
    imported again.
    """
    import importlib
    import pkgutil

    from ._base import FigureWidget

    found = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, value in vars(module).items():
            if (isinstance(value, type) and issubclass(value, FigureWidget) and value is not FigureWidget
                    and value.__module__ == module.__name__ and not name.startswith("_")):
                found[name] = value
    return found
