"""Wire codecs of the three A2A bindings: pure functions, no I/O."""
