"""Development tools that are not part of the product's runtime: benchmarks, load generators
and the helpers that start and stop ``redis-server`` processes (tests, ``truco bench``,
``deploy/local_cluster.py``)."""
