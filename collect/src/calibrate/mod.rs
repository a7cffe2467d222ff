//! Timing-constant calibration (being written).
