"""The column-level lineage graph (networkx). Pure: no Spark, no file I/O."""
