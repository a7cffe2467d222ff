//! CPU/GPU work split (being written).
