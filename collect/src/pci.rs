//! PCI bus ids: how the collector finds the NVML device that is the CUDA device the program runs on.
//!
//! CUDA and NVML number GPUs independently. CUDA's ordinals follow `CUDA_VISIBLE_DEVICES` and
//! `CUDA_DEVICE_ORDER` (fastest first by default); NVML's indices ignore both and follow the PCI bus. On a
//! multi-GPU node, "device 0" can therefore be two different boards, and the power samples would belong to
//! another GPU than the counters. The PCI bus id names the physical board in both APIs, but each writes it
//! differently: `cuDeviceGetPCIBusId` gives `0000:65:00.0` (4-digit domain), NVML's `nvmlPciInfo_t.busId`
//! gives `00000000:65:00.0` (8-digit domain), and case varies. [`PciBusId`] parses either form into the four
//! numbers, so ids compare by value, not by spelling.

use std::fmt;
use std::str::FromStr;

/// A PCI address `domain:bus:device.function`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciBusId {
    /// PCI segment (domain): 16 bits on most systems, 32 in NVML's format.
    pub domain: u32,
    pub bus: u8,
    /// Device number on the bus, 0–31.
    pub device: u8,
    /// Function number, 0–7.
    pub function: u8,
}

/// A string that is not a PCI bus id (the text is in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a PCI bus id (expected domain:bus:device.function in hex, e.g. 0000:65:00.0)")]
pub struct ParsePciBusIdError(pub String);

fn hex_field(s: &str, max_digits: usize, max: u32) -> Option<u32> {
    if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok().filter(|v| *v <= max)
}

impl FromStr for PciBusId {
    type Err = ParsePciBusIdError;

    /// Accepts `domain:bus:device.function` with a domain of 1 to 8 hex digits, or `bus:device.function`
    /// (domain 0), in either case. Surrounding whitespace and NUL padding (C buffers) are ignored.
    fn from_str(text: &str) -> Result<PciBusId, ParsePciBusIdError> {
        let err = || ParsePciBusIdError(text.to_string());
        let s = text.trim_matches(|c: char| c == '\0' || c.is_whitespace());
        let (head, function) = s.rsplit_once('.').ok_or_else(err)?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, device) = match parts.as_slice() {
            [d, b, v] => (hex_field(d, 8, u32::MAX), *b, *v),
            [b, v] => (Some(0), *b, *v),
            _ => return Err(err()),
        };
        let domain = domain.ok_or_else(err)?;
        let bus = hex_field(bus, 2, 0xff).ok_or_else(err)?;
        let device = hex_field(device, 2, 0x1f).ok_or_else(err)?;
        let function = hex_field(function, 1, 7).ok_or_else(err)?;
        Ok(PciBusId { domain, bus: bus as u8, device: device as u8, function: function as u8 })
    }
}

impl fmt::Display for PciBusId {
    /// NVML's spelling (`nvmlPciInfo_t.busId`, as `nvidia-smi` prints it): `00000000:65:00.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08X}:{:02X}:{:02X}.{:X}", self.domain, self.bus, self.device, self.function)
    }
}

