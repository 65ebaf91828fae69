"""Plan diffs for reviews: compare two offline plans, warn of data loss and disruption first.

`engine` is pure (plan JSON in, `PlanDiff` out); `rules` loads the provider replacement rules kept as
data in `replacement/*.yaml`; `render` prints table, markdown (a sticky PR comment) and JSON;
`gitplan` plans a stack at a git revision from a temporary worktree.
"""

from .engine import Change, Changed, PlanDiff, diff_inputs, diff_plans
from .load import read_plan
from .render import MARKER, render_json, render_markdown, render_table
from .rules import Rules, TypeRule, default_rules, load_rules

__all__ = [
    "MARKER",
    "Change",
    "Changed",
    "PlanDiff",
    "Rules",
    "TypeRule",
    "default_rules",
    "diff_inputs",
    "diff_plans",
    "load_rules",
    "read_plan",
    "render_json",
    "render_markdown",
    "render_table",
]
