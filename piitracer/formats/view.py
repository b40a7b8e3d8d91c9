"""Views: a query over other tables that stores no rows. Nothing to erase, scan or verify; the
planner gives a view no step (its tables are erased where they are)."""

from __future__ import annotations

from piitracer.formats import FormatSupport
from piitracer.model.workspace import DatasetFormat

SUPPORT = FormatSupport(format=DatasetFormat.VIEW)
