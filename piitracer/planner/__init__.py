"""The deletion planner: from subjects and source columns to an ordered, per-format erasure plan.

Pure: no Spark, no file I/O (a test enforces it). Entry point: :func:`piitracer.planner.build.build_plan`.
"""
