use super::*;

#[test]
fn slowdowns_read_as_percent_or_fraction() {
    assert_eq!(parse_slowdown("5%"), Ok(0.05));
    assert_eq!(parse_slowdown("0.05"), Ok(0.05));
    assert!(parse_slowdown("fast").unwrap_err().contains("5%"));
    assert!(parse_slowdown("-3%").is_err());
}

#[test]
fn gpu_names_match_by_their_model_number() {
    assert!(gpu_matches("Tesla V100-SXM2-16GB", "NVIDIA Tesla V100 (GV100)"));
    assert!(!gpu_matches("NVIDIA H100 80GB HBM3", "NVIDIA Tesla V100 (GV100)"));
    // A name without a model number may go with a model the user gives, but picks no shipped one.
    assert!(gpu_matches("Fake GPU", "NVIDIA Tesla V100 (GV100)"));
    assert!(!same_gpu_model("Fake GPU", "NVIDIA Tesla V100 (GV100)"));
    assert!(same_gpu_model("Tesla V100-PCIE-16GB", "NVIDIA Tesla V100 (GV100)"));
}

#[test]
fn the_shipped_models_read() {
    for m in choose::shipped().unwrap() {
        assert!(m.levels.len() >= 2, "{}", m.gpu);
    }
}
