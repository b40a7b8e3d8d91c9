"""External systems (a CRM, a SaaS tool): piitracer cannot reach their rows. Their erasure is a
person's step (``manual``) that its owner attests; there is nothing here to erase or decode."""

from __future__ import annotations

from piitracer.formats import FormatSupport
from piitracer.model.workspace import DatasetFormat

SUPPORT = FormatSupport(format=DatasetFormat.EXTERNAL)