impl PciBusId {
    /// The CUDA driver's spelling (`cuDeviceGetPCIBusId`): `0000:65:00.0`; wider domains keep all digits.
    pub fn cuda_form(&self) -> String {
        format!("{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

/// Whether two bus-id strings, in CUDA's or NVML's spelling, name the same PCI device. A string that is
/// not a bus id matches nothing.
pub fn same_pci_bus_id(a: &str, b: &str) -> bool {
    match (a.parse::<PciBusId>(), b.parse::<PciBusId>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The first candidate `(index, bus id as reported)` whose bus id is `target`. Candidates whose id does
/// not parse are skipped.
pub fn find_by_pci_bus_id<'a, I>(target: &PciBusId, candidates: I) -> Option<u32>
where
    I: IntoIterator<Item = (u32, &'a str)>,
{
    candidates
        .into_iter()
        .find(|(_, id)| id.parse::<PciBusId>().is_ok_and(|id| id == *target))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(domain: u32, bus: u8, device: u8, function: u8) -> PciBusId {
        PciBusId { domain, bus, device, function }
    }

    #[test]
    fn parses_cuda_and_nvml_spellings_alike() {
        // cuDeviceGetPCIBusId's 4-digit domain and NVML's 8-digit domain.
        assert_eq!("0000:65:00.0".parse(), Ok(id(0, 0x65, 0, 0)));
        assert_eq!("00000000:65:00.0".parse(), Ok(id(0, 0x65, 0, 0)));
        assert_eq!("0001:b3:1f.7".parse(), Ok(id(1, 0xb3, 0x1f, 7)));
        // The legacy short form without a domain.
        assert_eq!("65:00.0".parse(), Ok(id(0, 0x65, 0, 0)));
        // A C buffer's NUL padding and a trailing newline.
        assert_eq!("0000:65:00.0\0\0\0".parse(), Ok(id(0, 0x65, 0, 0)));
        assert_eq!(" 00000000:0A:00.0\n".parse(), Ok(id(0, 0x0a, 0, 0)));
    }

    #[test]
    fn matching_ignores_domain_width_and_case() {
        assert!(same_pci_bus_id("0000:65:00.0", "00000000:65:00.0"));
        assert!(same_pci_bus_id("0000:b3:00.0", "00000000:B3:00.0"));
        assert!(same_pci_bus_id("00000000:B3:00.0", "0000:b3:00.0"));
        assert!(same_pci_bus_id("0000:0a:00.0", "00000000:0A:00.0"));
        assert!(same_pci_bus_id("0000:65:00.0", "0000:65:00.0"));
    }

    #[test]
    fn different_devices_do_not_match() {
        assert!(!same_pci_bus_id("0000:65:00.0", "00000000:66:00.0")); // bus
        assert!(!same_pci_bus_id("0000:65:00.0", "00000001:65:00.0")); // domain
        assert!(!same_pci_bus_id("0000:65:00.0", "00000000:65:01.0")); // device
        assert!(!same_pci_bus_id("0000:65:00.0", "00000000:65:00.1")); // function
        // A wide domain is not truncated into a match.
        assert!(!same_pci_bus_id("00010000:65:00.0", "0000:65:00.0"));
    }

    #[test]
    fn non_ids_match_nothing() {
        for bad in [
            "",
            "GPU-5d8a",
            "0000:65:00",
            "0000:65:00.8",
            "0000:65:20.0",
            "0000:165:00.0",
            "000000000:65:00.0",
            "0000:6g:00.0",
            "0000::00.0",
            "1:2:3:4.0",
        ] {
            assert!(bad.parse::<PciBusId>().is_err(), "{bad:?} parsed");
            assert!(!same_pci_bus_id(bad, bad), "{bad:?} matched");
        }
        let e = "nope".parse::<PciBusId>().unwrap_err().to_string();
        assert!(e.contains("'nope' is not a PCI bus id"), "{e}");
    }

    #[test]
    fn prints_nvml_and_cuda_spellings() {
        let b3 = id(0, 0xb3, 0, 0);
        assert_eq!(b3.to_string(), "00000000:B3:00.0");
        assert_eq!(b3.cuda_form(), "0000:b3:00.0");
        let wide = id(0x1_0000, 0x65, 0x1f, 7);
        assert_eq!(wide.to_string(), "00010000:65:1F.7");
        assert_eq!(wide.cuda_form(), "10000:65:1f.7");
        // Both spellings read back as the same id.
        assert_eq!(wide.to_string().parse(), Ok(wide));
        assert_eq!(wide.cuda_form().parse(), Ok(wide));
    }

    /// CUDA's device 0 is often not NVML's device 0 (fastest-first order, CUDA_VISIBLE_DEVICES): the NVML
    /// index is found by bus id, whatever the order.
    #[test]
    fn finds_the_nvml_index_with_the_same_bus_id() {
        let nvml =
            [(0, "00000000:17:00.0"), (1, "garbage"), (2, "00000000:65:00.0"), (3, "00000000:CA:00.0")];
        let cuda = "0000:ca:00.0".parse().unwrap();
        assert_eq!(find_by_pci_bus_id(&cuda, nvml.iter().copied()), Some(3));
        let cuda = "0000:65:00.0".parse().unwrap();
        assert_eq!(find_by_pci_bus_id(&cuda, nvml.iter().copied()), Some(2));
        let absent = "0000:66:00.0".parse().unwrap();
        assert_eq!(find_by_pci_bus_id(&absent, nvml.iter().copied()), None);
        assert_eq!(find_by_pci_bus_id(&absent, []), None);
    }
}
