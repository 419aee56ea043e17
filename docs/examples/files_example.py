"""Files and data parts in and out: an agent that sums a CSV of sales.

``python files_example.py serve`` serves the agent; ``python files_example.py`` sends it a
CSV file with a data part of options, saves the file it answers with and prints the rest.
"""

import csv
import io
import sys

import anyio

from peerwire import Agent, Caller, Client, Message, TaskContext, serve
from peerwire.errors import InvalidParamsError
from peerwire.types import Part

agent = Agent("Sales Report Agent", description="Sums a CSV of sales by region")

# Where the agent publishes full reports: a link it hands out instead of the bytes.
REPORTS = "https://reports.example.com/sales"


def sheet_of(message: Message) -> Part | None:
    """The message's CSV: a file part sent inline (``raw``) with its media type."""
    files = (p for p in message.parts if p.raw is not None and p.media_type == "text/csv")
    return next(files, None)


@agent.validate
def needs_a_sheet(message: Message, caller: Caller) -> None:
    """Refuse a first message without a CSV before a task exists (follow-ups need none)."""
    if not message.task_id and sheet_of(message) is None:
        raise InvalidParamsError("Send the sales as a text/csv file part")


# The card says which media types the skill takes and gives: a part of another type is refused.
@agent.skill(input_modes=["text/plain", "application/json", "text/csv"],
             output_modes=["text/csv", "application/json"])  # fmt: skip
async def report(ctx: TaskContext) -> None:
    sheet = sheet_of(ctx.message)
    assert sheet is not None and sheet.raw is not None  # the validator made sure
    # A data part is any JSON value; a dict parameter would get the first one too.
    options = next((p.data for p in ctx.message.parts if p.kind == "data"), {})
    currency = options.get("currency", "USD")
    totals: dict[str, int] = {}
    rows = list(csv.DictReader(io.StringIO(sheet.raw.decode("utf-8"))))
    for row in rows:
        totals[row["region"]] = totals.get(row["region"], 0) + int(row["amount"])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["region", f"total_{currency.lower()}"])
    writer.writerows(sorted(totals.items()))
    # Out: a file inline (bytes, name, media type), a data part, and a file by reference.
    await ctx.add_artifact(
        Part(raw=out.getvalue().encode(), filename="totals.csv", media_type="text/csv"),
        name="totals",
    )
    await ctx.add_artifact(
        {"currency": currency, "rows": len(rows), "regions": len(totals)}, name="summary"
    )
    await ctx.add_artifact(
        Part(url=f"{REPORTS}/latest.csv", filename="latest.csv", media_type="text/csv"),
        name="full report",
    )
    await ctx.complete(f"{len(rows)} rows, {sum(totals.values())} {currency}")


async def main(url: str = "http://127.0.0.1:8000") -> None:
    await anyio.Path("sales.csv").write_text("region,amount\nnorth,120\nsouth,80\nnorth,30\n")
    async with Client.connect(url) as client:
        # files= sends local files inline (bytes, name, guessed type); data= adds a data part.
        task = await client.send("sum these", files=["sales.csv"], data={"currency": "EUR"})
        print(task.status.state.name, "-", task.status.message.text)  # type: ignore[union-attr]
        for artifact in task.artifacts:  # type: ignore[union-attr]
            for part in artifact.parts:
                if part.raw is not None:  # a file, inline: save it under its name
                    await anyio.Path(part.filename).write_bytes(part.raw)
                    print(f"{artifact.name}: saved {part.filename} ({part.media_type})")
                elif part.url is not None:  # a file by reference: fetch it if you need it
                    print(f"{artifact.name}: {part.url}")
                elif part.kind == "data":
                    print(f"{artifact.name}: {part.data}")
        saved = await anyio.Path("totals.csv").read_text()
        print(saved.strip().replace("\n", " | "))
        try:
            await client.send("sum these")  # no file: refused, and no task is created
        except InvalidParamsError as refused:
            print("refused:", refused.message)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000)
    else:
        anyio.run(main)
