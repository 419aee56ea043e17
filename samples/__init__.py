"""Sample agents; serve one from the repository root: ``peerwire serve samples.glossary:agent``."""
