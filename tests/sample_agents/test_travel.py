"""The Travel Agent asking the Weather Agent (peerwire.samples.travel and .weather)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from peerwire import Client, Task, TaskState
from peerwire.cli.serve import load_agent
from peerwire.samples.travel import Forecast, RuleBasedAdvisor, find_destination, make_agent
from peerwire.samples.weather import agent as weather_agent
from peerwire.testing import live_server

TIMEOUT_S = 30.0
TOKYO_REQUEST = "I want to travel to Tokyo next week, what kind of clothes should I bring?"


@pytest.fixture
async def weather_url() -> AsyncIterator[str]:
    async with live_server(weather_agent, shutdown_grace=1.0) as url:
        yield url


async def _send(url: str, text: str, **options: Any) -> Task:
    async with Client.connect(url, timeout=TIMEOUT_S) as client:
        task = await client.send(text, **options)
    assert isinstance(task, Task)
    return task


async def test_the_tokyo_trip_end_to_end(weather_url: str) -> None:
    async with live_server(make_agent(weather_url), shutdown_grace=1.0) as travel_url:
        task = await _send(travel_url, TOKYO_REQUEST)
    assert task.status.state is TaskState.COMPLETED, task.status
    [artifact] = task.artifacts
    assert artifact.name == "packing-list"
    assert artifact.text.splitlines() == [
        "Tokyo next week: 11 to 19 °C, mild with showers, rain on 3 of 7 days.",
        "Pack:",
        "- long-sleeved shirts and a light sweater to layer",
        "- a light jacket",
        "- a compact umbrella or a rain jacket",
        "- comfortable walking shoes",
    ]
    async with Client.connect(weather_url) as weather:
        asked = [t async for t in weather.list_tasks()]
    assert len(asked) == 1, "one call to the Weather Agent"
    message = asked[0].history[0]
    assert (message.text, message.data) == ("Tokyo", {"city": "Tokyo"})


async def test_the_advisor_is_the_hook_for_a_language_model(weather_url: str) -> None:
    seen: list[tuple[str, Forecast]] = []

    class ModelAdvisor:
        async def advise(self, request: str, forecast: Forecast) -> str:
            seen.append((request, forecast))
            return f"model says: pack for {forecast.low_c:g}-{forecast.high_c:g} C"

    async with live_server(
        make_agent(weather_url, advisor=ModelAdvisor()), shutdown_grace=1.0
    ) as travel_url:
        task = await _send(travel_url, "Flying to Cairo soon. What should I wear?")
    assert task.artifacts[0].text == "model says: pack for 20-33 C"
    [(request, forecast)] = seen
    assert request == "Flying to Cairo soon. What should I wear?"
    assert (forecast.city, forecast.rainy_days, forecast.conditions) == (
        "Cairo",
        0,
        "hot and sunny",
    )


async def test_an_unknown_destination_fails_naming_the_weather_agent(weather_url: str) -> None:
    async with live_server(make_agent(weather_url), shutdown_grace=1.0) as travel_url:
        task = await _send(travel_url, "I am going to Atlantis next week")
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert task.status.message.text.startswith(
        "the Weather Agent has no forecast for Atlantis: I have no forecast for 'Atlantis'"
    )


async def test_no_destination_asks_where_then_continues(weather_url: str) -> None:
    async with live_server(make_agent(weather_url), shutdown_grace=1.0) as travel_url:
        asked = await _send(travel_url, "what clothes should I bring?")
        assert asked.status.state is TaskState.INPUT_REQUIRED
        assert asked.status.message is not None
        assert asked.status.message.text == "Where are you travelling to?"
        done = await _send(travel_url, "Oslo", task_id=asked.id)
    assert (done.id, done.status.state) == (asked.id, TaskState.COMPLETED)
    packing = done.artifacts[0].text
    assert packing.startswith("Oslo next week: -5 to 1 °C")
    assert "- a winter coat" in packing and "- waterproof boots" in packing


async def test_an_unreachable_weather_agent_fails_the_trip() -> None:
    agent = make_agent("http://127.0.0.1:9", timeout=5)
    async with live_server(agent, shutdown_grace=1.0) as travel_url:
        task = await _send(travel_url, TOKYO_REQUEST)
    assert task.status.state is TaskState.FAILED
    assert task.status.message is not None
    assert task.status.message.text.startswith(
        "the Weather Agent at http://127.0.0.1:9 could not be asked:"
    )


async def test_the_weather_agent_takes_the_city_as_data_or_text(weather_url: str) -> None:
    by_data = await _send(weather_url, "", data={"city": "Paris"})
    by_text = await _send(weather_url, "paris")
    for task in (by_data, by_text):
        assert task.status.state is TaskState.COMPLETED
        [artifact] = task.artifacts
        data = next(p.data for p in artifact.parts if p.text is None)
        assert data == {
            "city": "Paris",
            "lowC": 8,
            "highC": 16,
            "conditions": "cloudy and cool",
            "rainyDays": 4,
        }


@pytest.mark.parametrize(
    ("request_text", "destination"),
    [
        (TOKYO_REQUEST, "Tokyo"),
        ("Trip to New York in May", "New York"),
        ("We are flying to Sydney", "Sydney"),
        ("Visiting Reykjavik, any tips?", "Reykjavik"),
        ("What should I pack for a week in Paris?", "Paris"),
        ("what should I pack?", None),
    ],
)
def test_find_destination(request_text: str, destination: str | None) -> None:
    assert find_destination(request_text) == destination


@pytest.mark.parametrize(
    ("low", "high", "conditions", "rain", "expected"),
    [
        (25, 34, "hot and humid", 0, ["- a sun hat and sunscreen"]),
        (-5, 1, "cold with snow", 3, ["- a winter coat", "- waterproof boots"]),
        (8, 18, "dry", 0, ["- something warm for the cold mornings and evenings"]),
    ],
)
async def test_rule_based_advice(
    low: float, high: float, conditions: str, rain: int, expected: list[str]
) -> None:
    forecast = Forecast("X", low, high, conditions, rain, "X next week.")
    advice = await RuleBasedAdvisor().advise("", forecast)
    for line in expected:
        assert line in advice.splitlines()
    assert "umbrella" not in advice or rain


def test_the_samples_load_as_peerwire_serve_loads_them() -> None:
    assert load_agent("peerwire.samples.weather:agent").name == "Weather Agent"
    assert load_agent("peerwire.samples.travel:agent").name == "Travel Agent"
