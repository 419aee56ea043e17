"""Client transports: one per binding, all behind ``Transport``."""
