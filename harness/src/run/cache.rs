//! Runs already made: one case's runs on one backend are kept under `target/lab/cache/`,
//! keyed by everything they depend on — the backend, the scenario, the bytes of the builds and
//! the lab's own executable — so a warm `just compare` re-runs only what changed.
//!
//! Gas and fuel are deterministic functions of those inputs, so a kept run *is* the run; the
//! key includes the SHA-256 of the executable, so that any change to the harness, a backend or
//! a dependency invalidates every entry. Its bytes, not its modification time: the harness
//! links `galloc` (the probe's record types), so editing the allocator relinks `lab`, and a
//! relink that changes nothing in it must not throw away the runs of every unchanged variant.

use crate::results::hex;
use crate::run::backend::{BackendKind, PageCounts, Unit};
use crate::run::execute::{CaseRun, MessageCost};
use crate::run::measure::{Builds, CaseMeasurement};
use crate::run::scenario::Scenario;
use anyhow::{Context, Result};
use galloc::probe::{ProbeStats, Record};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Bumped whenever the stored layout below changes.
const FORMAT: u32 = 3;

/// The SHA-256 (hex) of `parts`, each preceded by its length so that no two lists of parts
/// hash alike: the run keys, and the digest of everything a run's files are made from.
pub fn digest_of_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex(&h.finalize())
}

/// A scenario as its runs' keys see it ([`RunCache::fingerprint`]).
pub struct Fingerprint(String);

/// The cache directory.
pub struct RunCache {
    dir: PathBuf,
    /// Identity of the running lab executable, hashed into every key.
    harness: String,
}

impl RunCache {
    /// The cache under `dir` (created on first store).
    pub fn new(dir: PathBuf) -> Result<Self> {
        let exe = std::env::current_exe().context("cannot locate the lab's executable")?;
        let bytes =
            std::fs::read(&exe).with_context(|| format!("cannot read {}", exe.display()))?;
        Ok(RunCache {
            dir,
            harness: hex(&Sha256::digest(&bytes)),
        })
    }

    /// What identifies `scenario` in a key: the SHA-256 of everything it holds (its `Debug`
    /// text). Made once per scenario and passed to [`RunCache::key`]: formatting a scenario's
    /// thousands of payloads for each of thousands of keys was most of a warm `just compare`.
    pub fn fingerprint(scenario: &Scenario) -> Fingerprint {
        Fingerprint(hex(&Sha256::digest(format!("{scenario:?}").as_bytes())))
    }

    /// The key of a scenario's runs of `builds` on `backend`.
    pub fn key(&self, backend: BackendKind, scenario: &Fingerprint, builds: &Builds) -> String {
        digest_of_parts([
            &FORMAT.to_string(),
            &self.harness,
            backend.name(),
            &scenario.0,
            &builds.plain.sha256,
            &builds.probe.sha256,
            &builds.twin.sha256,
        ])
    }

    /// The key of a scenario's run of one build alone (a point of the layout sweep).
    pub fn key_of_run(&self, backend: BackendKind, scenario: &Fingerprint, sha256: &str) -> String {
        digest_of_parts([
            &FORMAT.to_string(),
            &self.harness,
            backend.name(),
            &scenario.0,
            "one run",
            sha256,
        ])
    }

    /// The one run kept under `key` ([`RunCache::key_of_run`]), if any.
    pub fn load_run(&self, key: &str) -> Option<CaseRun> {
        let packed = std::fs::read(self.path(key)).ok()?;
        let bytes = zstd::decode_all(&packed[..]).ok()?;
        let stored: StoredRun = bincode::deserialize(&bytes).ok()?;
        stored.into_run()
    }

    /// Keeps one run under `key`.
    pub fn store_run(&self, key: &str, run: &CaseRun) -> Result<()> {
        let bytes =
            bincode::serialize(&StoredRun::from_run(run)).context("encoding a cached run")?;
        self.put(key, &bytes)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        let packed = zstd::encode_all(bytes, 1).context("compressing a cached run")?;
        let path = self.path(key);
        // Written aside and renamed: a killed run never leaves half an entry.
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, packed).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.bin.zst"))
    }

    /// The runs kept under `key`, if any (an unreadable entry counts as none).
    pub fn load(&self, key: &str, backend: BackendKind) -> Option<CaseMeasurement> {
        let packed = std::fs::read(self.path(key)).ok()?;
        let bytes = zstd::decode_all(&packed[..]).ok()?;
        let stored: Stored = bincode::deserialize(&bytes).ok()?;
        Some(CaseMeasurement {
            backend,
            unit: stored.unit,
            plain: stored.plain.into_run()?,
            probe: stored.probe.into_run()?,
            twin: stored.twin.into_run()?,
        })
    }

    /// Keeps `m` under `key`.
    pub fn store(&self, key: &str, m: &CaseMeasurement) -> Result<()> {
        let stored = Stored {
            unit: m.unit,
            plain: StoredRun::from_run(&m.plain),
            probe: StoredRun::from_run(&m.probe),
            twin: StoredRun::from_run(&m.twin),
        };
        let bytes = bincode::serialize(&stored).context("encoding a cached run")?;
        self.put(key, &bytes)
    }
}

