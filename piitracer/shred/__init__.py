"""Crypto-shredding for the tables a team chooses (issue 42): a person's values are stored
encrypted under that person's own key, and erasing the person is destroying one key.

- :mod:`piitracer.shred.keys`: a subject's data key (one random 64-byte secret, from which an
  AES-SIV key and an AES-GCM key are derived), the keyed hash a subject is looked up by, the
  errors of this room.
- :mod:`piitracer.shred.vault`: the key vault (per-subject keys wrapped under the master key):
  get-or-create and fetch for a batch of subjects, destroy to the bytes; SQLite backend (the
  embedded default). :mod:`piitracer.shred.delta_vault`: the same in a Delta table (delta-rs).
  :mod:`piitracer.shred.spec`: where a vault is, as a value a Spark task can receive.
- :mod:`piitracer.shred.cipher`: encrypt and decrypt Arrow arrays and record batches
  (deterministic AES-SIV for join keys, randomised AES-GCM for the rest), keys fetched once per
  batch. :mod:`piitracer.shred.spark`: the same as a function for Spark's ``mapInArrow``.

The room sits beside ``formats`` (it erases its own Delta table through ``formats.delta``), below
``executor`` and ``verify``; it never imports the API or a front door, so a pipeline job can import
it with nothing of piitracer's workspace.
"""
