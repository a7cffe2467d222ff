//! Physical units as types, so that a watt never meets a millisecond by accident.
//!
//! NVML speaks milliwatts and millijoules; those are converted once, at the `collect` boundary, with the
//! constructors named after their unit (`Watts::from_milliwatts`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, Div, Mul, Sub};

macro_rules! unit {
    ($(#[$doc:meta])* $name:ident, $symbol:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub f64);

        impl $name {
            /// The raw number in this unit.
            pub fn get(self) -> f64 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match f.precision() {
                    Some(p) => write!(f, "{:.*} {}", p, self.0, $symbol),
                    None => write!(f, "{} {}", self.0, $symbol),
                }
            }
        }

        impl Add for $name {
            type Output = $name;
            fn add(self, o: $name) -> $name {
                $name(self.0 + o.0)
            }
        }

        impl Sub for $name {
            type Output = $name;
            fn sub(self, o: $name) -> $name {
                $name(self.0 - o.0)
            }
        }

        impl Mul<f64> for $name {
            type Output = $name;
            fn mul(self, k: f64) -> $name {
                $name(self.0 * k)
            }
        }

        impl Div<f64> for $name {
            type Output = $name;
            fn div(self, k: f64) -> $name {
                $name(self.0 / k)
            }
        }
    };
}

unit!(
    /// Power in watts.
    Watts, "W"
);
unit!(
    /// Energy in joules.
    Joules, "J"
);
unit!(
    /// Time in seconds.
    Seconds, "s"
);
unit!(
    /// Clock frequency in megahertz.
    Mhz, "MHz"
);

impl Watts {
    /// NVML reports power in milliwatts.
    pub fn from_milliwatts(mw: u32) -> Watts {
        Watts(f64::from(mw) / 1000.0)
    }
}

impl Joules {
    /// NVML reports energy in millijoules.
    pub fn from_millijoules(mj: u64) -> Joules {
        Joules(mj as f64 / 1000.0)
    }
}

impl Seconds {
    /// From milliseconds (NV-DVFS reports kernel time in ms).
    pub fn from_millis(ms: f64) -> Seconds {
        Seconds(ms / 1000.0)
    }
}

/// E = P · T (paper eq. 5.14).
impl Mul<Seconds> for Watts {
    type Output = Joules;
    fn mul(self, t: Seconds) -> Joules {
        Joules(self.0 * t.0)
    }
}

/// P̄ = E / T.
impl Div<Seconds> for Joules {
    type Output = Watts;
    fn div(self, t: Seconds) -> Watts {
        Watts(self.0 / t.0)
    }
}

impl Mhz {
    /// Cycles per second.
    pub fn hz(self) -> f64 {
        self.0 * 1e6
    }

    /// How long `cycles` clock cycles take at this frequency.
    pub fn cycles_to_seconds(self, cycles: f64) -> Seconds {
        Seconds(cycles / self.hz())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_is_power_times_time_and_back() {
        let e = Watts(150.0) * Seconds(2.0);
        assert_eq!(e, Joules(300.0));
        assert_eq!(e / Seconds(4.0), Watts(75.0));
    }

    #[test]
    fn nvml_units_convert_once() {
        assert_eq!(Watts::from_milliwatts(123_456), Watts(123.456));
        assert_eq!(Joules::from_millijoules(2_500), Joules(2.5));
        assert_eq!(Mhz(1000.0).cycles_to_seconds(2000.0), Seconds(2e-6));
    }

    #[test]
    fn display_carries_the_unit() {
        assert_eq!(format!("{:.1}", Watts(12.345)), "12.3 W");
    }
}
