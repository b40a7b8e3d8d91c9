"""A throwaway PostgreSQL server on 127.0.0.1 for tests: Debian's ``postgresql`` binaries
(``initdb``, ``pg_ctl`` under ``/usr/lib/postgresql/<version>/bin``), a fresh cluster in a
temporary folder, trust authentication, a free port, stopped and deleted at the end
(shared/lakehouse-notes.md, "Iceberg catalogs with real servers").

PostgreSQL refuses to run as root: when the tests run as root (CI on a fresh machine), the
cluster is made and run as the ``postgres`` user Debian's package creates, in a folder it owns
outside pytest's 0700 temporary tree. It is the Iceberg JDBC catalog that Spark (through Debian's
``libpostgresql-jdbc-java`` jar) and pyiceberg's ``sql`` catalog (psycopg2) share."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

BIN_ROOT = Path("/usr/lib/postgresql")
USER = "postgres"  # the database superuser initdb creates (and, as root, the OS user that runs it)


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine (scripts/setup.sh installs Debian's)."""


def binaries() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding ``initdb`` and ``pg_ctl``."""
    found = sorted((p for p in BIN_ROOT.glob("*/bin") if (p / "initdb").is_file() and (p / "pg_ctl").is_file()),
                   key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    if not found:
        raise PostgresUnavailable(f"no initdb/pg_ctl under {BIN_ROOT}/*/bin: run scripts/setup.sh (Debian's postgresql)")
    return found[-1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Postgres:
    """A running server: where it listens and how to make a database in it."""

    host: str
    port: int
    user: str
    folder: Path
    bin: Path
    as_postgres: bool

    def create_database(self, name: str) -> str:
        """Create the database ``name`` (no-op when it exists); returns ``name``."""
        exists = self.psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{name}'").strip()
        if not exists:
            self._run([str(self.bin / "createdb"), "-h", self.host, "-p", str(self.port), "-U", self.user, name])
        return name

    def create_role(self, name: str, password: str, database: str) -> str:
        """A login role that must give ``password`` over TCP (scram-sha-256), owning the public
        schema of ``database``; returns ``name``."""
        exists = self.psql("postgres", f"SELECT 1 FROM pg_roles WHERE rolname = '{name}'").strip()
        if not exists:
            self.psql("postgres", f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
        self.psql(database, f"GRANT ALL ON DATABASE {database} TO {name}; ALTER SCHEMA public OWNER TO {name}")
        return name

    def sqlalchemy_uri(self, database: str, user: str | None = None) -> str:
        """pyiceberg's ``sql`` catalog uri (psycopg2), with no password in it."""
        return f"postgresql+psycopg2://{user or self.user}@{self.host}:{self.port}/{database}"

    def jdbc_uri(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def psql(self, database: str, sql: str) -> str:
        """Run one statement with ``psql`` and return its unaligned, tuples-only output."""
        return self._run([str(self.bin / "psql"), "-h", self.host, "-p", str(self.port), "-U", self.user, "-d", database,
                          "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])

    def _run(self, command: list[str]) -> str:
        return _run(command, self.as_postgres)


def _run(command: list[str], as_postgres: bool, check: bool = True) -> str:
    if as_postgres:  # root: PostgreSQL's programs refuse to run as root
        command = ["runuser", "-u", USER, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server for the duration of the block: ``initdb`` (trust, superuser
    ``postgres``), ``pg_ctl start`` on 127.0.0.1 and a free port (its socket in its own folder),
    then ``pg_ctl stop -m immediate`` and the folder removed."""
    bin_dir = binaries()
    as_postgres = hasattr(os, "geteuid") and os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="piitracer-pg-"))  # /tmp itself: the postgres user can reach it
    data = folder / "data"
    if as_postgres:
        shutil.chown(folder, USER, USER)
    port = free_port()
    server = Postgres(host="127.0.0.1", port=port, user=USER, folder=folder, bin=bin_dir, as_postgres=as_postgres)
    started = False
    try:
        _run([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8"],
             as_postgres)
        # The superuser over its socket and 127.0.0.1 without a password (the tests' own setup);
        # every other role over TCP only with its password, as a catalog's user would be.
        (data / "pg_hba.conf").write_text(f"local all all trust\nhost all {USER} 127.0.0.1/32 trust\n"
                                          "host all all 127.0.0.1/32 scram-sha-256\n")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
        _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-o", options, "-w", "-t", "60",
              "start"], as_postgres)
        started = True
        deadline = time.monotonic() + 30
        while True:  # pg_ctl -w waits for the socket; the TCP listener follows at once, but check
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield server
    finally:
        if started:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], as_postgres, check=False)
        shutil.rmtree(folder, ignore_errors=True)
