"""``piitracer demo --serve``: the console on the demo's workspace, with the demo's own keys and a
viewer token for the privacy office, so a person can look at the closed request and its
certificate after the demo."""

from __future__ import annotations

from pathlib import Path

import yaml

from piitracer.console.app import ConsoleConfig

DEMO_VIEWER = "privacy-office"


def demo_console(folder: Path) -> tuple[ConsoleConfig, str]:
    """The console's configuration for the demo folder (its audit, master and signing keys: the
    demo's own, made by ``piitracer demo``) and a new viewer token for ``privacy-office``. The
    demo's copy of ``piitracer.yaml`` gets ``viewers: [privacy-office]`` when it has no ``viewers:``
    (one a person wrote is left as it is: then it must list privacy-office)."""
    from piitracer.workspace.model import WORKSPACE_FILE
    from piitracer.ingest.workspace.loader import load_workspace
    from piitracer.api import demo_keys

    root = Path(folder)
    workspace_file = root / WORKSPACE_FILE
    text = workspace_file.read_text(encoding="utf-8")
    if "viewers" not in (yaml.safe_load(text) or {}):
        # The demo folder is piitracer's own copy of the fixture workspace: say who reads the console.
        workspace_file.write_text(text.rstrip("\n") + "\n\n# piitracer demo --serve: the privacy office reads the console "
                                  f"(a viewer token)\nviewers: [{DEMO_VIEWER}]\n", encoding="utf-8")
    from piitracer.api.session import Session

    workspace = load_workspace(root)
    keys = demo_keys(root)
    config = ConsoleConfig(workspace, audit_key=keys.audit, master=keys.master, signing_key_path=keys.signing_key_file)
    with Session(workspace, keys) as session:  # the viewer's credential, made with the demo's keys and recorded
        token = session.add_person(DEMO_VIEWER).token
    return config, token
