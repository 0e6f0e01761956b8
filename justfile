# galloc lab: one recipe per job. `just` lists them; `just ready` is exactly what CI runs.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Every variant id, from the registry (variants/src/lib.rs), is read by the recipes that loop
# over variants when they run (`just _variants`), not when the justfile is parsed: a parse-time
# `cargo run` cost every `just` call a cargo start, and a registry that failed to build left
# the loops over zero variants, passing.

_default:
    @just --list -u

# The registry's variant ids, one per line (`--all`: reproductions too); fails, naming the registry, if it does not build or names none.
_variants *flags:
    @out=$(cargo run -q --locked -p galloc-variants --bin variants -- ids {{ if flags == "" { "" } else { quote(flags) } }}) || { echo "error: the variant registry (variants/src/lib.rs) did not build or run; see cargo's message above" >&2; exit 1; }; [ -n "$out" ] || { echo "error: the variant registry (variants/src/lib.rs) names no variant" >&2; exit 1; }; echo "$out"

# Install what the lab needs beyond Rust: the wasm32v1-none target (rustup does not auto-install here), binaryen (wasm-opt, for Gear's post-processing), and a C++ compiler and flock for the fuzz target (libFuzzer is C++), through the system's package manager (apt-get, dnf, pacman or Homebrew). The charts' font comes with the lab (the `dejavu` crate): nothing to install.
setup:
    @rustup target list --installed | grep -qx wasm32v1-none || rustup target add wasm32v1-none
    @command -v wasm-opt >/dev/null || just _install binaryen binaryen binaryen binaryen
    @command -v c++ >/dev/null || just _install g++ gcc-c++ gcc ""
    @command -v flock >/dev/null || just _install util-linux util-linux util-linux flock

# Installs a package by its name on apt-get, dnf, pacman and Homebrew (in that order; "" where that system needs nothing), with sudo when not root; with none of them, says what to install.
_install apt dnf pacman brew:
    #!/usr/bin/env bash
    set -euo pipefail
    # The names as shell variables, quoted by just: a value is data, never shell.
    apt={{quote(apt)}} dnf={{quote(dnf)}} pacman={{quote(pacman)}} brew={{quote(brew)}}
    sudo=$( [ "$(id -u)" = 0 ] || command -v sudo || true )
    if command -v apt-get >/dev/null; then
        echo "installing $apt (apt-get)"
        $sudo apt-get install -y -q "$apt" >/dev/null || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "$apt" >/dev/null; }
    elif command -v dnf >/dev/null; then
        echo "installing $dnf (dnf)"; $sudo dnf install -y -q "$dnf"
    elif command -v pacman >/dev/null; then
        echo "installing $pacman (pacman)"; $sudo pacman -S --noconfirm --needed "$pacman"
    elif command -v brew >/dev/null; then
        [ -z "$brew" ] || { echo "installing $brew (Homebrew)"; brew install "$brew"; }
    else
        echo "no apt-get, dnf, pacman or Homebrew here: install $apt (Debian's name) yourself, then run this again" >&2
        exit 1
    fi

# Regenerate every result: allocator code sizes, then every case x variant on the wasmtime fuel meter, gtest and, when LAB_NODE or LAB_NODE_BIN names one, a real node (results/, results/README.md, results/metadata.json, images/). Without a node it says so in one line and runs the rest. Runs whose builds did not change are reused from target/lab/cache.
compare variants="all" cases="default" backends="all": (sizes variants) (measure variants cases backends)

# Build the cases' programs (the lab's gstd and Sails contracts and the synthetic program) per variant and run the cases on the given backends, each plain build at 16 heap layouts over the Wasm page on gas and on fuel (the second workload at 4 of them, on gas): results/<backend>/*.csv, results/traces/, results/README.md. Prints cargo's progress while the lab itself builds, then the verdict table.
measure variants="all" cases="default" backends="gtest,wasmtime": setup
    cargo run --locked -p galloc-lab --bin lab -- measure --backends {{quote(backends)}} --variants {{quote(variants)}} --cases {{quote(cases)}}

