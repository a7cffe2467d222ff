//! `gpumodel collect --suite` — the built-in microbenchmark suite (not built yet).
