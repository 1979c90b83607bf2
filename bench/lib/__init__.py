"""bench/lib: the modules of bench/run (see bench/README.md, "Code")."""
