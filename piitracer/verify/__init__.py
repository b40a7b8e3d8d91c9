"""The verifier: decode every file under each dataset of a plan, read back every retained
snapshot/version, and give each dataset a verdict (``piitracer.model.verification``).

Layer ``verify``: imports only ``model``, ``graph``, ``planner`` and itself; the API passes it
plain data (the plan, catalog entries, locations, resolved values and journal step states).
"""

from piitracer.verify.verifier import VerificationError, identifier_sets, sets_for, verify_dataset, verify_datasets

__all__ = ["VerificationError", "identifier_sets", "sets_for", "verify_dataset", "verify_datasets"]
