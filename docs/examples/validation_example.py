"""Refusing a message before a task exists: validators.

``python validation_example.py serve`` serves the agent; ``python validation_example.py``
sends one message it takes and one it refuses.
"""

import sys

import anyio

from peerwire import Agent, Caller, Client, Message, serve
from peerwire.errors import InvalidParamsError

LANGUAGES = {"en", "fr", "pt"}

# max_text_chars refuses long messages (InvalidParamsError) before any validator runs.
agent = Agent("Translator", description="Translates short texts", max_text_chars=2000)


@agent.validate
def supported_language(message: Message, caller: Caller) -> None:
    """Runs on every incoming message, first ones and follow-ups, on every binding."""
    language = (message.metadata or {}).get("language", "en")
    if language not in LANGUAGES:
        raise InvalidParamsError(
            f"Cannot translate into {language!r}; supported: {', '.join(sorted(LANGUAGES))}"
        )


@agent.skill()
async def translate(text: str, message: Message) -> str:
    language = (message.metadata or {}).get("language", "en")
    return f"[{language}] {text}"


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with Client.connect(url) as client:
        task = await client.send("good morning", metadata={"language": "pt"})
        print(task.artifacts[0].text)  # [pt] good morning
        try:
            await client.send("good morning", metadata={"language": "de"})
        except InvalidParamsError as refused:  # no task was created for it
            print("refused:", refused.message)  # refused: Cannot translate into 'de'; ...


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000)
    else:
        anyio.run(main)
