"""Typed skills: a pydantic model, a dataclass and a file in and out.

``python typed_example.py serve`` serves the agent; ``python typed_example.py`` calls it.
"""

import dataclasses
import sys

import anyio
from pydantic import BaseModel

from peerwire import Agent, Client, serve
from peerwire.errors import InvalidParamsError
from peerwire.types import File

agent = Agent("Shop", description="Prices orders and stamps invoices")


@dataclasses.dataclass
class Order:
    sku: str
    quantity: int


class Quote(BaseModel):
    sku: str
    total_cents: int


@agent.skill()
async def quote(order: Order) -> Quote:
    """Price an order."""
    return Quote(sku=order.sku, total_cents=order.quantity * 250)


@agent.skill()
async def stamp(invoice: File) -> File:
    """Stamp an invoice (a file part in, a file part out)."""
    assert invoice.data is not None
    return File(data=invoice.data + b"\nPAID", name=invoice.name, media_type="text/plain")


async def main(url: str = "http://127.0.0.1:8000") -> None:
    async with Client.connect(url) as client:
        priced = await client.call("quote", Order(sku="A-1", quantity=3), returns=Quote)
        print(priced.total_cents)  # 750
        stamped = await client.call(
            "stamp", File(data=b"invoice 7", name="7.txt", media_type="text/plain"), returns=File
        )
        print(stamped.name, stamped.data)  # 7.txt b'invoice 7\nPAID'
        try:
            await client.call("quote", {"sku": "A-1", "quantity": "three"}, returns=Quote)
        except InvalidParamsError as refused:  # no task was created
            print("refused:", [v.field for v in refused.field_violations])
        schemas = next(
            e for e in client.card.capabilities.extensions if e.uri.endswith("skill-schemas/v1")
        )
        print(sorted((schemas.params or {})["skills"]))  # ['quote', 'stamp']


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        serve(agent, port=8000)
    else:
        anyio.run(main)
