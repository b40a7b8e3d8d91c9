"""Start a workspace (``piitracer init``): a ``piitracer.yaml`` naming the warehouse roots, and the
three keys a workspace's lifecycle needs — the audit key, the master key and the certificate
signing key (with its public key beside it) — written 0600 into a keys folder outside the
workspace, so that whoever can read or copy the workspace does not also hold the keys that protect
it. Each key file says what it is (``storage.key_files``). Nothing is ever overwritten, and a
refused start writes nothing.
Rooms: model (the workspace file's schema), audit and crypto (the keys' files)."""

from __future__ import annotations

import hashlib
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import yaml
from pydantic import ValidationError

from piitracer.audit.keys import ENV_KEY_FILE as AUDIT_KEY_ENV, write_audit_key
from piitracer.crypto.envelope import ENV_KEY_FILE as MASTER_KEY_ENV
from piitracer.crypto.envelope import write_master_key
from piitracer.crypto.signing import ENV_SIGNING_KEY_FILE as SIGNING_KEY_ENV, generate_signing_key, public_key_path
from piitracer.model.errors import BadKeyError, RefusedError
from piitracer.model.workspace import WorkspaceConfig
from piitracer.workspace.layout import WORKSPACE_FILE

AUDIT_KEY_FILE = "audit.key"
MASTER_KEY_FILE = "master.key"
SIGNING_KEY_FILE = "signing.key"


class InitRefused(RefusedError):
    """``piitracer init`` will not make this workspace; the message says why (nothing was written)."""


@dataclass(frozen=True)
class InitResult:
    """What ``init_workspace`` made."""

    workspace: Path
    config_file: Path
    keys_dir: Path
    audit_key: Path
    master_key: Path
    master_key_fingerprint: str
    warehouse_roots: tuple[str, ...]
    signing_key: Path | None = None
    public_key: Path | None = None
    signing_key_fingerprint: str = ""
    missing_roots: tuple[str, ...] = ()  # local roots that do not exist yet (a warning: tables come later)

    def environment(self) -> list[str]:
        """The shell lines that point piitracer at the keys.

        Returns:
            ``export NAME=PATH`` for the audit, master and signing keys.
        """
        return environment_lines(self.audit_key, self.master_key, self.signing_key)


def environment_lines(audit_key: Path, master_key: Path, signing_key: Path | None) -> list[str]:
    """``export NAME=PATH`` for each key a workspace's commands read from the environment."""
    lines = [f"export {AUDIT_KEY_ENV}={shlex.quote(str(audit_key))}",
             f"export {MASTER_KEY_ENV}={shlex.quote(str(master_key))}"]
    if signing_key is not None:
        lines.append(f"export {SIGNING_KEY_ENV}={shlex.quote(str(signing_key))}")
    return lines


