//! NVRTC compilation (being written).
