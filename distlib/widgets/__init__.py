"""Interactive controls: ipywidgets that wire sliders to a model and a plot.

Import a topic's module explicitly, e.g. ``from distlib.widgets import ring``.
Widgets never call ``display()`` themselves; show one by making it the last
expression of a cell.
"""
