"""Sample agents; serve one from the repository root: ``peerwire serve samples.glossary:agent``.

``glossary`` defines Java terms; ``brief`` asks the Glossary Agent for each of several terms
(an agent that calls another); ``weather`` and ``travel`` are a second such pair. ``peerwire
demo`` runs the first pair and walks through the protocol with them.
"""
