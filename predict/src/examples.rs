//! Example kernel profiles shipped with gpumodel (`datasets/examples/kernels/`), embedded so that
//! `gpumodel predict --warps 32` works on a fresh clone with no other argument.

/// Parallel sum reduction (CUDA SDK `reduction`, the paper's reduction case): the default kernel.
pub const REDUCTION: &str = include_str!("../../datasets/examples/kernels/reduction.toml");
/// Matrix transpose with shared-memory tiles (the paper's transpose case).
pub const TRANSPOSE: &str = include_str!("../../datasets/examples/kernels/transpose.toml");
/// Tiled matrix multiply in shared memory.
pub const MATRIXMUL: &str = include_str!("../../datasets/examples/kernels/matrixmul.toml");

/// (name, TOML text) of every embedded example.
pub const ALL: &[(&str, &str)] =
    &[("reduction", REDUCTION), ("transpose", TRANSPOSE), ("matrixmul", MATRIXMUL)];

/// The default kernel of `gpumodel predict`.
pub const DEFAULT_KERNEL: &str = "reduction";
/// The default architecture of `gpumodel predict` (the GPU of the default power model).
pub const DEFAULT_ARCH: &str = "titanx";

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::profile::KernelProfile;

    #[test]
    fn every_example_parses_and_passes_the_profile_check() {
        for (name, text) in ALL {
            let k: KernelProfile = toml::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            k.check(name).unwrap();
            gpumodel_models::timing::TimingInputs::from_profile(&k).unwrap();
        }
    }
}
