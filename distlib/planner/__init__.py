"""Choosing a layout (chapter "Choosing a layout"): a training step of a layout priced term by term, and the
planner that ranks the layouts of a model on a cluster.

* :mod:`~distlib.planner.model` -- a dense transformer's shape, parameters and FLOPs;
* :mod:`~distlib.planner.published` -- the published runs the planner is checked against;
* :mod:`~distlib.planner.tensor_parallel` -- tensor parallelism's collectives, bytes and time per layer
  (chapter 11's widget and the step's ``tp_comm`` term ask it);
* :mod:`~distlib.planner.step` -- one step's named seconds and memory, and :func:`plan_layouts`.
"""

from .model import Transformer, transformer
from .published import PublishedLayout, published_layouts
from .step import (ATTENTION_KERNELS, BREAKDOWN_TERMS, LAYOUT_SCHEDULES, MIN_CP_TOKENS, LayoutStep, PlannerConstants,
                   layout_step, plan_layouts, planner_constants, published_cluster, published_model, published_step)

__all__ = ["Transformer", "transformer", "PublishedLayout", "published_layouts", "LAYOUT_SCHEDULES",
           "ATTENTION_KERNELS", "BREAKDOWN_TERMS", "MIN_CP_TOKENS", "PlannerConstants", "planner_constants",
           "LayoutStep", "layout_step", "plan_layouts", "published_model", "published_cluster", "published_step"]
