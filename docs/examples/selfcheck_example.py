"""The inspector's self-check from code: what about an agent would break a client.

Serve an agent (``peerwire demo``, or ``python selfcheck_example.py serve``), then run
``python selfcheck_example.py``: it prints what failed, and whether a client would break.
"""

import sys

import anyio

from peerwire import Agent, serve
from peerwire.inspect import run_self_check

agent = Agent("Echo", description="Repeats what it is told")


@agent.skill(description="Repeats its text", examples=["hello"])
async def echo(text: str) -> str:
    return text


async def main(url: str = "http://127.0.0.1:8000") -> None:
    report = await run_self_check(url, timeout=10.0)
    for finding in report.findings:
        if not finding.ok:
            where = f" ({finding.interface})" if finding.interface else ""
            print(f"{finding.severity}: {finding.check}{where}: {finding.title}")
    print("a client would break" if not report.ok else "nothing breaks a client")


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000)
    else:
        anyio.run(main)