#[derive(Serialize, Deserialize)]
struct Stored {
    unit: Unit,
    plain: StoredRun,
    probe: StoredRun,
    twin: StoredRun,
}

#[derive(Serialize, Deserialize)]
struct StoredRun {
    messages: Vec<StoredMessage>,
    /// [`ProbeStats::to_bytes`].
    probe: Option<Vec<u8>>,
}

/// A [`Record`]: (seq, op, ptr, size, align, new_size, result, cost).
type StoredCall = (u32, u32, u32, u32, u32, u32, u32, u64);

#[derive(Serialize, Deserialize)]
struct StoredMessage {
    index: usize,
    failed: bool,
    cost: u64,
    reply: Vec<u8>,
    pages: Option<PageCounts>,
    ops: Vec<StoredCall>,
    op_counts: Option<[u64; 4]>,
    op_costs: Option<[u64; 4]>,
}

impl StoredRun {
    fn from_run(run: &CaseRun) -> Self {
        StoredRun {
            messages: run
                .messages
                .iter()
                .map(|m| StoredMessage {
                    index: m.index,
                    failed: m.failed,
                    cost: m.cost,
                    reply: m.reply.clone(),
                    pages: m.pages,
                    ops: m
                        .ops
                        .iter()
                        .map(|r| {
                            (
                                r.seq, r.op, r.ptr, r.size, r.align, r.new_size, r.result, r.cost,
                            )
                        })
                        .collect(),
                    op_counts: m.op_counts,
                    op_costs: m.op_costs,
                })
                .collect(),
            probe: run.probe.map(|p| p.to_bytes().to_vec()),
        }
    }

    fn into_run(self) -> Option<CaseRun> {
        let probe = match self.probe {
            Some(bytes) => Some(ProbeStats::from_bytes(&bytes)?),
            None => None,
        };
        Some(CaseRun {
            messages: self
                .messages
                .into_iter()
                .map(|m| MessageCost {
                    index: m.index,
                    failed: m.failed,
                    cost: m.cost,
                    reply: m.reply,
                    pages: m.pages,
                    ops: m
                        .ops
                        .into_iter()
                        .map(
                            |(seq, op, ptr, size, align, new_size, result, cost)| Record {
                                seq,
                                op,
                                ptr,
                                size,
                                align,
                                new_size,
                                result,
                                cost,
                            },
                        )
                        .collect(),
                    op_counts: m.op_counts,
                    op_costs: m.op_costs,
                })
                .collect(),
            probe,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::backend::FirstTouch;

    #[test]
    fn a_run_round_trips() {
        let run = CaseRun {
            messages: vec![MessageCost {
                index: 1,
                failed: true,
                cost: 123_456,
                reply: vec![1, 2, 3],
                pages: Some(PageCounts {
                    read: 1,
                    write: 2,
                    write_after_read: 3,
                    loaded: 4,
                    changed: 5,
                    allocation_intervals: 6,
                    first_touch: Some(FirstTouch {
                        allocator_static: 1,
                        allocator_heap: 2,
                        allocator_block: 3,
                        program_static: 4,
                        program_heap: 5,
                        allocator_only: 6,
                    }),
                }),
                ops: vec![Record {
                    seq: 7,
                    op: 2,
                    ptr: 1_000,
                    size: 16,
                    align: 8,
                    new_size: 32,
                    result: 2_000,
                    cost: 99,
                }],
                op_counts: Some([1, 0, 1, 0]),
                op_costs: Some([10, 0, 99, 0]),
            }],
            probe: Some(ProbeStats::EMPTY),
        };
        let back = StoredRun::from_run(&run).into_run().unwrap();
        assert_eq!(back.messages, run.messages);
        assert_eq!(back.probe, run.probe);
    }
}
