//! What the driver launched: the launch calls hooked, the geometry read from their parameters, and the
//! launches recorded per context (which label the Range Profiler's auto ranges).

use cudarc::cupti::sys;
use std::ffi::c_void;

/// One launch as the driver API saw it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LaunchInfo {
    pub name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers_per_thread: u32,
    pub shared_mem_bytes: u32,
}

/// Launches seen, each with the context (as an address) it was made in.
#[derive(Debug, Default)]
pub struct Launches {
    seen: Vec<(usize, LaunchInfo)>,
    /// Launches of contexts that were not profiled.
    skipped_other_context: usize,
}

impl Launches {
    pub const fn new() -> Launches {
        Launches { seen: Vec::new(), skipped_other_context: 0 }
    }

    /// Records a launch in context `ctx`.
    pub fn record(&mut self, ctx: usize, launch: LaunchInfo) {
        self.seen.push((ctx, launch));
    }

    /// The launches of `ctx`, in order (they label that context's ranges); launches of other contexts
    /// are dropped and counted as skipped.
    pub fn take_for(&mut self, ctx: usize) -> Vec<LaunchInfo> {
        let (mine, other): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.seen).into_iter().partition(|(c, _)| *c == ctx);
        self.skipped_other_context += other.len();
        mine.into_iter().map(|(_, l)| l).collect()
    }

    /// Launches of contexts never profiled, after every profiled context was taken.
    pub fn skipped(&self) -> usize {
        self.skipped_other_context + self.seen.len()
    }
}

/// The driver-API launch calls hooked, each a CUPTI callback id (`cupti_driver_cbid.h`): one auto range
/// of the Range Profiler per call, so every one must be recorded for the rows to line up with the ranges.
/// The `_ptsz` variants are the per-thread-default-stream entry points (`--default-stream per-thread`).
pub const LAUNCH_CALLBACKS: [sys::CUpti_driver_api_trace_cbid; 6] = [
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    sys::CUpti_driver_api_trace_cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
];

/// What a launch call says about the launch itself, before the function's attributes are read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchGeometry {
    /// The launched function (`CUfunction`, for `cuFuncGetAttribute`).
    pub function: cudarc::driver::sys::CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes (the launch's `sharedMemBytes`).
    pub dynamic_shared_mem_bytes: u32,
}

impl LaunchGeometry {
    /// The launch record: `static_shared_mem_bytes` is the function's `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`.
    pub fn launch(
        &self,
        name: String,
        registers_per_thread: u32,
        static_shared_mem_bytes: u32,
    ) -> LaunchInfo {
        LaunchInfo {
            name,
            grid: self.grid,
            block: self.block,
            registers_per_thread,
            shared_mem_bytes: static_shared_mem_bytes.saturating_add(self.dynamic_shared_mem_bytes),
        }
    }
}

