//! Resident blocks and warps per SM for a launch, like the CUDA occupancy calculator.

use crate::arch::ArchProfile;
use crate::error::{Error, Result};
use crate::profile::Launch;
use serde::Serialize;

/// Resident blocks and warps per SM, like the CUDA occupancy calculator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Occupancy {
    pub warps_per_block: u32,
    pub active_blocks_per_sm: u32,
    pub active_warps_per_sm: u32,
    /// Which ceiling set the active blocks (`warps`, `blocks`, `registers`, `shared memory`,
    /// `--warps`, `grid size`).
    pub limiter: String,
    /// Blocks per SM each ceiling allows.
    pub ceilings: Vec<(String, u32)>,
    /// SMs that receive blocks.
    pub active_sms: u32,
    /// Rounds (waves) of resident blocks per SM.
    pub rounds: f64,
    /// Blocks in the grid (the last wave runs `blocks − (rounds − 1) · active_sms · active_blocks_per_sm`).
    pub blocks: u64,
    /// Warps that saturate DRAM bandwidth: `CYC_load · (bandwidth / active SMs) / 128`
    /// bytes per warp request, at the default clocks. More active warps than this do not speed up
    /// the memory side.
    pub bandwidth_warps: f64,
}

/// Active blocks and warps per SM for a launch, with at most `warps_cap` active warps per SM (`--warps`).
pub fn occupancy(launch: &Launch, arch: &ArchProfile, warps_cap: Option<u32>) -> Result<Occupancy> {
    let threads = launch.threads_per_block();
    let blocks = launch.blocks();
    if threads == 0 || blocks == 0 {
        return Err(Error::Invalid(
            "launch.grid and launch.block must be at least 1 in every dimension".into(),
        ));
    }
    let over = |what: &str, got: f64, limit: f64| {
        Error::Invalid(format!(
            "the launch is over a hardware limit of {}: {what} is {got}, the limit is {limit}",
            arch.display_name
        ))
    };
    if f64::from(threads) > arch.max_threads_per_block.value {
        return Err(over("threads per block", f64::from(threads), arch.max_threads_per_block.value));
    }
    if f64::from(launch.registers_per_thread) > arch.max_registers_per_thread.value {
        return Err(over(
            "registers per thread",
            f64::from(launch.registers_per_thread),
            arch.max_registers_per_thread.value,
        ));
    }
    if f64::from(launch.shared_mem_per_block) > arch.max_shared_mem_per_block.value {
        return Err(over(
            "shared memory per block (bytes)",
            f64::from(launch.shared_mem_per_block),
            arch.max_shared_mem_per_block.value,
        ));
    }
    let wpb = arch.warps_per_block(threads);
    let max_warps = arch.max_warps_per_sm.value as u32;
    let mut ceilings: Vec<(String, u32)> =
        vec![("warps".into(), max_warps / wpb), ("blocks".into(), arch.max_blocks_per_sm.value as u32)];
    if launch.registers_per_thread > 0 {
        let unit = arch.register_alloc_unit.value;
        let per_warp = (f64::from(launch.registers_per_thread) * arch.warp_size.value / unit).ceil() * unit;
        let warps = (arch.registers_per_sm.value / per_warp).floor() as u32;
        ceilings.push(("registers".into(), warps / wpb));
    }
    if launch.shared_mem_per_block > 0 {
        let b = (arch.shared_mem_per_sm.value / f64::from(launch.shared_mem_per_block)).floor() as u32;
        ceilings.push(("shared memory".into(), b));
    }
    if let Some(cap) = warps_cap {
        if cap == 0 || cap > max_warps {
            return Err(Error::Invalid(format!(
                "--warps {cap} is outside 1..={max_warps}, the warps per SM of {}",
                arch.display_name
            )));
        }
        if cap < wpb {
            return Err(Error::Invalid(format!(
                "--warps {cap} is fewer than one block of this kernel ({wpb} warps of {threads} threads): use --warps ≥ {wpb}"
            )));
        }
        ceilings.push(("--warps".into(), cap / wpb));
    }
    let active_sms = (arch.sm_count.value as u64).min(blocks) as u32;
    let blocks_per_sm = blocks.div_ceil(u64::from(active_sms)).min(u64::from(u32::MAX)) as u32;
    ceilings.push(("grid size".into(), blocks_per_sm));
    let (limiter, active_blocks) = ceilings
        .iter()
        .min_by_key(|(_, b)| *b)
        .map(|(n, b)| (n.clone(), *b))
        .unwrap_or_else(|| ("warps".into(), 1));
    if active_blocks == 0 {
        return Err(Error::Invalid(format!(
            "not one block fits on an SM of {}: the {limiter} limit allows 0 blocks of {threads} threads \
             ({} registers/thread, {} bytes shared memory/block)",
            arch.display_name, launch.registers_per_thread, launch.shared_mem_per_block
        )));
    }
    let rounds = (blocks as f64 / (f64::from(active_sms) * f64::from(active_blocks))).ceil();
    let per_sm_per_cycle =
        arch.bandwidth_bytes_per_s(arch.mem_mhz.value) / f64::from(active_sms) / (arch.core_mhz.value * 1e6);
    let bandwidth_warps = arch.cyc_load.value * per_sm_per_cycle / 128.0;
    Ok(Occupancy {
        warps_per_block: wpb,
        active_blocks_per_sm: active_blocks,
        active_warps_per_sm: active_blocks * wpb,
        limiter,
        ceilings,
        active_sms,
        rounds,
        blocks,
        bandwidth_warps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::tests::launch;

    #[test]
    fn occupancy_like_the_calculator() {
        let a = ArchProfile::builtin("gtx1080ti").unwrap();
        // 256 threads = 8 warps; 64 warps/SM → 8 blocks; 32 regs → 32·32 = 1024 regs/warp → 64 warps.
        let o = occupancy(&launch(10_000, 256, 32, 0), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.active_warps_per_sm), (8, 64));
        // 64 regs/thread → 2048 regs/warp → 32 warps → 4 blocks, limited by registers.
        let o = occupancy(&launch(10_000, 256, 64, 0), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.limiter.as_str()), (4, "registers"));
        // 40 KB shared per block → 96 KB / 40 KB = 2 blocks.
        let o = occupancy(&launch(10_000, 256, 0, 40 * 1024), &a, None).unwrap();
        assert_eq!((o.active_blocks_per_sm, o.limiter.as_str()), (2, "shared memory"));
        // --warps 32 caps to 4 blocks; rounds = ceil(10000 / (28 · 4)) = 90.
        let o = occupancy(&launch(10_000, 256, 0, 0), &a, Some(32)).unwrap();
        assert_eq!((o.active_warps_per_sm, o.rounds), (32, 90.0));
        // One block uses one SM.
        let o = occupancy(&launch(1, 512, 0, 0), &a, None).unwrap();
        assert_eq!((o.active_sms, o.active_warps_per_sm, o.limiter.as_str()), (1, 16, "grid size"));
    }

    #[test]
    fn launches_over_the_limits_name_the_limit() {
        let a = ArchProfile::builtin("c2075").unwrap();
        let msg = occupancy(&launch(1, 2048, 0, 0), &a, None).unwrap_err().to_string();
        assert!(msg.contains("threads per block is 2048, the limit is 1024"), "{msg}");
        let msg = occupancy(&launch(1, 256, 100, 0), &a, None).unwrap_err().to_string();
        assert!(msg.contains("registers per thread is 100, the limit is 63"), "{msg}");
        let msg = occupancy(&launch(1, 256, 0, 0), &a, Some(49)).unwrap_err().to_string();
        assert!(msg.contains("1..=48"), "{msg}");
    }
}