def default_keys_dir(workspace: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> Path:
    """Where ``init`` keeps a workspace's keys unless told: ``$XDG_CONFIG_HOME/piitracer/keys/`` (or
    ``~/.config/...``), one folder per workspace named by its folder and a hash of its absolute path
    (two workspaces both called ``lake`` do not share keys)."""
    environ = os.environ if environ is None else environ
    folder = Path(workspace).absolute()
    config_home = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    digest = hashlib.sha256(str(folder).encode("utf-8")).hexdigest()[:8]
    return config_home / "piitracer" / "keys" / f"{folder.name or 'workspace'}-{digest}"


def _root_text(root: str, base: Path) -> str:
    """A warehouse root as the workspace file keeps it: a URI as given; a folder made absolute
    (given relative to where the command ran, while the file's paths are relative to the workspace)."""
    root = root.strip()
    if "://" in root:
        return root
    return str((base / Path(root).expanduser()).absolute())


def workspace_text(warehouse_roots: Sequence[str], audit_key: Path, master_key: Path,
                   signing_key: Path | None = None) -> str:
    """The ``piitracer.yaml`` ``init`` writes: the roots, empty lineage sources to fill in, and where
    the keys are (a path, never a key). Validated against the workspace model before it is written."""
    roots = yaml.safe_dump({"warehouse_roots": list(warehouse_roots)}, default_flow_style=False, sort_keys=False)
    exports = "".join(f"#   {line}\n" for line in environment_lines(audit_key, master_key, signing_key))
    text = (
        "# A piitracer workspace, made by `piitracer init` (reference: docs/reference/workspace.md).\n"
        "# Its keys are kept outside this folder; set:\n"
        f"{exports}"
        "version: 1\n"
        "# Every place piitracer may change lies under these roots; `catalog discover` looks here.\n"
        f"{roots}"
        "lineage:\n"
        "  openlineage: []   # OpenLineage event files or folders\n"
        "  sql: []           # SQL files or folders, e.g. [{path: sql, dialect: spark}]\n"
        "  dbt: []           # dbt artifacts, e.g. [{manifest: target/manifest.json, catalog: target/catalog.json}]\n"
    )
    try:
        WorkspaceConfig.model_validate(yaml.safe_load(text))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InitRefused(f"{WORKSPACE_FILE}: {where}: {first['msg']}; nothing was written") from None
    return text


def _inside(path: Path, folder: Path) -> bool:
    path, folder = path.resolve(), folder.resolve()  # symlinks and `..` resolved, as the location guard does
    return path == folder or folder in path.parents


def init_workspace(folder: str | os.PathLike[str], warehouse_roots: Sequence[str],
                   keys_dir: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None,
                   environ: Mapping[str, str] | None = None) -> InitResult:
    """Make a workspace (``piitracer init``): ``piitracer.yaml`` and a new audit key, master key
    and certificate signing key, each 0600 (the signing key's public key beside it), outside it.

    Nothing is written when it is refused. A local root that does not exist yet is allowed (the
    tables may come later) and listed in ``missing_roots``.

    Args:
        folder: the workspace folder (created when missing).
        warehouse_roots: the roots every place piitracer may change lies under (folders or URIs
            such as ``s3://lake/``).
        keys_dir: where the keys go, outside the workspace (made 0700); default:
            [`default_keys_dir`][piitracer.api.workspace_init.default_keys_dir].
        cwd: the folder relative roots are taken from; default: the current one.
        environ: the environment ``default_keys_dir`` reads; default: the process's.

    Returns:
        The files made, the keys' fingerprints, the roots as written, the roots missing.

    Raises:
        InitRefused: ``piitracer.yaml`` exists, the keys folder is inside the workspace, a key file
            exists, no root is given, or a file cannot be written.
    """
    workspace = Path(folder).absolute()
    base = Path(cwd).absolute() if cwd is not None else Path.cwd()
    config_file = workspace / WORKSPACE_FILE
    keys = Path(keys_dir).expanduser().absolute() if keys_dir is not None else default_keys_dir(workspace, environ)
    audit_key, master_key = keys / AUDIT_KEY_FILE, keys / MASTER_KEY_FILE
    signing_key = keys / SIGNING_KEY_FILE
    public_key = public_key_path(signing_key)
    roots = tuple(dict.fromkeys(_root_text(root, base) for root in warehouse_roots if root.strip()))

    if config_file.exists() or config_file.is_symlink():
        raise InitRefused(f"{config_file} exists: init never overwrites a workspace (edit it, or init another folder)")
    if workspace.exists() and not workspace.is_dir():
        raise InitRefused(f"{workspace} is not a folder")
    if _inside(keys, workspace):
        raise InitRefused(f"keys folder {keys} is inside the workspace {workspace}: keep the keys outside it "
                          "(--keys-dir), so that whoever reads or copies the workspace does not hold its keys")
    if not roots:
        raise InitRefused("no warehouse root: give --warehouse-root PATH (a folder or a bucket prefix such as "
                          "s3://lake/; repeatable): every place piitracer may change lies under one")
    for key in (audit_key, master_key, signing_key, public_key):
        if key.exists() or key.is_symlink():
            raise InitRefused(f"{key} exists: a key is never overwritten (choose another --keys-dir)")
    if keys.exists() and not keys.is_dir():
        raise InitRefused(f"keys folder {keys} is not a folder")
    text = workspace_text(roots, audit_key, master_key, signing_key)

    made: list[Path] = []
    try:
        keys.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_audit_key(audit_key)
        made.append(audit_key)
        master = write_master_key(master_key)
        made.append(master_key)
        _, signing_fingerprint = generate_signing_key(signing_key)  # refuses, writing nothing, if either file exists
        made.extend((signing_key, public_key))
        workspace.mkdir(parents=True, exist_ok=True)
        with open(config_file, "x", encoding="utf-8") as handle:  # "x": a file that appeared meanwhile is kept
            handle.write(text)
    except (OSError, BadKeyError) as error:
        for path in made:  # a refused start leaves nothing behind
            path.unlink(missing_ok=True)
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        where = f"{error.filename}: " if isinstance(error, OSError) and error.filename else ""
        raise InitRefused(f"{where}{reason}; nothing was written") from None
    missing = tuple(root for root in roots if "://" not in root and not Path(root).exists())
    return InitResult(workspace=workspace, config_file=config_file, keys_dir=keys, audit_key=audit_key,
                      master_key=master_key, master_key_fingerprint=master.fingerprint, warehouse_roots=roots,
                      signing_key=signing_key, public_key=public_key, signing_key_fingerprint=signing_fingerprint,
                      missing_roots=missing)
