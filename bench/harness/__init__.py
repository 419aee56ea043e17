"""The benchmark harness: A2A servers over the JSON-RPC binding, side by side, as ratios.

    bench/run.sh [OPTIONS]            # the entry point (installs wrk if missing)
    python -m bench.harness --help    # the same harness, its options

Stdlib only, so it runs under any Python 3.11+. It starts every target fresh for every
scenario (a command with ``{port}``, pinned with taskset to the server CPUs), drives it over
loopback with wrk and a small httpx client (pinned to the client CPUs), validates every
response and stream, and prints one table of absolute figures and ratios against a
baseline. Targets are interleaved scenario by scenario and, with ``--repeat N``, run by run
(medians reported), so slow drifts of a shared machine hit every target alike. The method
and the bench contract every target follows are in bench/README.md.

Modules, one job each:

  cli        the command line: targets, the interleaved loop, the exit status
  catalog    named targets: peerwire's (working tree and other revisions), the a2a-sdk
             echo agent and the floor
  targets    one target: start it, find its JSON-RPC URL, stop it, read its log
  scenarios  the scenarios a/e, l, b, c, d, p
  wrk        wrk and its Lua script (a2a.lua): run, parse
  client     the httpx client: exact-count SendMessage, stream validation (a subprocess)
  profile    py-spy: record, then fold the raw stacks into tables
  report     medians, the table, the notes under it
  proc       what /proc says: CPU of processes and of the machine, RSS, who listens
  loopback   the guard: every URL must be a loopback address
  venvs      virtual environments built on first use (the reference targets')
  revisions  another git revision of peerwire, exported and installed once per commit
"""
