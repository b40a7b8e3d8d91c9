"""Where piitracer may act on files: locations as absolute paths or URIs, and the guard that keeps
every path a step can touch under the dataset's catalogued location and the warehouse roots."""
