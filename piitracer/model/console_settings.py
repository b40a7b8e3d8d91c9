"""The ``console:`` and ``notify:`` blocks of ``piitracer.yaml``: how people sign in to the console
(its own tokens, or a trusted reverse proxy that authenticates them), how long a sign-in lasts,
and how owners and the privacy office are e-mailed. No secret is written here: the SMTP password
comes from the environment (``PIITRACER_SMTP_PASSWORD``), tokens are kept only as hashes.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import Field, field_validator

from piitracer.model.lineage import Frozen

HeaderName = Annotated[str, Field(pattern=r"^[A-Za-z0-9-]{1,64}$")]
Address = Annotated[str, Field(pattern=r"^[^\s@]+@[^\s@]+$")]


class ProxySignIn(Frozen):
    """Sign-in through a reverse proxy that authenticates people (single sign-on): the proxy puts
    the person's console name in ``header``; piitracer believes the header only from ``trusted``
    addresses (the proxy's) *and* with the secret only the proxy holds in ``secret_header`` (any
    process on the proxy's machine can set a header; only the proxy knows the secret), and only for
    a name the workspace lists under owners, viewers or approvers. The secret is read from
    ``secret_file`` (0600) or ``$PIITRACER_PROXY_SECRET``; without one, the header is never believed.
    A person the proxy vouches for still approves or attests with their own token (the form asks
    for it): the proxy says who they are, their token proves it and opens their signing key."""

    header: HeaderName = Field(description="The header holding the signed-in person's console name (e.g. X-Forwarded-User).")
    trusted: tuple[str, ...] = Field(description="Addresses or networks (CIDR) of the proxy; the header from any other "
                                     "address is ignored.")
    secret_header: HeaderName = Field("X-Piitracer-Proxy-Secret", description="The header in which the proxy sends the "
                                      "shared secret with every request.")
    secret_file: str | None = Field(None, description="The file holding the shared secret (mode 0600); default: "
                                    "$PIITRACER_PROXY_SECRET.")

    @field_validator("trusted")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("name the proxy's address (a header from anywhere would let anyone sign in as anyone)")
        for text in value:
            try:
                ipaddress.ip_network(text, strict=False)
            except ValueError:
                raise ValueError(f"{text!r}: expected an address or a network (CIDR), e.g. 127.0.0.1 or 10.0.0.0/24") from None
        return value

    def trusts(self, address: str | None) -> bool:
        """Whether a request from ``address`` may name its user in the header."""
        try:
            client = ipaddress.ip_address(address or "")
        except ValueError:
            return False
        return any(client in ipaddress.ip_network(text, strict=False) for text in self.trusted)


class ConsoleSettings(Frozen):
    """The ``console:`` block."""

    session_hours: float = Field(8.0, gt=0, le=24 * 30, description="How long a console sign-in lasts (sessions "
                                 "survive a restart of piitracer serve; `piitracer owners revoke NAME` ends them).")
    proxy_sign_in: ProxySignIn | None = Field(None, description="Sign-in through a trusted reverse proxy (see ProxySignIn).")


class SmtpSettings(Frozen):
    """The mail server notifications go through (the password, if any, from PIITRACER_SMTP_PASSWORD)."""

    host: str = Field(description="SMTP server host.")
    port: int = Field(587, ge=1, le=65535, description="SMTP port.")
    starttls: bool = Field(True, description="Upgrade the connection with STARTTLS before sending.")
    username: str | None = Field(None, description="Log in as this user (password from PIITRACER_SMTP_PASSWORD).")
    sender: Address = Field(description="The From: address.")


class NotifySettings(Frozen):
    """The ``notify:`` block: who is e-mailed, through which server. No message holds a subject value."""

    smtp: SmtpSettings
    console_url: str | None = Field(None, description="The console's address, for links in messages.")
    privacy_office: tuple[Address, ...] = Field((), description="Who gets the daily digest of requests due within 7 days.")
    owners: dict[str, Address] = Field(default_factory=dict, description="Console name -> address: an owner is "
                                       "e-mailed when a step of a dataset they own awaits their attestation.")
    digest_days: int = Field(7, ge=1, le=90, description="The digest lists open requests due within this many days.")
