"""The Flink side of cdc: the same job as a Flink SQL script (``--print-sql``) or run on a cluster
through its SQL Gateway (``--on-flink``).

A layer between the engine and the formats (``cli → engine → flink → formats → core``): it reads
specs and column types, and the engine calls it (``engine/scripts.py``), handing it the inputs as
the engine reads them. ``sql/``: the SQL builders, one module per command; ``print_sql``: a
command's script from its spec and input; ``gateway``: the SQL Gateway client; ``on_flink``: a
script run on a cluster, its rows shaped as the local run writes them. ``harness/`` (not
installed) runs the printed scripts in Flink itself and holds their rows against cdc's.
"""
