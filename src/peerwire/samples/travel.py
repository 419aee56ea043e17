"""The Travel Agent: packing advice for a trip, using the Weather Agent's forecast.

Serve both (with ``peerwire[cli]`` installed, from any folder)::

    peerwire serve peerwire.samples.weather:agent --port 8002
    WEATHER_URL=http://127.0.0.1:8002 peerwire serve peerwire.samples.travel:agent --port 8003
    peerwire send http://127.0.0.1:8003 \\
        "I want to travel to Tokyo next week, what kind of clothes should I bring?"

What it does with that sentence: finds the destination ("Tokyo"; if it finds none it asks
"Where are you travelling to?"), asks the Weather Agent about it over A2A (a peerwire
``Client`` call, the city as text and as a data part), and completes with one artifact,
``packing-list``: the forecast and what to bring. If the Weather Agent fails or cannot be
reached, the task fails saying so.

No language model is needed: the advice comes from rules (``RuleBasedAdvisor``). To plug one
in, write a class with the ``Advisor`` method and pass it to ``make_agent``::

    class ModelAdvisor:
        async def advise(self, request: str, forecast: Forecast) -> str:
            prompt = f"{request}\\nWeather: {forecast.summary}\\nWhat should I pack?"
            return await my_model.complete(prompt)   # any LLM client

    agent = make_agent(weather_url, advisor=ModelAdvisor())

``agent`` asks the Weather Agent at ``$WEATHER_URL`` (default ``http://127.0.0.1:8002``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Protocol

from peerwire import Agent, Client, Message, Task, TaskContext, TaskState
from peerwire.errors import PeerwireError

__all__ = [
    "Advisor",
    "Forecast",
    "RuleBasedAdvisor",
    "agent",
    "find_destination",
    "make_agent",
]

DEFAULT_WEATHER_URL = "http://127.0.0.1:8002"

# A capitalised place name ("Tokyo", "New York") after a word that says where someone goes.
_PLACE = r"(?P<place>[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*)"
_DESTINATION_PATTERNS = (
    re.compile(
        r"\b(?i:travel(?:l?ing)?|go(?:ing)?|fly(?:ing)?|trip|holiday|vacation|visit(?:ing)?|"
        r"heading|moving)\s+(?:to\s+)?" + _PLACE
    ),
    re.compile(r"\b(?:to|in)\s+" + _PLACE),
)


def find_destination(request: str) -> str | None:
    """The place a traveller names: ``"... travel to Tokyo next week ..."`` -> ``"Tokyo"``."""
    for pattern in _DESTINATION_PATTERNS:
        found = pattern.search(request)
        if found is not None:
            return found.group("place")
    return None


@dataclass(frozen=True)
class Forecast:
    """What the Travel Agent reads from the Weather Agent's ``forecast`` artifact."""

    city: str
    low_c: float
    high_c: float
    conditions: str
    rainy_days: int
    summary: str

    @classmethod
    def from_artifact(cls, data: dict[str, Any], summary: str) -> Forecast:
        return cls(
            city=str(data["city"]),
            low_c=float(data["lowC"]),
            high_c=float(data["highC"]),
            conditions=str(data.get("conditions", "")),
            rainy_days=int(data.get("rainyDays", 0)),
            summary=summary,
        )


class Advisor(Protocol):
    """Turns a traveller's request and the forecast into advice: the language-model hook."""

    async def advise(self, request: str, forecast: Forecast) -> str: ...


class RuleBasedAdvisor:
    """Packing advice from the temperatures and the rain, by fixed rules."""

    async def advise(self, request: str, forecast: Forecast) -> str:
        items = self.clothes(forecast)
        lines = [forecast.summary, "Pack:", *(f"- {item}" for item in items)]
        return "\n".join(lines)

    def clothes(self, forecast: Forecast) -> list[str]:
        high, low = forecast.high_c, forecast.low_c
        if high >= 28:
            items = ["light, breathable shirts and shorts", "a sun hat and sunscreen"]
        elif high >= 20:
            items = ["t-shirts and light trousers", "one light layer for the evening"]
        elif high >= 12:
            items = ["long-sleeved shirts and a light sweater to layer", "a light jacket"]
        elif high >= 5:
            items = ["a warm coat", "sweaters", "a scarf"]
        else:
            items = ["a winter coat", "thermal layers", "a warm hat and gloves"]
        if 12 <= high < 28 and low < 10:
            items.append("something warm for the cold mornings and evenings")
        conditions = forecast.conditions.lower()
        if "snow" in conditions:
            items.append("waterproof boots")
        elif forecast.rainy_days >= 2 or "rain" in conditions or "shower" in conditions:
            items.append("a compact umbrella or a rain jacket")
        items.append("comfortable walking shoes")
        return items


def make_agent(weather_url: str, *, advisor: Advisor | None = None, timeout: float = 30.0) -> Agent:
    """A Travel Agent asking the Weather Agent at ``weather_url`` (within ``timeout`` s)."""
    chosen: Advisor = advisor if advisor is not None else RuleBasedAdvisor()
    agent = Agent(
        "Travel Agent",
        description="Says what to pack for a trip, from the Weather Agent's forecast",
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )

    @agent.skill(
        description="Packing advice for a trip: where you are going, and what to bring.",
        tags=["travel", "packing", "agent-to-agent"],
        examples=["I want to travel to Tokyo next week, what kind of clothes should I bring?"],
    )
    async def pack(text: str, ctx: TaskContext) -> None:
        destination = find_destination(text)
        while destination is None:
            answer = (await ctx.ask("Where are you travelling to?")).text.strip()
            destination = find_destination(answer) or answer or None
        await ctx.update(f"Asking the Weather Agent about {destination}")
        try:
            async with Client.connect(weather_url, timeout=timeout) as weather:
                reply = await weather.send(destination, data={"city": destination})
        except PeerwireError as exc:
            await ctx.fail(f"the Weather Agent at {weather_url} could not be asked: {exc}")
            return
        forecast = _forecast(reply)
        if isinstance(forecast, str):
            await ctx.fail(f"the Weather Agent has no forecast for {destination}: {forecast}")
            return
        advice = await chosen.advise(text, forecast)
        await ctx.add_artifact(
            advice, name="packing-list", artifact_id="packing-list", last_chunk=True
        )
        await ctx.complete()

    return agent


def _forecast(reply: Task | Message) -> Forecast | str:
    """The forecast in the Weather Agent's answer, or why there is none."""
    if isinstance(reply, Message):
        return reply.text or "it replied without a forecast"
    said = reply.status.message.text if reply.status.message is not None else ""
    if reply.status.state is not TaskState.COMPLETED:
        return said or f"its task ended {reply.status.state.value}"
    for artifact in reply.artifacts:
        data = next((p.data for p in artifact.parts if isinstance(p.data, dict)), None)
        if data is not None:
            try:
                return Forecast.from_artifact(data, artifact.text)
            except (KeyError, TypeError, ValueError) as exc:
                return f"its forecast could not be read ({type(exc).__name__}: {exc})"
    return "its answer carried no forecast data"


agent = make_agent(os.environ.get("WEATHER_URL", DEFAULT_WEATHER_URL))
