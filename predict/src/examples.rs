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

/// An embedded example kernel by name; `None` when there is no such example.
pub fn kernel(name: &str) -> Option<crate::Result<gpumodel_models::profile::KernelProfile>> {
    let (n, text) = ALL.iter().find(|(n, _)| *n == name)?;
    Some(toml::from_str(text).map_err(|e| {
        crate::Error::Models(gpumodel_models::Error::Document {
            file: format!("datasets/examples/kernels/{n}.toml"),
            message: e.message().to_string(),
        })
    }))
}

/// Trained power models embedded in the binary: (name, artifact JSON). Written by `gpumodel train`
/// (`models/trained/`).
pub const MODELS: &[(&str, &str)] = &[
    ("titanx-default", include_str!("../../models/trained/titanx-default.json")),
    ("titanx-bpann", include_str!("../../models/trained/titanx-bpann.json")),
];

/// The default power model of `gpumodel predict`: the Titan X model `gpumodel train` chose on its
/// training data alone (grouped CV, one-standard-error rule; see models/trained/README.md). The paper's
/// 10-4-4-1 network stays available as `titanx-bpann`.
pub const DEFAULT_MODEL: &str = "titanx-default";

/// The default kernel of `gpumodel predict`.
pub const DEFAULT_KERNEL: &str = "reduction";
/// The default architecture of `gpumodel predict` (the GPU of the default power model).
pub const DEFAULT_ARCH: &str = "titanx";

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::profile::KernelProfile;

    #[test]
    fn embedded_models_parse() {
        for (name, text) in MODELS {
            gpumodel_models::artifact::ModelArtifact::from_json_str(text, name).unwrap();
        }
    }

    #[test]
    fn every_example_parses_and_passes_the_profile_check() {
        for (name, text) in ALL {
            let k: KernelProfile = toml::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            k.check(name).unwrap();
            gpumodel_models::timing::TimingInputs::from_profile(&k).unwrap();
        }
    }
}
