"""The Weather Agent: next week's weather for a city, from a small built-in table.

Serve it (with ``peerwire[cli]`` installed, from any folder)::

    peerwire serve peerwire.samples.weather:agent --port 8002
    peerwire send http://127.0.0.1:8002 Tokyo

It is a stand-in for a real forecast service, so the Travel Agent (``peerwire.samples.travel``) has
another agent to ask: the figures are typical for each city, not a forecast, and no network
is used. A message names the city in its text, or in a data part ``{"city": "Tokyo"}``. A known
city completes the task with one artifact, ``forecast``: a sentence for people and the same
figures as data for programs (``city``, ``lowC``, ``highC``, ``conditions``, ``rainyDays``).
An unknown city fails the task; an empty message asks "Which city?".
"""

from __future__ import annotations

from dataclasses import dataclass

from peerwire import Agent, Message, Part, TaskContext

__all__ = ["CLIMATES", "Climate", "agent"]


@dataclass(frozen=True)
class Climate:
    """A week's typical weather."""

    city: str
    low_c: int
    high_c: int
    conditions: str
    rainy_days: int

    def sentence(self) -> str:
        rain = f", rain on {self.rainy_days} of 7 days" if self.rainy_days else ", no rain"
        return f"{self.city} next week: {self.low_c} to {self.high_c} °C, {self.conditions}{rain}."

    def data(self) -> dict[str, object]:
        return {
            "city": self.city,
            "lowC": self.low_c,
            "highC": self.high_c,
            "conditions": self.conditions,
            "rainyDays": self.rainy_days,
        }


CLIMATES = {
    climate.city.lower(): climate
    for climate in (
        Climate("Tokyo", 11, 19, "mild with showers", 3),
        Climate("Paris", 8, 16, "cloudy and cool", 4),
        Climate("London", 7, 14, "grey and damp", 5),
        Climate("New York", 12, 22, "mostly sunny", 2),
        Climate("Reykjavik", -2, 4, "windy with snow showers", 4),
        Climate("Cairo", 20, 33, "hot and sunny", 0),
        Climate("Singapore", 25, 31, "hot and humid with thunderstorms", 5),
        Climate("Sydney", 17, 25, "warm and bright", 2),
        Climate("Oslo", -5, 1, "cold with snow", 3),
    )
}

agent = Agent(
    "Weather Agent",
    description="Says what next week's weather is like in a city",
    default_input_modes=["text/plain", "application/json"],
    default_output_modes=["text/plain", "application/json"],
)


@agent.skill(
    description="Next week's weather in a city: temperatures, conditions, rainy days.",
    tags=["weather", "forecast"],
    examples=["Tokyo", '{"city": "Paris"}'],
)
async def forecast(message: Message, ctx: TaskContext) -> None:
    city = _city(message)
    while not city:
        city = _city(await ctx.ask("Which city?"))
    climate = CLIMATES.get(city.lower())
    if climate is None:
        known = ", ".join(c.city for c in CLIMATES.values())
        await ctx.fail(f"I have no forecast for '{city}' (I know {known}).")
        return
    await ctx.add_artifact(
        [Part(text=climate.sentence()), Part(data=climate.data(), media_type="application/json")],
        name="forecast",
        artifact_id="forecast",
        last_chunk=True,
    )
    await ctx.complete()


def _city(message: Message) -> str:
    """The city a message names: its data part's ``city``, else its text."""
    data = message.data
    if isinstance(data, dict) and isinstance(data.get("city"), str):
        return str(data["city"]).strip()
    return message.text.strip()
