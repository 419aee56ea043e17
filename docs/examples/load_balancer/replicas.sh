#!/bin/sh
# Two replicas of one agent behind nginx.conf, sharing one PostgreSQL schema and one Redis
# prefix (docs/howto/load-balancer.md). Run from the folder of the agent's module.
set -eu
STORE="${STORE:-postgresql://app@db:5432/a2a?schema=peerwire}"
BUS="${BUS:-redis://cache:6379/0?prefix=peerwire}"
# The address callers reach gRPC at: the balancer's, not a replica's.
PUBLIC_GRPC="${PUBLIC_GRPC:-agents.example.com:50051}"

peerwire db upgrade --store "$STORE"  # once, before the replicas start

peerwire serve tutorial_agent:agent --host 127.0.0.1 --port 8001 --grpc-port 50061 \
    --store "$STORE" --bus "$BUS" \
    --trusted-proxy 127.0.0.1 --grpc-public-address "$PUBLIC_GRPC" &
peerwire serve tutorial_agent:agent --host 127.0.0.1 --port 8002 --grpc-port 50062 \
    --store "$STORE" --bus "$BUS" \
    --trusted-proxy 127.0.0.1 --grpc-public-address "$PUBLIC_GRPC" &
wait
