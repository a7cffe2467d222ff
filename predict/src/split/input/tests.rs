use super::*;
use crate::split::{Error, Objective};

#[test]
fn a_file_with_two_cases_or_none_is_refused() {
    let f = parse("[cg]\nthreads = 1\n[cpu]\nrate = 1\n", "t").unwrap();
    assert!(matches!(f.run(Objective::TIME), Err(Error::Case(_))));
    let f = parse("title = \"x\"\n", "t").unwrap();
    assert!(matches!(f.run(Objective::TIME), Err(Error::Case(_))));
    assert!(matches!(parse("[cpu]\nrat = 1\n", "t"), Err(Error::Parse { .. })));
}

#[test]
fn a_share_step_that_does_not_divide_one_is_refused() {
    let f = parse(
        "static_power_w = 1\n[workload]\nshare_step = 0.3\n[cpu]\nrate = 1\ndynamic_power_w = 1\n[gpu]\nrate = 1\ndynamic_power_w = 1\n",
        "t",
    )
    .unwrap();
    assert!(matches!(f.run(Objective::TIME), Err(Error::BadValue { .. })));
}
