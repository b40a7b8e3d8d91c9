"""Everything that reads or changes live tables (Spark, delta-rs, pyiceberg, files)."""