# Measure the corpus (eight programs written as Gear authors write them, six on Sails: docs/cases.md, "The corpus") on every variant, both workloads, over the whole layout sweep: results/corpus/ (CSVs, README.md, images/); then re-render results/README.md, which opens with the ship verdict over the default cases and the corpus, and print it. Runs whose builds did not change are reused from target/lab/cache.
corpus variants="all" backends="wasmtime,gtest": setup
    cargo run --locked -p galloc-lab --bin lab -- measure --cases corpus --variants {{quote(variants)}} --backends {{quote(backends)}} --out results/corpus
    cargo run -q --locked -p galloc-lab --bin lab -- report
    cargo run -q --locked -p galloc-lab --bin lab -- ship

# Gear PR #4853's figure, re-measured (docs/gear-2025.md, "Gear's 2025 study (PR #4853), re-measured"): the reproduction `pr4853` (the PR's page release) on its case `ft-4853` (the study's test shape), beside shipping and gear-next (the same allocator with correct page arithmetic), at the 16 heap layouts on gtest, every message sent whatever comes back: results/pr4853/ (README.md, CSVs, images/). About a minute here once its builds are made (`time just pr4853`: 64-74 s); the first time it also builds 3 variants and re-links each at 15 layouts.
pr4853: setup
    cargo run --locked -p galloc-lab --bin lab -- reproduce pr4853 --against shipping,gear-next

# What galloc should ship: every variant against shipping over the default cases (results/) and the corpus (results/corpus/) at once, and the variant the rule of docs/ship.md names (the table results/README.md opens with), then every variant against the design target (docs/design.md, "The target"), from the results files, running nothing.
ship:
    cargo run -q --locked -p galloc-lab --bin lab -- ship

# Measure another gstd program (its crate directory) with a scenario file, built once per variant without editing the crate; writes target/lab/programs/<package>-<path hash>/<scenario name>/ (README.md, CSVs, charts). Example: `just program contracts/examples/guestbook contracts/examples/guestbook/guestbook.json`.
program crate scenario variants="all" backends="wasmtime,gtest": setup
    cargo run --locked -p galloc-lab --bin lab -- measure --program {{quote(crate)}} --scenario {{quote(scenario)}} --variants {{quote(variants)}} --backends {{quote(backends)}}

# Which variant should a program use? Builds it per variant, runs the scenario over the heap layouts on gtest (gas) and prints one answer: the variant (or shipping: change nothing), its median and range vs shipping, and the Cargo line. Example: `just pick contracts/examples/guestbook contracts/examples/guestbook/guestbook.json`.
pick crate scenario variants="all": setup
    cargo run --locked -p galloc-lab --bin lab -- pick {{quote(crate)}} {{quote(scenario)}} --variants {{quote(variants)}}

# Where should a program's statics and heap fall? Runs it once on the wasmtime meter at the linker's layout on the first SCENARIO (the crate's <package>.json when none is given), chooses a layout by the robust layout rule (docs/layout-rule.md), builds and measures it on gtest against the linker's on every SCENARIO (the later ones are workloads the choice did not see; it is recommended only where each measured it cheaper), and prints the `.cargo/config.toml` line that sets it, the predicted and measured change, and what the rule gave on the lab's 17 programs out of sample. `--variant V` for a program linking a variant (default shipping). Example: `just layout contracts/examples/guestbook contracts/examples/guestbook/guestbook.json contracts/examples/guestbook/guestbook-second.json`. Each argument reaches the lab as its own argument ("$@"), never as shell.
[positional-arguments]
layout crate *scenarios: setup
    cargo run --locked -p galloc-lab --bin lab -- layout "$@"

