"""Two small agents for the mounting how-to: one host application serves both."""

from peerwire import Agent

glossary = Agent("Glossary Agent", description="Defines terms")
weather = Agent("Weather Agent", description="Forecasts the weather")


@glossary.skill()
async def define(text: str) -> str:
    return f"{text.strip()}: a word worth defining."


@weather.skill()
async def forecast(text: str) -> str:
    return f"Sunny in {text.strip() or 'Lisbon'} tomorrow."
