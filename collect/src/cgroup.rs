//! Which container, and which Kubernetes pod, a process belongs to — read from `/proc/PID/cgroup`.
//!
//! Container runtimes put every container in a cgroup whose path carries the 64-hex container id, and the
//! kubelet puts every pod in a cgroup whose name carries the pod UID. The spellings differ by runtime and
//! cgroup driver, for example:
//!
//! - Docker, cgroupfs driver: `/docker/<id>`
//! - Docker, systemd driver: `/system.slice/docker-<id>.scope`
//! - Kubernetes, cgroupfs driver: `/kubepods/burstable/pod<uid>/<id>`
//! - Kubernetes, systemd driver: `/kubepods.slice/kubepods-burstable.slice/`
//!   `kubepods-burstable-pod<uid with _ for ->.slice/cri-containerd-<id>.scope` (CRI-O: `crio-<id>.scope`)
//! - Podman: `/machine.slice/libpod-<id>.scope`
//!
//! Rather than matching each spelling whole, a path is read segment by segment: the deepest segment that
//! names a 64-hex id (bare, or as `<prefix>-<id>[.scope]`) is the container, and an ancestor segment
//! `pod<uid>` (or `…-pod<uid>.slice`, where the systemd driver writes `_` for `-`) is the pod. That covers
//! cgroup v1 and v2 alike, the besteffort/burstable/guaranteed QoS variants, and nesting (the innermost
//! container wins). Runtime helper processes (`crio-conmon-…`, `libpod-conmon-…`) are not containers.
//!
//! Parsing never panics: the input comes from the kernel, but `/proc` may be a test directory or a
//! container's view, and a wrong guess only costs a missing label.

use std::io::Read;
use std::path::Path;

/// Where a process's name and container come from (`/proc` on a node; a trace's header in replay).
pub trait ProcessInfo: Send {
    fn comm(&self, pid: u32) -> Option<String>;
    fn container(&self, pid: u32) -> Option<Container>;
}

/// `/proc` of this host (or a directory laid out like it, in tests).
#[derive(Debug, Clone)]
pub struct ProcFs(pub std::path::PathBuf);

impl ProcessInfo for ProcFs {
    fn comm(&self, pid: u32) -> Option<String> {
        comm_of(&self.0, pid)
    }
    fn container(&self, pid: u32) -> Option<Container> {
        container_of(&self.0, pid)
    }
}

/// A container id, and the Kubernetes pod it runs in when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Container {
    /// The runtime's 64-hex container id, lower case.
    pub id: String,
    /// The pod UID (`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, lower case) for a Kubernetes container.
    pub pod: Option<String>,
}

/// Length of a container id as Docker, containerd, CRI-O and Podman write it: 32 bytes in hex.
const CONTAINER_ID_LEN: usize = 64;

/// Length of a pod UID in its canonical dashed form.
const POD_UID_LEN: usize = 36;

/// `/proc/PID/cgroup` is a few hundred bytes; reading at most this much bounds a mistaken `proc_root`.
const MAX_PROC_FILE: u64 = 64 * 1024;

/// Parses the contents of `/proc/PID/cgroup` (cgroup v1 `N:controllers:/path` lines, the v2 line
/// `0::/path`, or both on a hybrid host) and returns the container the process runs in, or `None` for a
/// process outside any container or for text that is not a cgroup file.
///
/// When several lines name a container (cgroup v1 lists one line per hierarchy), the first line that also
/// names a pod wins, else the first that names a container.
pub fn parse_cgroup(text: &str) -> Option<Container> {
    let mut found: Option<Container> = None;
    for line in text.lines() {
        let Some(container) = parse_line(line) else { continue };
        if container.pod.is_some() {
            return Some(container);
        }
        found.get_or_insert(container);
    }
    found
}

