"""
harness: the Python harness shared by the integration tests
(tests/integration/) and the capacity benchmark (bench/run): processes,
a private PostgreSQL cluster, nginx, HTTP and FastCGI clients, keys and
tokens, the API contract and TAP. Python 3, standard library only. It
runs in the test or benchmark process itself, never in cfpm.

Importers put the source tree's root on sys.path, computed from their
own file's location (tests/integration/cfpmtest.py, bench/run,
tests/integration/test_bench.py), so it works from any build directory.
What only the integration tests share (the Stack, client loads, the API
check set) lives beside them in tests/integration/, in modules whose
names do not start with test_; a test file never imports another
(tests/unit/test_imports.py).

Modules; each imports only the standard library and modules above it:
  paths     where the source tree, the build and the tools are
  proc      spawn, run, stop (pid-reuse safe), cleanup on any exit; log
            files' tails and text
  procfs    /proc readers: process state, groups, trees, CPU, memory
  tap       the TAP producer
  http      HTTP client: Response, requests, raw requests, a response's
            outcome (status, timeout or connection error)
  fcgi      FastCGI responder client (straight to cfpm's socket)
  contract  the API's constants, seeded rows, response checks, the gate
  keys      key pairs, JWKS and tokens (cfpm-token, openssl fallback)
  pg        a private PostgreSQL 15 cluster run as the postgres user
  nginx     nginx configurations and instances
  deb       cfpm's Debian package built from the tree
  nspawn    a fresh Debian booted with systemd-nspawn: cached root,
            packages fetched on the host, commands and HTTP inside
  phpfpm    Debian's php-fpm8.2 with its status and ping pages, the
            reference the status page is compared with
"""
