"""The ``piitracer`` command line (click); every command calls the public Python API."""

from piitracer.model.gc_pause import tune_collector_for_a_command

# A CLI process runs one command and ends: collect less often (see gc_pause), before the
# commands' modules and their model classes are imported.
tune_collector_for_a_command()
