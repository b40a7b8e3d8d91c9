"""The one permission rule for key files on disk (audit, master and signing keys); the one reader
that applies it is :func:`piitracer.storage.key_files.read_key_file`."""

from __future__ import annotations



def open_mode_problem(path: object, mode: int) -> str | None:
    """Why a key file of this ``mode`` is refused, or None: like ssh with a private key, a key that
    group or others may read (or write) is no longer a secret of its owner. Keys given in the
    environment are not files: nothing to check.

    >>> open_mode_problem("k", 0o100600) is None
    True
    >>> open_mode_problem("k", 0o100644)
    'k is open to group or others (mode 0644); a key file must be readable by its owner only: run `chmod 600 k`'
    """
    if mode & 0o077 == 0:
        return None
    return (f"{path} is open to group or others (mode {mode & 0o777:04o}); a key file must be readable by its owner "
            f"only: run `chmod 600 {path}`")
