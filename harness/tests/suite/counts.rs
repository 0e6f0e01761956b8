//! The counts the docs state are the code's: the builds and runs of `just compare`, `just
//! corpus` and the gate's FT case as `lab measure --plan` counts them (nothing built or run),
//! and the programs the ship verdict judges as the case registry lists them.

use galloc_lab::report::tables::thousands;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap()
}

/// `lab measure --plan ARGS`: (builds, runs), as its one line gives them.
fn plan(args: &[&str]) -> (String, String) {
    let (ok, out, err) = crate::cli::lab_printing(&[&["measure", "--plan"], args].concat());
    assert!(ok, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("this run: "))
        .expect(&out);
    let number = |after: &str| -> String {
        let n: u64 = line
            .split(after)
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no `{after}` in {line}"));
        thousands(n)
    };
    (number(" builds"), number(" runs"))
}

#[test]
fn the_counts_the_docs_state_are_the_codes() {
    let (builds, runs) = plan(&[]);
    let performance = read("docs/performance.md");
    let said = format!("`just compare` makes {runs} runs and {builds} builds");
    assert!(performance.contains(&said), "docs/performance.md: {said}");

    let (builds, runs) = plan(&["--cases", "corpus", "--out", "results/corpus"]);
    let said = format!("({builds} builds), {runs} runs");
    assert!(read("docs/ship.md").contains(&said), "docs/ship.md: {said}");

    let (builds, _) = plan(&[
        "--layouts",
        "1",
        "--cases",
        "ft-stress",
        "--out",
        "target/lab/check",
    ]);
    let said = format!("`ft-stress` would add {builds} builds");
    assert!(read("docs/gate.md").contains(&said), "docs/gate.md: {said}");
    let said = format!("the FT case adds {builds} builds");
    assert!(read("justfile").contains(&said), "justfile: {said}");

    let default = galloc_lab::run::scenario::select("default").unwrap().len();
    let corpus = galloc_lab::run::scenario::select("corpus").unwrap().len();
    let readme = read("README.md");
    for said in [
        format!("over the {} programs", default + corpus),
        format!("the {default} default cases and the {corpus} corpus programs"),
    ] {
        assert!(readme.contains(&said), "README.md: {said}");
    }
}
