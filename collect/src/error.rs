//! The one error type of `gpumodel-collect`. Every message says what happened and what to do.

/// Errors of the collector: the hardware libraries, the measured program, the microbenchmark suite and
/// calibration (NVRTC, the CUDA driver), and the files written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `libnvidia-ml.so` (the NVIDIA driver) cannot be loaded: no driver on this machine.
    #[error(
        "no NVIDIA driver: {detail}; run on a machine with an NVIDIA GPU and its driver installed \
         (libnvidia-ml.so, libcuda.so)"
    )]
    NoDriver { detail: String },
    /// The driver is there but the GPU index is not.
    #[error("no GPU with index {index} ({detail}); list GPUs with `nvidia-smi -L` and pass --device N")]
    NoGpu { index: u32, detail: String },
    /// The CUDA device has no NVML device with the same PCI bus id, so its power cannot be read.
    #[error(
        "CUDA device {cuda_device} (PCI bus id {pci_bus_id}) has no NVML device with that bus id, so its power \
         cannot be read; check that `nvidia-smi --query-gpu=index,pci.bus_id --format=csv` lists it and that \
         CUDA_VISIBLE_DEVICES selects the GPU you mean"
    )]
    NoNvmlMatch { cuda_device: u32, pci_bus_id: String },
    /// A CUDA host library (libcupti, libnvperf_host) cannot be loaded.
    #[error(
        "cannot load {library}: {detail}; install the CUDA toolkit's CUPTI or `pip install nvidia-cuda-cupti-cu12` \
         and put its lib folder in GPUMODEL_CUDA_LIBS or LD_LIBRARY_PATH"
    )]
    MissingLibrary { library: String, detail: String },
    /// Performance counters are restricted to administrators.
    #[error(
        "GPU performance counters are restricted to admin users: set NVreg_RestrictProfilingToAdminUsers=0 \
         (see https://developer.nvidia.com/ERR_NVGPUCTRPERM) or run as root"
    )]
    InsufficientPrivileges,
    /// A metric of the counter map does not exist on this chip for this profiler.
    #[error(
        "metric '{metric}' does not exist on {chip} for {profiler}; fix models/counters/{file}.toml or pass --no-counters"
    )]
    MissingMetric { metric: String, chip: String, profiler: String, file: String },
    /// A CUPTI call failed.
    #[error(
        "{call} failed: {message} (CUPTI error {code}); check that the CUPTI library is the one of a CUDA 12 \
         toolkit the driver supports (`nvidia-smi` shows it), or pass --no-counters"
    )]
    Cupti { call: &'static str, code: u32, message: String },
    /// An NVML call failed.
    #[error("NVML {call} failed: {message}; check that `nvidia-smi -q` can read it for this user")]
    Nvml { call: &'static str, message: String },
    /// The program to measure does not exist or cannot be started.
    #[error("cannot run '{program}': {detail}; check the path (use ./name for a program in this folder)")]
    Program { program: String, detail: String },
    /// The options do not make sense (rate ≤ 0, …).
    #[error("{0}")]
    Invalid(String),
    /// A file could not be written or read (a CSV or JSON error of a file is carried as its I/O error).
    #[error("{path}: {source}; check the path and its permissions")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output file exists and `--resume` was not given, or it cannot be resumed (the message says
    /// which and what to do).
    #[error("{0}")]
    Output(String),
    /// No CUDA driver (libcuda.so) on this machine.
    #[error(
        "no CUDA driver: {0}; run on a machine with an NVIDIA GPU and driver, or import existing measurements \
         with `gpumodel import`"
    )]
    NoCudaDriver(String),
    /// A CUDA driver call failed.
    #[error(
        "CUDA {call} failed: {message}; check the GPU with `nvidia-smi` (another process, a fault, a driver too old)"
    )]
    Cuda { call: &'static str, message: String },
    /// The NVRTC shared library is nowhere the loader looks.
    #[error(
        "NVRTC (libnvrtc.so.12) not found (looked in: {looked}): install the CUDA toolkit or \
         `pip install nvidia-cuda-nvrtc-cu12` and put its lib folder in GPUMODEL_CUDA_LIBS or LD_LIBRARY_PATH"
    )]
    NvrtcNotFound { looked: String },
    /// NVRTC rejected a kernel source.
    #[error(
        "NVRTC could not compile {name} for {arch}: {log}; use the NVRTC of a CUDA 12 toolkit \
         (`pip install nvidia-cuda-nvrtc-cu12`)"
    )]
    NvrtcCompile { name: String, arch: String, log: String },
    /// The architecture is not one NVRTC accepts in the form `sm_XY` / `compute_XY`.
    #[error("unknown GPU architecture '{0}': use the form sm_80 (compute capability 8.0)")]
    BadArch(String),
    /// The shared vocabulary crate refused something (a counter map, a trace).
    #[error(transparent)]
    Models(#[from] gpumodel_models::Error),
    /// Setting the GPU's clocks needs permissions this user lacks.
    #[error(
        "setting the GPU's clocks needs root ({detail}): run calibrate as root, or allow application clocks for \
         all users with `sudo nvidia-smi -acp UNRESTRICTED`, or pass --clocks current to measure only at the \
         current clocks"
    )]
    ClockPermission { detail: String },
    /// The GPU (or its driver) does not let NVML list or set its clocks.
    #[error(
        "this GPU does not let NVML set its clocks ({detail}): pass --clocks current to measure only at the \
         current clocks"
    )]
    ClocksUnsupported { detail: String },
    /// Ctrl-C or SIGTERM ended a measurement early (the message says what was put back).
    #[error("{0}")]
    Interrupted(String),
    /// A sampler thread panicked or could not be started.
    #[error("sampler thread: {0}; this is a bug in gpumodel: please report it with the command line")]
    Thread(String),
}

/// Result with the collector's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A file's error: an I/O error, or a CSV or JSON error of that file (both convert into one).
    pub(crate) fn io(path: impl Into<std::path::PathBuf>, source: impl Into<std::io::Error>) -> Error {
        Error::Io { path: path.into(), source: source.into() }
    }
}
