"""The workspace room: the :class:`~piitracer.workspace.model.Workspace` every use case receives,
its catalog layers (``piitracer.yaml`` over ``catalog.discovered.yaml``) and the layout of piitracer's
own files in it (:mod:`piitracer.workspace.layout`). Imports only ``model``."""
