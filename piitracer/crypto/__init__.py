"""Envelope encryption of the subject values piitracer keeps (``envelope``)."""
