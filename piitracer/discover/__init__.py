"""Catalog discovery: the lakehouse's own description of its tables (``lakehouse``) and how the
workspace's hand-written catalog has drifted from it (``drift``)."""
