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
    # A skill that raised is an ERROR with its traceback (task_id, skill ... as extra fields);
    # INFO adds what the runner does besides, such as cancel hooks that raised.
    logging.getLogger("peerwire.runner").setLevel(logging.INFO)
    logging.getLogger("peerwire.security").setLevel(logging.INFO)  # refused credentials


if __name__ == "__main__":
    configure_logging()
    # log_level is the level of the "peerwire" logger; the two set above keep their own.
    serve(agent, port=8000, log_level="warning")
