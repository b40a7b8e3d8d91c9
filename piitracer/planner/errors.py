"""The planner's error, in a module of its own: the layers that only name it (a refusal to catch,
a message to render) do not load the planner, its graph algorithms and its SQL parser."""

from __future__ import annotations

from piitracer.model.errors import CannotPlanError


class PlanningError(CannotPlanError, ValueError):
    """The request cannot be planned; the message says what is wrong and what was expected."""