# The regression gate: measure into target/lab/check at the linker's layout (the sweep is for verdicts, not for the gate), then compare with the committed results/ (the baseline); fails if any total or allocator cost rose by more than TOLERANCE percent (default 0: any rise).
check variants="all" cases="default" backends="wasmtime,gtest" tolerance="0": setup
    @t={{quote(tolerance)}}; [[ "$t" =~ ^([0-9]+([.][0-9]*)?|[.][0-9]+)$ ]] || { echo "error: check: TOLERANCE '$t' is not a tolerance: give a percentage, 0 or more (0: any rise fails); nothing was measured" >&2; exit 1; }
    rm -rf target/lab/check
    cargo run -q --locked -p galloc-lab --bin lab -- measure --quiet --layouts 1 --out target/lab/check --backends {{quote(backends)}} --variants {{quote(variants)}} --cases {{quote(cases)}}
    cargo run -q --locked -p galloc-lab --bin lab -- check --tolerance-pct {{quote(tolerance)}}

# Accept a change in cost deliberately: regenerate results/ (the baseline), then commit it.
bless variants="all" cases="default" backends="all": (compare variants cases backends)

# The gate as CI runs it: every variant on the NFT cases, both backends (the FT case adds 42 builds, three per variant, and 3 minutes; `just check` runs everything).
gate: (check "all" "nft,nft-stress" "wasmtime,gtest" "0")

# Is the default sweep enough? Runs CASES with shipping and VARIANTS at every 1 KiB of the 64 KiB Wasm page (64 layouts; every point of the default sweep and of the earlier one over a Gear page is among them) into target/lab/sweep-check, then holds the default sweep (16 layouts stratified over the Wasm page on gas and on fuel) against that grid (`lab sweep-check --layouts 8 --one-gear-page --fuel-stride 1` holds the earlier one): the same verdict and a median within the minimum effect (1 percentage point) for every pair, or it fails (it fails on 1 of 8 pairs: README). Not in CI (25 min here): docs/verdicts.md, "Is the sweep enough?" has its table.
sweep-check cases="nft-stress,vft-stress" variants="lab,granularity-8k" backends="wasmtime,gtest": setup
    rm -rf target/lab/sweep-check
    cargo run --locked -p galloc-lab --bin lab -- measure --layout-step 1024 --no-second-workload --out target/lab/sweep-check --backends {{quote(backends)}} --variants {{quote("shipping," + variants)}} --cases {{quote(cases)}}
    cargo run -q --locked -p galloc-lab --bin lab -- sweep-check

# Where the heap starts (results/heap-skip/README.md, docs/design.md "Where the heap starts"): each program's plain build with its heap base alone moved over one Gear page in 16 steps (statics in place) on gtest, each variant's spread over those beside its spread over the layout sweep (results/); and a page map per program (every page each message touches, by kind, for shipping and lab at lab's cheapest and dearest layout, on the wasmtime meter). Writes results/heap-skip/ (README.md, skips.csv, pages.csv.zst, images/), then re-renders both reports, whose case pages show the maps. Not in CI (about 5 min here once the sweep's builds exist).
heap-skip cases="nft-stress,vft-stress,synthetic-map,synthetic-strings,dex,market,dao,game,nft,vesting" variants="shipping,lab": setup
    cargo run --locked -p galloc-lab --bin lab -- heap-skip --cases {{quote(cases)}} --variants {{quote(variants)}}
    cargo run -q --locked -p galloc-lab --bin lab -- report
    cargo run -q --locked -p galloc-lab --bin lab -- report --results results/corpus

# A layout for every program (docs/layout-rule.md): first the 17 programs' second workloads with shipping and lab on gtest at every layout of the sweep (into target/lab/layout-second; the committed sweep runs them at 4); then each program's plain build runs once on the wasmtime meter keeping every 16-byte granule each message touches, the layout model predicts its gtest total at each of the sweep's 16 layouts, held against what the sweep measured there (results/, results/corpus/: run `just compare` and `just corpus` first), and rules that choose a layout are judged on the second workloads at the layout they chose. HEAP is where the model puts the heap's blocks at another layout: `moves` (at the same distance from the heap base) or `stays` (only in the static pages' tail). Writes results/layout-model/ (README.md, model.csv, second.csv) and re-renders results/README.md. Not in CI (18 min here on a fresh machine: 17 for the second workloads, builds made, and under a minute for the model).
layout-model heap="moves": setup
    cargo run --locked -p galloc-lab --bin lab -- measure --cases programs --variants shipping,lab --backends gtest --second-stride 1 --out target/lab/layout-second
    cargo run --locked -p galloc-lab --bin lab -- layout-model --heap {{quote(heap)}} --second target/lab/layout-second
    cargo run -q --locked -p galloc-lab --bin lab -- report

