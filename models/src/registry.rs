//! The registry of public datasets (`datasets/registry.toml`, embedded in the binary) and where their
//! files are found.
//!
//! Resolution order for a dataset name: the directory in `GPUMODEL_DATA_DIR`; the local cache
//! (`GPUMODEL_CACHE_DIR`, else `$XDG_CACHE_HOME/gpumodel/datasets`, else `~/.cache/gpumodel/datasets`);
//! otherwise an error that says how to get it. A path given by the user is read as it is and comes first.
//! `fetch` downloads from the origin (or from `GPUMODEL_DATASET_MIRROR/<file>`), verifies the sha256, and
//! only then moves the file into the cache: a mismatch names both hashes and deletes nothing the user had.

use crate::error::{Error, Result};
use crate::import::{self, BadRows, Format, Imported};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

const REGISTRY_TOML: &str = include_str!("../../datasets/registry.toml");

/// Where a dataset comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub repository: String,
    pub commit: String,
    pub path: String,
    pub url: String,
}

/// One registered dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub description: String,
    /// Importer name: `guerreiro` or `nvdvfs`.
    pub importer: String,
    /// Path of the file relative to the data directory.
    pub file: String,
    pub sha256: String,
    /// The registered dataset that is this one's held-out test set, if any.
    #[serde(default)]
    pub test_set: Option<String>,
    pub gpu: String,
    pub license: String,
    pub citation: String,
    pub origin: Origin,
}

impl Entry {
    /// The importer format.
    pub fn format(&self) -> Result<Format> {
        Format::from_name(&self.importer)
    }
}

/// All registered datasets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    #[serde(rename = "dataset")]
    pub datasets: Vec<Entry>,
}

impl Registry {
    /// The registry compiled into the binary.
    pub fn builtin() -> Registry {
        Registry::from_toml_str(REGISTRY_TOML).expect("datasets/registry.toml is checked by a test")
    }

    /// Parses a registry document.
    pub fn from_toml_str(text: &str) -> Result<Registry> {
        toml::from_str(text)
            .map_err(|e| Error::Document { file: "registry.toml".into(), message: e.message().to_string() })
    }

    /// A dataset by name.
    pub fn get(&self, name: &str) -> Result<&Entry> {
        self.datasets
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| Error::UnknownDataset { name: name.to_string(), known: self.names().join(", ") })
    }

    /// Registered names, in file order.
    pub fn names(&self) -> Vec<&str> {
        self.datasets.iter().map(|d| d.name.as_str()).collect()
    }
}

/// How a file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Found {
    /// A path the user gave.
    UserPath,
    /// `GPUMODEL_DATA_DIR`.
    DataDir,
    /// The local cache.
    Cache,
    /// Downloaded just now.
    Downloaded,
}

/// Where to look for files and where to download them from.
#[derive(Debug, Clone, PartialEq)]
pub struct Locator {
    pub data_dir: Option<PathBuf>,
    pub cache_dir: Option<PathBuf>,
    /// Base URL that replaces each origin URL with `<mirror>/<file>` (for mirrors and tests).
    pub mirror: Option<String>,
}

impl Locator {
    /// From `GPUMODEL_DATA_DIR`, `GPUMODEL_CACHE_DIR` / `XDG_CACHE_HOME` / `HOME`, and
    /// `GPUMODEL_DATASET_MIRROR`.
    pub fn from_env() -> Locator {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let cache_dir = var("GPUMODEL_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| var("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("gpumodel/datasets")))
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/gpumodel/datasets")));
        Locator {
            data_dir: var("GPUMODEL_DATA_DIR").map(PathBuf::from),
            cache_dir,
            mirror: var("GPUMODEL_DATASET_MIRROR")
                .map(|m| m.to_string_lossy().trim_end_matches('/').to_string()),
        }
    }

    /// Finds a registered dataset's file on this machine and checks its sha256.
    pub fn resolve(&self, entry: &Entry) -> Result<(PathBuf, Found)> {
        let mut looked = Vec::new();
        for (dir, how, label) in [
            (&self.data_dir, Found::DataDir, "GPUMODEL_DATA_DIR"),
            (&self.cache_dir, Found::Cache, "the cache"),
        ] {
            match dir {
                Some(d) => {
                    let p = d.join(&entry.file);
                    if p.is_file() {
                        verify(entry, &p)?;
                        return Ok((p, how));
                    }
                    looked.push(format!("{label} {}", d.display()));
                }
                None => looked.push(format!("{label} (not set)")),
            }
        }
        Err(Error::MissingDataset {
            name: entry.name.clone(),
            file: entry.file.clone(),
            looked: looked.join(", "),
        })
    }

    /// The URL a dataset is downloaded from.
    pub fn url(&self, entry: &Entry) -> String {
        match &self.mirror {
            Some(m) => format!("{m}/{}", entry.file),
            None => entry.origin.url.clone(),
        }
    }

    /// Makes a registered dataset available: already present (verified), or downloaded into the cache.
    pub fn fetch(&self, entry: &Entry) -> Result<(PathBuf, Found)> {
        match self.resolve(entry) {
            Ok(found) => return Ok(found),
            Err(Error::MissingDataset { .. }) => {}
            Err(e) => return Err(e),
        }
        let cache = self.cache_dir.as_ref().ok_or_else(|| {
            Error::Invalid("no cache directory: set GPUMODEL_CACHE_DIR (or HOME) to download datasets".into())
        })?;
        let dest = cache.join(&entry.file);
        let dir = dest.parent().unwrap_or(cache);
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let url = self.url(entry);
        let bytes = download(&url)?;
        let actual = sha256_hex(&bytes);
        if actual != entry.sha256 {
            return Err(Error::ChecksumMismatch {
                name: entry.name.clone(),
                path: PathBuf::from(&url),
                expected: entry.sha256.clone(),
                actual,
            });
        }
        // An interrupted download never leaves a partial file under the dataset's name.
        crate::atomic::write_atomic(&dest, &bytes)?;
        Ok((dest, Found::Downloaded))
    }
}