/// The container named by one `hierarchy:controllers:path` line.
fn parse_line(line: &str) -> Option<Container> {
    let mut fields = line.trim().splitn(3, ':');
    let (_hierarchy, _controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
    if !path.starts_with('/') {
        return None;
    }
    let segments: Vec<&str> = path.split('/').collect();
    let (at, id) = segments.iter().enumerate().rev().find_map(|(i, s)| container_id(s).map(|id| (i, id)))?;
    let pod = segments[..at].iter().rev().find_map(|s| pod_uid(s));
    Some(Container { id, pod })
}

/// The container id a cgroup path segment names: `<id>`, `<id>.scope`, or `<runtime>-<id>[.scope]`.
fn container_id(segment: &str) -> Option<String> {
    // conmon is the runtime's monitor process, which lives beside the container, not in it.
    if segment.contains("conmon") {
        return None;
    }
    let name = segment.strip_suffix(".scope").unwrap_or(segment);
    let id = name.rsplit('-').next()?;
    (id.len() == CONTAINER_ID_LEN && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| id.to_ascii_lowercase())
}

/// The pod UID a cgroup path segment names: `pod<uid>` (cgroupfs driver) or `kubepods[-<qos>]-pod<uid>.slice`
/// (systemd driver, which writes the UID's dashes as underscores because `-` separates slice levels).
fn pod_uid(segment: &str) -> Option<String> {
    let name = segment.strip_suffix(".slice").unwrap_or(segment);
    let at = name.rfind("pod")?;
    // `pod` must start the segment or follow a slice separator, so a name that merely contains it
    // (e.g. `mypod…`) is not taken for a pod.
    if at != 0 && !name[..at].ends_with('-') {
        return None;
    }
    let uid = name[at + "pod".len()..].replace('_', "-");
    is_uid(&uid).then(|| uid.to_ascii_lowercase())
}

/// True for the canonical dashed form of a UUID: 8-4-4-4-12 hex digits.
fn is_uid(s: &str) -> bool {
    s.len() == POD_UID_LEN
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// The container process `pid` runs in, read from `<proc_root>/<pid>/cgroup`; `None` when the process is
/// gone, the file is unreadable, or the process is not in a container.
///
/// `proc_root` is `/proc` on a node; tests pass a directory laid out the same way.
pub fn container_of(proc_root: &Path, pid: u32) -> Option<Container> {
    let text = read_bounded(&proc_root.join(pid.to_string()).join("cgroup"))?;
    parse_cgroup(&text)
}

/// The command name of process `pid` (`<proc_root>/<pid>/comm`, at most 15 bytes, set by the kernel from
/// the executable name or by the process itself), trimmed of surrounding whitespace; `None` when the
/// process is gone or the name is empty.
pub fn comm_of(proc_root: &Path, pid: u32) -> Option<String> {
    let text = read_bounded(&proc_root.join(pid.to_string()).join("comm"))?;
    let name = text.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// Reads at most [`MAX_PROC_FILE`] bytes of a file as text, replacing invalid UTF-8 (the kernel does not
/// promise UTF-8 in `comm`).
fn read_bounded(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_PROC_FILE).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ID: &str = "3f1c2a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7";
    const UID: &str = "0b7e4c1a-5f2d-4e8b-9a3c-6d1f0e2b4a58";

    fn container(pod: Option<&str>) -> Option<Container> {
        Some(Container { id: ID.to_owned(), pod: pod.map(str::to_owned) })
    }

    #[test]
    fn docker_cgroupfs_v1() {
        let text = format!(
            "12:pids:/docker/{ID}\n11:memory:/docker/{ID}\n1:name=systemd:/docker/{ID}\n\
             0::/system.slice/containerd.service\n"
        );
        assert_eq!(parse_cgroup(&text), container(None));
    }

    #[test]
    fn docker_systemd_v2() {
        assert_eq!(parse_cgroup(&format!("0::/system.slice/docker-{ID}.scope\n")), container(None));
    }

    #[test]
    fn kubernetes_cgroupfs_driver() {
        for qos in ["burstable/", "besteffort/", ""] {
            let text = format!("5:cpu,cpuacct:/kubepods/{qos}pod{UID}/{ID}\n");
            assert_eq!(parse_cgroup(&text), container(Some(UID)), "{text}");
        }
    }

    #[test]
    fn kubernetes_systemd_driver_containerd_and_crio() {
        let uid = UID.replace('-', "_");
        for runtime in ["cri-containerd", "crio"] {
            for (qos_slice, pod_slice) in [
                ("kubepods-burstable.slice/", format!("kubepods-burstable-pod{uid}.slice")),
                ("kubepods-besteffort.slice/", format!("kubepods-besteffort-pod{uid}.slice")),
                ("", format!("kubepods-pod{uid}.slice")),
            ] {
                let text = format!("0::/kubepods.slice/{qos_slice}{pod_slice}/{runtime}-{ID}.scope\n");
                assert_eq!(parse_cgroup(&text), container(Some(UID)), "{text}");
            }
        }
    }

    #[test]
    fn podman() {
        assert_eq!(
            parse_cgroup(&format!("0::/machine.slice/libpod-{ID}.scope/container\n")),
            container(None)
        );
        let rootless =
            format!("0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope\n");
        assert_eq!(parse_cgroup(&rootless), container(None));
    }

    #[test]
    fn upper_case_id_is_lowered() {
        let text = format!("0::/docker/{}\n", ID.to_ascii_uppercase());
        assert_eq!(parse_cgroup(&text), container(None));
    }

    #[test]
    fn innermost_container_wins() {
        let outer = "a".repeat(64);
        assert_eq!(parse_cgroup(&format!("0::/docker/{outer}/docker/{ID}\n")), container(None));
    }

    #[test]
    fn pod_is_taken_from_any_line_that_names_one() {
        let text = format!("1:name=systemd:/docker/{ID}\n0::/kubepods/burstable/pod{UID}/{ID}\n");
        assert_eq!(parse_cgroup(&text), container(Some(UID)));
    }

    #[test]
    fn runtime_monitors_and_host_processes_are_not_containers() {
        for text in [
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/vte-spawn.scope\n".to_owned(),
            "0::/\n".to_owned(),
            "0::/system.slice/containerd.service\n".to_owned(),
            format!("0::/machine.slice/libpod-conmon-{ID}.scope\n"),
            format!("0::/system.slice/crio-conmon-{ID}.scope\n"),
            "12:pids:/user.slice\n11:memory:/user.slice/user-1000.slice\n".to_owned(),
        ] {
            assert_eq!(parse_cgroup(&text), None, "{text}");
        }
    }

    #[test]
    fn garbage_is_not_a_container() {
        let short = &ID[..63];
        for text in [
            String::new(),
            "\n\n".to_owned(),
            "not a cgroup file".to_owned(),
            format!("{ID}\n"),
            format!("0::docker/{ID}\n"),
            format!("0::/docker/{short}\n"),
            format!("0::/docker/{}\n", "g".repeat(64)),
            format!("0::/kubepods/pod{UID}\n"),
            "::::::".to_owned(),
            "0::/pod\u{e9}/\u{1F600}-\n".to_owned(),
        ] {
            assert_eq!(parse_cgroup(&text), None, "{text:?}");
        }
    }

    #[test]
    fn malformed_pod_uid_leaves_pod_unknown() {
        let text = format!("0::/kubepods/burstable/podnot-a-uid/{ID}\n");
        assert_eq!(parse_cgroup(&text), container(None));
        let text = format!("0::/kubepods/burstable/mypod{UID}/{ID}\n");
        assert_eq!(parse_cgroup(&text), container(None));
    }

    #[test]
    fn reads_from_a_proc_tree() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("4242");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("cgroup"), format!("0::/kubepods/besteffort/pod{UID}/{ID}\n")).unwrap();
        std::fs::write(dir.join("comm"), "python3\n").unwrap();

        assert_eq!(container_of(root.path(), 4242), container(Some(UID)));
        assert_eq!(comm_of(root.path(), 4242), Some("python3".to_owned()));
        assert_eq!(container_of(root.path(), 1), None);
        assert_eq!(comm_of(root.path(), 1), None);
    }

    #[test]
    fn empty_comm_is_none() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("7")).unwrap();
        std::fs::write(root.path().join("7").join("comm"), "\n").unwrap();
        assert_eq!(comm_of(root.path(), 7), None);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in any::<String>()) {
            let _ = parse_cgroup(&text);
        }

        #[test]
        fn cgroup_shaped_text_never_panics(
            text in "([0-9]{1,2}:[a-z,=]{0,12}:(/[a-z0-9_.@:-]{0,80}){0,6}\n){0,4}"
        ) {
            let _ = parse_cgroup(&text);
        }
    }
}