# The scale cases: two programs whose state grows by batches past 4 MiB of live heap (a collection of 40,000 tokens, a journal of 40,000 entries), the same probe messages at 10 checkpoints along the way, every variant on gtest at 4 layouts of the sweep, every reply checked. Writes results/scale/ (README.md, messages.csv, images/scale.png), then re-renders the report, whose design target reads it (docs/design.md, "The target"). Not in CI (a few minutes here once the builds exist).
scale variants="all": setup
    cargo run --locked -p galloc-lab --bin lab -- scale --variants {{quote(variants)}}
    cargo run -q --locked -p galloc-lab --bin lab -- report

# Re-render the report (results/README.md and a page per case in results/cases/) and the charts from results/*.csv, running nothing.
report:
    cargo run --locked -p galloc-lab --bin lab -- report

# Benchmark `just compare` itself: warm with nothing changed; after an edit to the allocator that changes no Wasm byte (every variant rebuilt, no run repeated); and one variant rebuilt and re-run from scratch, as after editing it. With fresh=yes, first `just compare` in a fresh clone of HEAD (its own target dir: the lab tree, every build and run; 58 min 37 s here), which must reproduce results/ and images/ byte for byte. Prints seconds; writes target/lab/bench-compare.csv.
bench-compare variant="multi-buffers" fresh="no": setup
    #!/usr/bin/env bash
    set -euo pipefail
    # The arguments as shell variables, quoted by just: a value is data, never shell.
    fresh={{quote(fresh)}} variant={{quote(variant)}}
    # Seconds a command took; its output goes to target/lab/bench-compare.log, and a failure stops the benchmark.
    mkdir -p target/lab && : > target/lab/bench-compare.log
    t() { local s=$(date +%s%N); "$@" >>target/lab/bench-compare.log 2>&1 || { echo "failed: $* (see target/lab/bench-compare.log)" >&2; return 1; }; local ms=$(( ($(date +%s%N) - s) / 1000000 )); echo "$((ms / 1000)).$(( (ms % 1000) / 100 ))"; }
    rows='scenario,seconds'
    if [ "$fresh" = yes ]; then
        clone=target/lab/fresh-clone
        rm -rf "$clone" && git clone -q . "$clone"
        echo "fresh clone of $(git rev-parse --short HEAD): just compare (the lab tree, then every build and run) ..."
        fresh=$(t bash -c "cd $clone && just compare")
        echo "fresh clone: $fresh s"
        # A fresh run must give what is committed, byte for byte.
        git -C "$clone" status --porcelain -- results images | { ! grep . ; } || { echo "the fresh clone's results differ from HEAD's (above)"; exit 1; }
        rm -rf "$clone"
        rows="$rows"$'\n'"fresh clone: just compare,$fresh"
    fi
    cargo build -q --locked -p galloc-lab
    # Bring target/ up to date with the working tree first (after a lab change, a whole run).
    t just compare >/dev/null
    warm=$(t just compare)
    # An edit to the allocator that changes no Wasm byte (a comment at its end): every build goes
    # back through cargo (stamps key on content), no run is repeated. Put back however it ends.
    cp allocator/src/lib.rs target/lab/bench-lib.rs
    trap 'cp target/lab/bench-lib.rs allocator/src/lib.rs' EXIT
    echo '// bench-compare: an edit that changes no Wasm byte' >> allocator/src/lib.rs
    touched=$(t just compare)
    cp target/lab/bench-lib.rs allocator/src/lib.rs && trap - EXIT
    one=$(t bash -c 'just sizes "$1" && cargo run -q --locked -p galloc-lab --bin lab -- measure --fresh --backends wasmtime,gtest --variants "$1" --quiet' _ "$variant")
    rows="$rows"$'\n'"warm compare,$warm"$'\n'"allocator edited (no Wasm byte changed): all variants rebuilt,$touched"$'\n'"one variant ($variant) rebuilt and re-run,$one"
    echo "$rows" | tee target/lab/bench-compare.csv

