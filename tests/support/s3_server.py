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
        return pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key=self.env["AWS_ACCESS_KEY_ID"],
                                 secret_key=self.env["AWS_SECRET_ACCESS_KEY"], region="us-east-1")

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
def s3_server(bucket: str = "lake", authenticated: bool = False) -> Iterator[S3]:
    """A moto S3 server with ``bucket``; the AWS_* variables set for this process (and children)
    while it runs, then restored. ``authenticated``: the server checks credentials (moto's IAM
    mode), and the variables hold a real key of a user it knows."""
    port = free_port()
    server = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    # moto's IAM mode: the first five requests go unsigned (the setup below), then every one is checked.
    environment = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "5"} if authenticated else None
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=environment)
    endpoint = f"http://127.0.0.1:{port}"
    access_key, secret_key = "test", "test"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto_server did not start") from None
                time.sleep(0.2)
        if authenticated:  # a user allowed every S3 action, and its key
            import json

            import boto3

            iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="setup",
                               aws_secret_access_key="setup")
            iam.create_user(UserName="piitracer-test")
            key = iam.create_access_key(UserName="piitracer-test")["AccessKey"]
            policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
            arn = iam.create_policy(PolicyName="s3-all", PolicyDocument=json.dumps(policy))["Policy"]["Arn"]
            iam.attach_user_policy(UserName="piitracer-test", PolicyArn=arn)
            access_key, secret_key = key["AccessKeyId"], key["SecretAccessKey"]
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id=access_key,
                     aws_secret_access_key=secret_key).create_bucket(Bucket=bucket)
        env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": access_key, "AWS_SECRET_ACCESS_KEY": secret_key,
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
