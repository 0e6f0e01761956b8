//! Fuzz inputs kept as tests (`allocator/tests/regressions/`), run on the selected variant
//! through the same checks as the fuzz target: every block aligned, disjoint from every live
//! block, zeroed by `calloc`, carried by `realloc`, intact until freed. Run once per variant
//! feature (`just test` does).

use galloc::source::HostConfig;
use galloc::variant::{HostAlloc, ID};
use galloc_replay::checked::{fuzz, requests_from_bytes};

#[test]
fn every_kept_fuzz_input_passes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/regressions")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no inputs in {}", dir.display());
    for file in &files {
        let data = std::fs::read(file).expect("read input");
        let requests = requests_from_bytes(&data);
        let heap = HostAlloc::new(HostConfig::default());
        if let Err(finding) = fuzz(&heap, &requests) {
            panic!("{ID}: {}: {finding:?}", file.display());
        }
        println!(
            "{ID}: {} ({} requests) passes",
            file.display(),
            requests.len()
        );
    }
}