/// Checks a file against the registered sha256.
pub fn verify(entry: &Entry, path: &Path) -> Result<()> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let actual = sha256_hex(&bytes);
    if actual == entry.sha256 {
        Ok(())
    } else {
        Err(Error::ChecksumMismatch {
            name: entry.name.clone(),
            path: path.to_path_buf(),
            expected: entry.sha256.clone(),
            actual,
        })
    }
}

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn download(url: &str) -> Result<Vec<u8>> {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(120))).build().into();
    let err = |e: ureq::Error| Error::Download {
        url: url.to_string(),
        message: format!("{e} (check the network, or copy the file into GPUMODEL_DATA_DIR)"),
    };
    let mut response = agent.get(url).call().map_err(err)?;
    response.body_mut().with_config().limit(512 * 1024 * 1024).read_to_vec().map_err(err)
}

/// A dataset opened from a registry name or a path.
#[derive(Debug)]
pub struct Opened {
    pub imported: Imported,
    pub path: PathBuf,
    pub found: Found,
    pub entry: Option<Entry>,
    pub format: Format,
}

/// Opens `spec` — a registered name, or a path to a file — with `format` (or the registry's importer, or a
/// guess from the file's first line when unambiguous).
pub fn open(spec: &str, format: Option<Format>, bad: BadRows, loc: &Locator) -> Result<Opened> {
    let registry = Registry::builtin();
    let as_path = Path::new(spec);
    if let Ok(entry) = registry.get(spec) {
        let (path, found) = loc.resolve(entry)?;
        let format = match format {
            Some(f) => f,
            None => entry.format()?,
        };
        let imported = import::import_file(&path, format, bad)?;
        return Ok(Opened { imported, path, found, entry: Some(entry.clone()), format });
    }
    if !as_path.exists() {
        return Err(Error::UnknownDataset {
            name: spec.to_string(),
            known: format!("{} (or give the path of an existing file)", registry.names().join(", ")),
        });
    }
    let bytes = std::fs::read(as_path).map_err(|e| Error::io(as_path, e))?;
    let format = match format {
        Some(f) => f,
        None => Format::guess(&bytes).ok_or_else(|| Error::Format {
            file: spec.to_string(),
            message: "cannot tell the format from the first line: pass --import guerreiro|nvdvfs|table"
                .into(),
        })?,
    };
    let imported = import::import_bytes(&bytes, spec, format, bad)?;
    Ok(Opened { imported, path: as_path.to_path_buf(), found: Found::UserPath, entry: None, format })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_registry_parses_and_has_the_four_datasets() {
        let r = Registry::builtin();
        for name in ["guerreiro-titanx-micro", "guerreiro-titanx-real", "nvdvfs-gtx1080ti", "nvdvfs-gtx980"] {
            let e = r.get(name).unwrap();
            assert_eq!(e.sha256.len(), 64);
            assert!(e.origin.url.contains(&e.origin.commit));
            assert!(e.origin.url.ends_with(&e.origin.path));
            e.format().unwrap();
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let msg = Registry::builtin().get("nope").unwrap_err().to_string();
        assert!(msg.contains("guerreiro-titanx-micro"), "{msg}");
    }

    #[test]
    fn missing_file_says_how_to_get_it() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Locator { data_dir: Some(dir.path().into()), cache_dir: None, mirror: None };
        let r = Registry::builtin();
        let msg = loc.resolve(r.get("nvdvfs-gtx980").unwrap()).unwrap_err().to_string();
        assert!(msg.contains("GPUMODEL_DATA_DIR"), "{msg}");
        assert!(msg.contains("gpumodel dataset fetch nvdvfs-gtx980"), "{msg}");
    }

    #[test]
    fn a_changed_file_is_a_checksum_error_and_stays() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::builtin();
        let e = r.get("nvdvfs-gtx980").unwrap();
        let p = dir.path().join(&e.file);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"not the data").unwrap();
        let loc = Locator { data_dir: Some(dir.path().into()), cache_dir: None, mirror: None };
        let msg = loc.resolve(e).unwrap_err().to_string();
        assert!(msg.contains(&e.sha256) && msg.contains(&sha256_hex(b"not the data")), "{msg}");
        assert_eq!(std::fs::read(&p).unwrap(), b"not the data");
    }
}
