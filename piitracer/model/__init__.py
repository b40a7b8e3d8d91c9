"""Frozen pydantic types shared by every layer. Imports nothing of the project."""
