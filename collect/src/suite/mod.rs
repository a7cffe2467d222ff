//! Microbenchmark suite (being written).
