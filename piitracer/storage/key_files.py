"""The one reader and writer of key files on disk (audit, master and signing keys), shared by the
audit and crypto layers, which do not import each other: it reads a key once, applies the one
permission rule (:func:`piitracer.model.key_files.open_mode_problem`) to the file it read, and
checks the kind the file says it holds.

**Kinds.** A key file says what it is, so a key given in another's place is refused at first use
instead of being used as the wrong key. The audit and master keys carry a first line
``piitracer-audit-key v1`` / ``piitracer-master-key v1`` above the secret; a signing key is a PEM
private key (its ``-----BEGIN PRIVATE KEY-----`` line says so) and its public key a PEM public key.

**Files written before the marker** hold the secret alone. They are read as they always were
(every byte but a trailing newline is the secret) and accepted for whichever key they are given
as: refusing them would lock every existing workspace out of its own audit log and request store,
and rewriting them is not piitracer's to do. The marker is not part of the secret, so an owner can
mark an old file by adding the line above it: the key, its HMACs and its fingerprint are
unchanged. A swap is still caught as soon as one of the two files is marked.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from piitracer.model.errors import BadKeyError
from piitracer.model.key_files import open_mode_problem

# The kinds a key file can say it holds, as a person calls them.
KIND_NAMES = {"audit": "the audit key", "master": "the master key", "signing": "a signing (private) key",
              "public": "a public key"}
VERSION = 1
_MARKER = re.compile(rb"\Apiitracer-([a-z]+)-key v(\d+)\r?\n")
_PEM = re.compile(rb"\A\s*-----BEGIN ([A-Z ]*?)(PRIVATE|PUBLIC) KEY-----")


def marker(kind: str) -> str:
    """The first line of a key file of ``kind`` (``audit`` or ``master``).

    >>> marker("audit")
    'piitracer-audit-key v1'
    """
    return f"piitracer-{kind}-key v{VERSION}"


def kind_of(data: bytes) -> str | None:
    """The kind a key file's bytes say they are (``audit``, ``master``, ``signing``, ``public``, or
    the marker's own word for a kind this piitracer does not know), or None for a file written
    before the marker (the secret alone).

    >>> kind_of(b"piitracer-master-key v1\\n0123\\n"), kind_of(b"0123\\n")
    ('master', None)
    """
    found = _MARKER.match(data)
    if found:
        return found.group(1).decode("ascii")
    pem = _PEM.match(data)
    if pem:
        return "signing" if pem.group(2) == b"PRIVATE" else "public"
    return None


def kind_of_file(path: str | os.PathLike[str]) -> str | None:
    """The kind of the key file at ``path``, or None when it is unmarked or cannot be read (its
    loader then says why, with the permission rule applied)."""
    try:
        with open(path, "rb") as handle:
            return kind_of(handle.read(200))
    except OSError:
        return None


def kind_text(kind: str) -> str:
    """A kind as a person reads it: "the audit key", "a signing (private) key"."""
    return KIND_NAMES.get(kind, f"a {kind} key")


def read_key_file(path: str | os.PathLike[str], source: str, what: str, *, hint: str = "", secret: bool = True,
                  error: type[BadKeyError] = BadKeyError, kind: str | None = None) -> bytes:
    """The bytes of a key file, read once: the permission rule is checked on the file read (its
    ``fstat``, not a path that may be swapped meanwhile) when the key is ``secret``. Raises
    ``error`` naming ``source`` (how the key was given) and ``what`` it is ("the audit key").

    With ``kind`` (``audit`` or ``master``), the file must not say it holds another kind (an
    unmarked file is taken as given) and what is returned is the secret without its marker line.
    With ``kind="signing"`` or ``"public"``, a file marked as an audit or master key is refused
    before any PEM parsing."""
    try:
        with open(path, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            data = handle.read()
    except OSError as problem:
        raise error(f"{source}: cannot read {what}: {problem.strerror or problem}{hint}") from None
    if secret and (problem_text := open_mode_problem(Path(path), mode)):
        raise error(f"{source}: {problem_text}")
    if kind is None:
        return data
    found = kind_of(data)
    if kind in ("signing", "public"):
        if found in ("audit", "master"):
            raise error(f"{source}: this file is {kind_text(found)} ({marker(found)}), not {what}{hint}")
        return data
    if found is None:
        return data  # written before the marker: the secret alone, taken as given
    if found != kind:
        raise error(f"{source}: this file is {kind_text(found)}"
                    f"{f' ({marker(found)})' if found in ('audit', 'master') else ''}, not {what}{hint}")
    version = int(_MARKER.match(data).group(2))  # type: ignore[union-attr]
    if version != VERSION:
        raise error(f"{source}: {what} file version {version}; this piitracer reads version {VERSION}")
    return data[_MARKER.match(data).end():]  # type: ignore[union-attr]


def write_key_file(path: str | os.PathLike[str], kind: str, secret_text: str,
                   error: type[BadKeyError] = BadKeyError) -> None:
    """A new key file of ``kind`` (``audit`` or ``master``): its marker line, then the secret;
    mode 0600 from its creation; never overwrites (``error`` names the file when it exists or its
    folder does not)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise error(f"{path} exists: a key is never overwritten") from None
    except (FileNotFoundError, NotADirectoryError):
        raise error(missing_folder(Path(path))) from None
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(f"{marker(kind)}\n{secret_text}\n")


def replace_private_file(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (a reader sees the old file or the new one) with mode
    0600 from its creation, whatever the umask: for a file that holds a secret (a suppression list
    holds its key). Written beside the target, synced, then renamed over it."""
    import secrets

    target = Path(path)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return target


def missing_folder(path: Path) -> str:
    """The message for a key to be written into a folder that does not exist (it is not created:
    where a secret lives, and who may list that folder, is the owner's choice)."""
    folder = Path(path).parent
    return f"folder {folder} does not exist (or is not a folder): create it first (mkdir -m 700 {folder}); no key was written"


def swapped_keys(audit: tuple[Path, str] | None, master: tuple[Path, str] | None) -> str | None:
    """The one line that says the audit and master key files were given the wrong way round, or
    None. ``audit`` / ``master``: the file each key is read from and how it was given
    (``--audit-key-file F``); a key set in the environment as a value is not a file (None). Caught
    when either file is marked: an unmarked file is taken as given."""
    if audit is None or master is None:
        return None
    audit_kind, master_kind = kind_of_file(audit[0]), kind_of_file(master[0])
    if audit_kind != "master" and master_kind != "audit":
        return None
    if Path(audit[0]).absolute() == Path(master[0]).absolute():
        return None  # one file for both: each loader names what it is
    said = []
    if audit_kind == "master":
        said.append(f"{audit[1]} is the master key ({marker('master')})")
    if master_kind == "audit":
        said.append(f"{master[1]} is the audit key ({marker('audit')})")
    return (f"the audit and master key files are swapped: {' and '.join(said)}; give {audit[0]} as the master key and "
            f"{master[0]} as the audit key (nothing was read or written)")
