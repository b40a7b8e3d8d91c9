"""A real S3 endpoint on 127.0.0.1 for tests: moto's server mode (``moto_server``, the same server
s3fs tests itself against), started as a subprocess with a bucket, and the standard AWS_*
variables pointing at it — the way a user points piitracer, pyarrow and delta-rs at any
S3-compatible store (shared/lakehouse-notes.md, "Object storage")."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ENV_KEYS = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ALLOW_HTTP",
            "AWS_S3_ALLOW_UNSAFE_RENAME", "AWS_EC2_METADATA_DISABLED")


@dataclass
class S3:
    endpoint: str
    bucket: str
    env: dict[str, str]

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key.strip('/')}"

    def filesystem(self):
        import pyarrow.fs as pafs

        host = self.endpoint.split("://", 1)[1]
        return pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key="test", secret_key="test",
                                 region="us-east-1")

    def keys(self) -> list[str]:
        import pyarrow.fs as pafs

        infos = self.filesystem().get_file_info(pafs.FileSelector(self.bucket, recursive=True))
        return sorted(i.path[len(self.bucket) + 1:] for i in infos if i.type is pafs.FileType.File)

    def download(self, folder: Path) -> Path:
        """Every object of the bucket copied into ``folder`` (for an independent decode)."""
        fs = self.filesystem()
        for key in self.keys():
            target = folder / key
            target.parent.mkdir(parents=True, exist_ok=True)
            with fs.open_input_stream(f"{self.bucket}/{key}") as source:
                target.write_bytes(source.read())
        return folder


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def s3_server(bucket: str = "lake") -> Iterator[S3]:
    """A moto S3 server with ``bucket``; the AWS_* variables set for this process (and children)
    while it runs, then restored."""
    port = free_port()
    server = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.2)
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
               "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
               "AWS_EC2_METADATA_DISABLED": "true"}
        saved = {key: os.environ.get(key) for key in ENV_KEYS}
        os.environ.update(env)
        try:
            yield S3(endpoint, bucket, env)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
