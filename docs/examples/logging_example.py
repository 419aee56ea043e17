"""Seeing what peerwire logs: configure the standard library's logging before serving.

``python logging_example.py`` serves the agent with the logging below.
"""

import logging

from peerwire import Agent, serve

agent = Agent("Echo", description="Repeats what it is told")


@agent.skill()
async def echo(text: str) -> str:
    if not text:
        raise ValueError("nothing to echo")  # fails the task; peerwire.runner logs why
    return text


def configure_logging() -> None:
    logging.basicConfig(
        format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING
    )
    logging.getLogger("peerwire.runner").setLevel(logging.INFO)  # handlers that raised
    logging.getLogger("peerwire.security").setLevel(logging.INFO)  # refused credentials


if __name__ == "__main__":
    configure_logging()
    # log_level is the level of the "peerwire" logger; the two set above keep their own.
    serve(agent, port=8000, log_level="warning")
