"""``piitracer serve``: an OpenLineage consumer endpoint that stores events in the workspace."""