# Benchmark: wall time of each scenario on gtest and on the wasmtime meter (plain builds; prints a table).
bench-backends variants="all" cases="default": setup
    cargo run -q --locked -p galloc-lab --bin lab -- bench --variants {{quote(variants)}} --cases {{quote(cases)}}

# Rebuild every variant's allocator alone and rewrite results/code-size.csv.
sizes variants="all": setup
    cargo run --locked -p galloc-lab --bin lab -- sizes --variants {{quote(variants)}}

# Run all tests: unit tests, the stress suite and edge cases per variant, and the wasm builds. One test thread more than the cores: the harness suite's tests that build outside programs take turns (`examples_turn` in harness/tests/suite/cli.rs), and a thread waiting its turn would otherwise leave a core idle (CI's suite: docs/performance.md).
test: setup
    cargo test -q --locked --workspace --exclude galloc -- --test-threads "$(( {{num_cpus()}} + 1 ))"
    cargo test -q --locked -p galloc --lib
    vs=$(just _variants); for v in $vs; do echo "== galloc, variant $v"; cargo test -q --locked -p galloc --features "$v" --tests -- --nocapture; done
    cargo run -q --locked -p galloc-lab --bin lab -- sizes --check
    just node-test

# Miri, Rust's checker of undefined behaviour, on the host tests of the allocator's own parts: the fronts (`slab`, `buffer`), the page backends (`backend`, without dlmalloc: dlmalloc 0.2.14 itself fails Miri, docs/tests.md), the simulated Gear memory (`source`) and the lab's design (`compact`). Not in `just test`: it needs the nightly toolchain, installed here on first use (CI's budget has no room for that toolchain and a second build of the allocator). Addresses made from integers (Gear's page numbers, and the tests' own) are allowed: `-Zmiri-permissive-provenance`.
miri:
    @rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal --component miri,rust-src
    @rustup +nightly component list --installed | grep -q '^miri' || rustup +nightly component add miri rust-src
    MIRIFLAGS=-Zmiri-permissive-provenance cargo +nightly miri test -q --locked -p galloc --lib -- slab:: buffer:: backend:: source:: compact::

# The node backend's own tests (its own workspace and lock file: gclient pins Gear 1.10): event and account mapping, the no-node errors. No node runs here.
node-test:
    cargo test -q --locked --manifest-path harness/node/Cargo.toml --target-dir target/lab/node

# Format and lint: rustfmt, then clippy on the host, for every variant and the replay programs on wasm32v1-none, and the node backend and fuzz target (their own workspaces).
lint: _fmt _lint-targets
    cargo clippy -q --locked --workspace --all-targets -- -D warnings
    cargo clippy -q --locked --manifest-path harness/node/Cargo.toml --target-dir target/lab/node --all-targets -- -D warnings

_fmt:
    cargo fmt --all --check
    cargo fmt --manifest-path harness/node/Cargo.toml --check
    cargo fmt --manifest-path fuzz/Cargo.toml --check

# clippy on what `just test` does not build for the host: galloc per variant (reproductions too) and the replay programs on wasm32v1-none, and the fuzz target.
_lint-targets: setup
    vs=$(just _variants --all); for v in $vs; do cargo clippy -q --locked -p galloc --target wasm32v1-none --features "$v,probe" -- -D warnings; done
    cargo clippy -q --locked -p galloc --target wasm32v1-none --features probe-twin -- -D warnings
    cargo clippy -q --locked -p lab-replay -p lab-synthetic --target wasm32v1-none --features galloc/shipping -- -D warnings
    cargo clippy -q --locked --manifest-path fuzz/Cargo.toml --target-dir target/lab/fuzz --features galloc/shipping -- -D warnings

# clippy's driver as cargo's workspace wrapper, with the `-D warnings` `cargo clippy -- -D warnings` passes it (clippy's own variable): a build under it lints the workspace's crates as it compiles them. The lab removes both from the builds it starts (`workspace::cargo_command`), so every Wasm is still built as deployed.
linted := "RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

