"""An agent that identifies callers by their client certificate (mutual TLS).

``python make_certs.py`` first (development certificates in ``certs/``), then
``python auth_mtls.py serve`` and ``python auth_mtls.py``.
"""

import sys
from pathlib import Path

import anyio

from peerwire import Agent, Client, TaskContext, serve
from peerwire.client.auth import ClientCertificate, Credentials
from peerwire.httpd import ServerTLS
from peerwire.security import MTLSVerifier
from peerwire.types import (
    MutualTlsSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

CERTS = Path("certs")

agent = Agent(
    "Ledger",
    description="Answers who you are",
    security_schemes={"mtls": SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())},
    security_requirements=[SecurityRequirement(schemes={"mtls": StringList()})],
)


@agent.skill()
async def whoami(ctx: TaskContext) -> str:
    return f"You are {ctx.caller.id}"


def server_tls(certs: Path = CERTS) -> ServerTLS:
    """HTTPS with client certificates from our CA required in the handshake."""
    return ServerTLS(
        certs / "server.pem",
        certs / "server.key",
        client_ca=certs / "ca.pem",
        require_client_cert=True,
    )


def verifiers(certs: Path = CERTS) -> dict[str, MTLSVerifier]:
    """Subject DNs (or SHA-256 fingerprints) to principal ids; unmapped ones are refused."""
    trusted = [(certs / "ca.pem").read_bytes()]
    return {"mtls": MTLSVerifier(trusted, principals={"O=Example,CN=billing": "billing"})}


async def main(url: str = "https://127.0.0.1:8443", certs: Path = CERTS) -> None:
    mine = ClientCertificate(certs / "client.pem", certs / "client.key", cafile=certs / "ca.pem")
    async with Client.connect(url, credentials=Credentials(mine)) as client:
        task = await client.send("who am I?")
        print(task.artifacts[0].text)  # You are billing


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8443, tls=server_tls(), auth=verifiers())
    else:
        anyio.run(main)
