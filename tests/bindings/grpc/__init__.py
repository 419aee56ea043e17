"""Tests of the gRPC binding's proto, generated code, converters and status codec."""
