//! The built library is what the CUDA driver loads through `CUDA_INJECTION64_PATH`: a shared object
//! that exports `InitializeInjection`. (This test also makes `cargo test` build the shared object, in
//! `target/<profile>/deps/`, where the binary's tests find it.)

use std::path::PathBuf;

/// `target/<profile>/deps/libgpumodel_inject.so`, beside this test's own executable.
fn built_library() -> PathBuf {
    std::env::current_exe().unwrap().with_file_name("libgpumodel_inject.so")
}

#[test]
fn the_shared_object_exports_the_driver_entry_point() {
    let path = built_library();
    assert!(path.is_file(), "{} was not built", path.display());
    // Loading runs no code of ours (no constructors); the entry point is only looked up, never called.
    let lib =
        unsafe { libloading::Library::new(&path) }.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let entry = unsafe { lib.get::<unsafe extern "C" fn() -> i32>(b"InitializeInjection\0") };
    assert!(entry.is_ok(), "no InitializeInjection in {}", path.display());
}