/// Reads grid, block and dynamic shared memory from a launch callback's `functionParams`: the argument
/// list for `cuLaunchKernel` and `cuLaunchCooperativeKernel` (and their `_ptsz` forms), the
/// `CUlaunchConfig` it points to for `cuLaunchKernelEx` (CUDA 11.8+, used by `cudaLaunchKernelEx` and for
/// thread-block clusters; grid dimensions there are in blocks, as for the others). `None` for any other
/// callback id or a null pointer (the driver rejects a null config itself).
///
/// # Safety
/// `params` must be null or point to the parameter struct of the call `cbid` names, alive for the call;
/// for the `Ex` calls its `config` must be null or point to a valid `CUlaunchConfig`. That is what CUPTI
/// passes as `CUpti_CallbackData::functionParams` during the callback.
pub unsafe fn launch_geometry(cbid: sys::CUpti_CallbackId, params: *const c_void) -> Option<LaunchGeometry> {
    use sys::CUpti_driver_api_trace_cbid as Cb;
    if params.is_null() {
        return None;
    }
    // The argument-list calls share one layout up to `sharedMemBytes`; each is still read as its own type.
    macro_rules! direct {
        ($t:ty) => {{
            // SAFETY: the caller guarantees `params` is this call's parameter struct.
            let p = unsafe { &*(params as *const $t) };
            Some(LaunchGeometry {
                function: p.f,
                grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
                block: [p.blockDimX, p.blockDimY, p.blockDimZ],
                dynamic_shared_mem_bytes: p.sharedMemBytes,
            })
        }};
    }
    macro_rules! with_config {
        ($t:ty) => {{
            // SAFETY: the caller guarantees `params` is this call's parameter struct.
            let p = unsafe { &*(params as *const $t) };
            if p.config.is_null() {
                return None;
            }
            // SAFETY: non-null; the caller guarantees it points to the launch's CUlaunchConfig.
            let c = unsafe { &*p.config };
            Some(LaunchGeometry {
                function: p.f,
                grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
                block: [c.blockDimX, c.blockDimY, c.blockDimZ],
                dynamic_shared_mem_bytes: c.sharedMemBytes,
            })
        }};
    }
    match cbid {
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32 => direct!(sys::cuLaunchKernel_params_st),
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz as u32 => {
            direct!(sys::cuLaunchKernel_ptsz_params_st)
        }
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel as u32 => {
            direct!(sys::cuLaunchCooperativeKernel_params_st)
        }
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz as u32 => {
            direct!(sys::cuLaunchCooperativeKernel_ptsz_params_st)
        }
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx as u32 => {
            with_config!(sys::cuLaunchKernelEx_params_st)
        }
        x if x == Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz as u32 => {
            with_config!(sys::cuLaunchKernelEx_ptsz_params_st)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr;

    fn launch(name: &str) -> LaunchInfo {
        LaunchInfo { name: name.into(), ..LaunchInfo::default() }
    }

    /// Rows are labelled by the launches of the profiled context only; launches of
    /// other contexts are counted as skipped, not shifted into its rows.
    #[test]
    fn launches_are_labelled_by_context_and_others_counted_as_skipped() {
        let mut l = Launches::new();
        l.record(1, launch("a"));
        l.record(2, launch("other"));
        l.record(1, launch("b"));
        let mine: Vec<String> = l.take_for(1).into_iter().map(|x| x.name).collect();
        assert_eq!(mine, ["a", "b"]);
        assert_eq!(l.skipped(), 1);
        // A later context profiled in turn gets its own launches only.
        l.record(3, launch("c"));
        l.record(4, launch("never profiled"));
        assert_eq!(l.take_for(3).len(), 1);
        assert_eq!(l.skipped(), 2);
    }

    use cudarc::driver::sys::{CUfunction, CUlaunchConfig};
    use sys::CUpti_driver_api_trace_cbid as Cb;

    /// A recognisable non-null function handle: never dereferenced by `launch_geometry`.
    fn fake_function() -> CUfunction {
        0x1234_5678usize as CUfunction
    }

    fn config(grid: [u32; 3], block: [u32; 3], smem: u32) -> CUlaunchConfig {
        CUlaunchConfig {
            gridDimX: grid[0],
            gridDimY: grid[1],
            gridDimZ: grid[2],
            blockDimX: block[0],
            blockDimY: block[1],
            blockDimZ: block[2],
            sharedMemBytes: smem,
            hStream: ptr::null_mut(),
            attrs: ptr::null_mut(),
            numAttrs: 0,
        }
    }

    /// The callback ids are NVIDIA's numbers in `cupti_driver_cbid.h` (CUDA 12.9): a binding that
    /// renumbered them would make the injection library listen to the wrong calls.
    #[test]
    fn launch_callback_ids_are_cuptis() {
        let ids: Vec<u32> = LAUNCH_CALLBACKS.iter().map(|c| *c as u32).collect();
        assert_eq!(ids, vec![307, 442, 652, 653, 477, 478]);
    }

    /// cuLaunchKernelEx carries the geometry in the CUlaunchConfig it points to, not in its arguments.
    #[test]
    fn launch_kernel_ex_reads_the_launch_config() {
        let cfg = config([40, 3, 2], [128, 2, 1], 6144);
        for cbid in
            [Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz]
        {
            let params = sys::cuLaunchKernelEx_params_st {
                config: &cfg,
                f: fake_function(),
                kernelParams: ptr::null_mut(),
                extra: ptr::null_mut(),
            };
            // SAFETY: params is the cuLaunchKernelEx parameter struct, config points to a live CUlaunchConfig.
            let g = unsafe { launch_geometry(cbid as u32, &params as *const _ as *const c_void) }.unwrap();
            assert_eq!(g.function, fake_function());
            assert_eq!(g.grid, [40, 3, 2]);
            assert_eq!(g.block, [128, 2, 1]);
            assert_eq!(g.dynamic_shared_mem_bytes, 6144);
            let launch = g.launch("gemm".into(), 64, 1024);
            assert_eq!(
                launch,
                LaunchInfo {
                    name: "gemm".into(),
                    grid: [40, 3, 2],
                    block: [128, 2, 1],
                    registers_per_thread: 64,
                    shared_mem_bytes: 7168,
                }
            );
        }
    }

    #[test]
    fn launch_kernel_ex_with_a_null_config_is_not_a_launch() {
        let params = sys::cuLaunchKernelEx_params_st {
            config: ptr::null(),
            f: fake_function(),
            kernelParams: ptr::null_mut(),
            extra: ptr::null_mut(),
        };
        let cbid = Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx as u32;
        // SAFETY: the parameter struct of cuLaunchKernelEx, with a null config.
        assert_eq!(unsafe { launch_geometry(cbid, &params as *const _ as *const c_void) }, None);
        // SAFETY: null params are refused before any read.
        assert_eq!(unsafe { launch_geometry(cbid, ptr::null()) }, None);
    }

    #[test]
    fn launch_kernel_reads_its_arguments() {
        let params = sys::cuLaunchKernel_params_st {
            f: fake_function(),
            gridDimX: 7,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 256,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 512,
            hStream: ptr::null_mut(),
            kernelParams: ptr::null_mut(),
            extra: ptr::null_mut(),
        };
        let cbid = Cb::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32;
        // SAFETY: the parameter struct of cuLaunchKernel.
        let g = unsafe { launch_geometry(cbid, &params as *const _ as *const c_void) }.unwrap();
        assert_eq!((g.grid, g.block, g.dynamic_shared_mem_bytes), ([7, 1, 1], [256, 1, 1], 512));
    }

    #[test]
    fn other_callbacks_are_not_launches() {
        let cfg = config([1, 1, 1], [32, 1, 1], 0);
        let cbid = Cb::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 as u32;
        // SAFETY: an unrelated id returns before reading the pointer.
        assert_eq!(unsafe { launch_geometry(cbid, &cfg as *const _ as *const c_void) }, None);
    }
}
