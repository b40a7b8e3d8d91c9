"""The workspace file piitracer.yaml (with catalog.discovered.yaml): loaded, validated, cached."""