# Replay the recorded traces (results/traces/, from `just compare`) against every variant, natively and in Wasm under fuel, checking every step: per-variant fuel against the recording, time, divergences; a fault is shrunk to a minimal trace in target/lab/replay/. `just replay all default FILE` replays that trace file instead.
replay variants="all" cases="default" trace="": setup
    cargo run -q --locked -p galloc-lab --bin lab -- replay --variants {{quote(variants)}} --cases {{quote(cases)}} {{ if trace != "" { "--trace " + quote(trace) } else { "" } }}

# Coverage-guided fuzzing (libFuzzer, on stable through sanitizer-coverage flags) of each variant with checked request sequences, SECONDS per variant; corpus in target/lab/fuzz/corpus/<variant>, findings in target/lab/fuzz/crashes/<variant>/ (fails on any). A finding kept in allocator/tests/regressions/ becomes a test for every variant.
fuzz variants="all" seconds="600": setup
    #!/usr/bin/env bash
    set -euo pipefail
    # The registry is read before the fuzzing flags are set: built with them, its binary would
    # not link (the sanitizer's symbols are libFuzzer's).
    # The arguments as shell variables, quoted by just: a value is data, never shell. Each
    # variant must be one the registry names (it becomes a path and a cargo feature), and
    # SECONDS a count (it reaches libFuzzer's flag and the arithmetic below).
    vs={{quote(variants)}} seconds={{quote(seconds)}}
    known=$(just _variants --all)
    [ "$vs" = all ] && vs=$(just _variants)
    for v in ${vs//,/ }; do grep -qxF -- "$v" <<<"$known" || { echo "error: fuzz: no variant '$v' in the registry (variants/src/lib.rs); \`just _variants --all\` lists them" >&2; exit 1; }; done
    [[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "error: fuzz: SECONDS must be a whole number above 0, not '$seconds'" >&2; exit 1; }
    export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
    host=$(rustc -vV | sed -n 's/^host: //p')
    for v in ${vs//,/ }; do
        mkdir -p "target/lab/fuzz/corpus/$v" "target/lab/fuzz/crashes/$v" target/lab/fuzz/bin
        # One target dir for all variants (libFuzzer's C++ is built once); the lock keeps a
        # parallel `just fuzz` from swapping the binary between build and copy.
        flock target/lab/fuzz/build.lock bash -c 'cargo build -q --locked --release --manifest-path fuzz/Cargo.toml --target "$1" --target-dir target/lab/fuzz --features "galloc/$2" && cp "target/lab/fuzz/$1/release/requests" "target/lab/fuzz/bin/requests-$2"' _ "$host" "$v"
        log="target/lab/fuzz/$v.log"
        if ! "target/lab/fuzz/bin/requests-$v" -max_total_time="$seconds" -print_final_stats=1 \
            -artifact_prefix="target/lab/fuzz/crashes/$v/" "target/lab/fuzz/corpus/$v" allocator/tests/regressions >"$log" 2>&1; then
            tail -30 "$log"; echo "fuzz: $v: a finding, kept in target/lab/fuzz/crashes/$v/ (copy it to allocator/tests/regressions/ once fixed)"; exit 1
        fi
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
        echo "fuzz: $v: $seconds s, $runs runs ($((runs / seconds)) a second), $cov, no finding"
    done

# Exactly what CI runs: `just lint`, `just test`, the gate and a short fuzz. The host crates and the node backend are linted as `just test` and the gate build them (`linted`), with clippy's lints and `-D warnings` on the same targets `just lint` checks (libraries, binaries, tests) and on each variant's tests besides: on a clean machine `cargo clippy` first checked the gtest, wasmtime and gclient trees once more (1,056 s; `.ci/run` from a clean clone went from 65 to 52 min).
ready: _fmt _lint-targets
    {{linted}} just test
    {{linted}} just gate
    just fuzz-ci

# The fuzz target for 3 seconds per variant (CI's bounded run; the longer runs are `just fuzz`).
fuzz-ci: (fuzz "all" "3")
