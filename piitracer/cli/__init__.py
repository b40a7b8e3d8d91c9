"""The ``piitracer`` command line (click); every command calls the public Python API."""
