"""How to reach an object store as an Iceberg catalog reaches it: the catalog's FileIO properties
(Iceberg's names, which pyiceberg reads: ``s3.endpoint``, ``s3.access-key-id``,
``s3.secret-access-key``, ``s3.session-token``, ``s3.region``, ``s3.force-virtual-addressing``, and
Java's ``s3.path-style-access``; ``client.*`` as pyiceberg's fallbacks for every client) turned into
what :class:`~piitracer.storage.store.Store` hands ``pyarrow.fs.S3FileSystem`` and delta-rs.

A team that configures its catalog the pyiceberg way (``PYICEBERG_CATALOG__<NAME>__S3__*``) has no
``AWS_*`` variables: without this, piitracer's own file access (listing, the byte scan, reading
``metadata.json``, removing expired files) would have no endpoint and no key for the bucket the
catalog's tables live in. The properties come from the store's ``pointers``
(:meth:`~piitracer.storage.store.MetadataPointers.storage_properties`); this module only reads them.
The split: non-secret options (:func:`catalog_options`) join the workspace's ``storage:`` block under
it; the credentials (:class:`S3Credentials`) never enter a settings object, a repr, a log line or a
pickled task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


def _first(properties: Mapping[str, str], *names: str) -> str | None:
    """The first of ``names`` set (non-empty) in ``properties`` (pyiceberg's ``get_first_property_value``)."""
    for name in names:
        value = properties.get(name)
        if value not in (None, ""):
            return str(value)
    return None


def _flag(text: str | None) -> bool | None:
    if text is None:
        return None
    return str(text).strip().lower() in ("true", "1", "yes", "on")


@dataclass(frozen=True)
class S3Credentials:
    """A catalog's key for its object store. Never shown: the fields are left out of ``repr``, and
    nothing piitracer writes or logs is built from them."""

    access_key: str = field(repr=False)
    secret_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    def pyarrow(self) -> dict[str, str]:
        """``pyarrow.fs.S3FileSystem`` keyword arguments."""
        found = {"access_key": self.access_key, "secret_key": self.secret_key}
        if self.session_token:
            found["session_token"] = self.session_token
        return found

    def fileio(self) -> dict[str, str]:
        """pyiceberg FileIO properties."""
        found = {"s3.access-key-id": self.access_key, "s3.secret-access-key": self.secret_key}
        if self.session_token:
            found["s3.session-token"] = self.session_token
        return found

    def delta(self) -> dict[str, str]:
        """delta-rs ``storage_options``."""
        found = {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key}
        if self.session_token:
            found["AWS_SESSION_TOKEN"] = self.session_token
        return found


def catalog_credentials(properties: Mapping[str, str]) -> S3Credentials | None:
    """The key a catalog's FileIO uses (``s3.*`` before ``client.*``, as pyiceberg reads them), or
    None when it names none (the ecosystem's chain applies: ``AWS_*``, a profile, an instance role).
    A key id without its secret is no key: pyarrow would refuse it, so it is not taken half."""
    access = _first(properties, "s3.access-key-id", "client.access-key-id")
    secret = _first(properties, "s3.secret-access-key", "client.secret-access-key")
    if not access or not secret:
        return None
    return S3Credentials(access, secret, _first(properties, "s3.session-token", "client.session-token"))


def catalog_options(properties: Mapping[str, str]) -> dict[str, object]:
    """The non-secret :class:`~piitracer.model.settings.StorageOptions` fields a catalog's FileIO
    properties say: endpoint, region, path-style addressing (``s3.path-style-access: true`` or
    ``s3.force-virtual-addressing: false``)."""
    found: dict[str, object] = {}
    endpoint = _first(properties, "s3.endpoint")
    if endpoint:
        found["endpoint"] = endpoint
    region = _first(properties, "s3.region", "client.region")
    if region:
        found["region"] = region
    path_style = _flag(_first(properties, "s3.path-style-access"))
    virtual = _flag(_first(properties, "s3.force-virtual-addressing"))
    if path_style is not None:
        found["path_style"] = path_style
    elif virtual is not None:
        found["path_style"] = not virtual
    return found


FILEIO_PREFIXES = ("s3.", "client.")  # the catalog properties a FileIO of pyiceberg's reads for S3


def fileio_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """The S3 FileIO properties among a catalog's properties (handed to pyiceberg as they are, so a
    table piitracer reads by its metadata file is read as its catalog reads it)."""
    return {key: str(value) for key, value in properties.items() if key.startswith(FILEIO_PREFIXES)}
