"""Diagrams and reports (graphviz)."""
