"""Calling the tutorial's agent from Python."""

import anyio

from peerwire import Client, TaskArtifactUpdateEvent, TaskState


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with Client.connect(url) as client:
        # A blocking send: returns once the task is done (or needs something from you).
        task = await client.send("the quick brown fox")
        print(task.status.state, task.artifacts[0].text)  # TaskState.COMPLETED 4 words

        # A stream: the task, then each status and artifact update as it happens.
        async for event in client.stream("wire", skill="spell"):
            if isinstance(event, TaskArtifactUpdateEvent):
                print("chunk:", event.artifact.text)  # W, I, R, E

        # Asking for input: the task stops in INPUT_REQUIRED with a question...
        task = await client.send("", skill="greet")
        assert task.status.state is TaskState.INPUT_REQUIRED
        print(task.status.message.text)  # What is your name?
        # ...and the answer, sent on the same task, lets the skill go on.
        task = await client.send("Ada", task_id=task.id)
        print(task.status.state, task.artifacts[0].text)  # TaskState.COMPLETED Hello, Ada!


if __name__ == "__main__":
    anyio.run(main)
