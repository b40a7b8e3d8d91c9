"""Spark without Java (issue 40, the first hour): a machine with no `java` and no JAVA_HOME gets one
line naming the fix (Java 17, Debian's package), exit 2, instead of pyspark's traceback ending in
"Java gateway process exited before sending its port number". No Spark starts: there is no JVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from piitracer.executor.spark_session import no_java_message

FIX = "install Java 17 (Debian: apt-get install -y openjdk-17-jre-headless) or set JAVA_HOME to one"


def test_a_command_that_starts_spark_without_java_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "lake").mkdir()
    (tmp_path / "piitracer.yaml").write_text(f"version: 1\nwarehouse_roots: [{tmp_path / 'lake'}]\n")
    tools = tmp_path / "bin"  # a shell and the usual tools, no java
    tools.mkdir()
    for tool in ("bash", "sh", "dirname", "basename", "uname", "ps", "cat", "head", "sed", "tr", "grep", "mktemp"):
        found = next((Path(folder) / tool for folder in ("/usr/bin", "/bin") if (Path(folder) / tool).exists()), None)
        if found is not None:
            (tools / tool).symlink_to(found)
    env = {key: value for key, value in os.environ.items() if key not in ("JAVA_HOME", "PIITRACER_AUDIT_KEY_FILE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{tools}"
    result = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "-w", str(tmp_path), "catalog", "discover",
                             "--spark"], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: Spark could not start: no Java found (no `java` on the PATH, no JAVA_HOME): {FIX}")


def test_the_message_names_what_was_tried(tmp_path: Path) -> None:
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\nexit 1\n")
    java.chmod(0o755)
    assert no_java_message({"JAVA_HOME": "/opt/jdk-25"}) == (
        "Spark could not start its JVM with JAVA_HOME=/opt/jdk-25: check it is a Java 17 (`$JAVA_HOME/bin/java "
        f"-version`); or {FIX}")
    assert no_java_message({"PATH": str(tmp_path)}) == (
        f"Spark could not start its JVM with the `java` on the PATH: check it is Java 17 (`java -version`); or {FIX}")
    assert no_java_message({"PATH": str(tmp_path / "nothing")}).startswith("Spark could not start: no Java found")
