"""Sample agents, installed with peerwire: ``peerwire serve peerwire.samples.glossary:agent``.

``glossary`` defines Java terms; ``brief`` asks the Glossary Agent for each of several terms
(an agent that calls another); ``weather`` and ``travel`` are a second such pair;
``delivery`` is a signed, OpenID Connect-protected agent that asks for input and waits for an
approval (it needs the ``peerwire[security]`` extra). ``peerwire demo`` runs the first pair
and walks through the protocol with them. ``fulfillment`` is an order orchestrator delegating
to a risk, an inventory and a logistics agent (``peerwire demo fulfillment`` runs it).

They are examples to read and copy, not API: each module is one agent written as a user
would write it, importing only from ``peerwire``'s public API.
"""
