//! `lab replay`: the traces `just compare` recorded, replayed against every variant natively
//! and in Wasm under fuel, checked at every step; the first fault or divergence is shrunk to a
//! minimal trace.

use anyhow::{bail, Context, Result};
use galloc_lab::build::artifact::{build, BuildRequest, PostProcess};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::results::trace;
use galloc_lab::results::{read_csv, write_csv, ArtifactRow};
use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
use galloc_lab::run::replay::{
    divergence, in_wasm, natively, op_name, shrink, write_trace, Replayed, Workload,
};
use galloc_variants::Variant;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    selection: super::Selection,
    /// Replay this trace file (the columns of results/traces/README.md; `.csv` or
    /// `.csv.zst`) on every selected variant instead of the recorded cases.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Only the native replay (no Wasm builds, no fuel).
    #[arg(long)]
    native_only: bool,
}

/// A workload's name, the package whose recording it is (its probe builds' heap base is
/// where the replay program's heap must start), and per variant the workload with its
/// recorded trace (when it is that variant's own recording).
struct Named {
    name: String,
    package: Option<&'static str>,
    per_variant: Vec<(Workload, Option<Vec<trace::TraceRecord>>)>,
}

/// One workload on one variant.
#[derive(Serialize)]
struct Row {
    case: String,
    variant: String,
    steps: usize,
    native_ms: f64,
    wasm_s: Option<f64>,
    /// Fuel of every allocator call in the Wasm replay.
    replay_fuel: Option<u64>,
    /// Fuel the recording run's probe gave the same calls (its own variant's trace).
    recorded_fuel: Option<u64>,
    /// Calls whose replay fuel equals the recorded fuel.
    calls_equal: Option<usize>,
    fault: String,
}

pub fn run(ws: &Workspace, args: Args) -> Result<()> {
    let (cases, variants) = args.selection.resolve()?;
    let out_dir = ws.root().join("target/lab/replay");
    std::fs::create_dir_all(&out_dir)?;
    // The recorded traces and builds are read from results/: as the lab wrote them.
    let _lock = galloc_lab::store::checked(ws, &ws.results_dir())?;
    let mut workloads: Vec<Named> = Vec::new();
    match &args.trace {
        Some(file) => {
            let records = trace::read(file)?;
            let w = Workload::from_trace(&records)
                .with_context(|| format!("trace {}", file.display()))?;
            let name = file
                .file_name()
                .and_then(|n| n.to_str())
                .map(|n| n.split('.').next().unwrap_or(n).to_owned())
                .unwrap_or_else(|| "trace".into());
            workloads.push(Named {
                name,
                package: None,
                per_variant: variants.iter().map(|_| (w.clone(), None)).collect(),
            });
        }
        None => {
            for case in &cases {
                let mut per_variant = Vec::new();
                for v in &variants {
                    let path = ws
                        .results_dir()
                        .join("traces")
                        .join(format!("{}-{}.csv.zst", case.id, v.id));
                    let records = trace::read(&path)?;
                    let w = Workload::from_trace(&records)
                        .with_context(|| format!("trace {}", path.display()))?;
                    per_variant.push((w, Some(records)));
                }
                workloads.push(Named {
                    name: case.id.to_owned(),
                    package: Some((case.make)().package),
                    per_variant,
                });
            }
        }
    }

    let mut programs = Programs {
        ws,
        artifacts: read_csv(&ws.results_dir().join("artifacts.csv"))?,
        built: HashMap::new(),
    };
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (vi, v) in variants.iter().enumerate() {
        let native = native_replayer(ws, v)?;
        for Named {
            name,
            package,
            per_variant,
        } in &workloads
        {
            let (w, records) = &per_variant[vi];
            let scratch = out_dir.join("scratch").join(v.id);
            let (replayed, nanos) = natively(&native, w, &scratch)?;
            let mut row = Row {
                case: name.clone(),
                variant: v.id.to_owned(),
                steps: w.len(),
                native_ms: nanos as f64 / 1e6,
                wasm_s: None,
                replay_fuel: None,
                recorded_fuel: None,
                calls_equal: None,
                fault: "none".into(),
            };
            if let Some((step, fault)) = replayed.fault() {
                row.fault = format!("step {step}: {}", fault.name());
                let minimal = shrink(w, |sub| {
                    Ok(natively(&native, sub, &scratch)?.0.fault().is_some())
                })?;
                let path = out_dir.join(format!("{name}-{}-minimal.csv", v.id));
                write_trace(&path, &minimal)?;
                failures.push(format!(
                    "{name} on {}: step {step} ({}): {}; minimal trace ({} steps): {}",
                    v.id,
                    w.steps().nth(step).map_or("?", |s| op_name(s.kind)),
                    fault.name(),
                    minimal.len(),
                    path.display()
                ));
            }
            if !args.native_only {
                let code = programs.get(v, package.filter(|_| records.is_some()))?;
                let start = Instant::now();
                let mut backend = WasmtimeBackend::new()?;
                let wasm = in_wasm(&mut backend, &code, w)
                    .with_context(|| format!("replaying {name} on {} in Wasm", v.id))?;
                row.wasm_s = Some(start.elapsed().as_secs_f64());
                row.replay_fuel = Some(wasm.fuel.iter().sum());
                if let Some(records) = records {
                    write_calls(
                        &out_dir.join(format!("{name}-{}-calls.csv", v.id)),
                        records,
                        &wasm,
                    )?;
                    row.recorded_fuel = Some(records.iter().map(|r| r.fuel).sum());
                    row.calls_equal = Some(
                        records
                            .iter()
                            .zip(&wasm.fuel)
                            .filter(|(r, f)| r.fuel == **f)
                            .count(),
                    );
                }
                if let Some(i) = divergence(&replayed, &wasm) {
                    failures.push(format!(
                        "{name} on {}: the Wasm replay observed step {i} differently from the \
                         native one ({:?} against {:?})",
                        v.id,
                        wasm.observed.get(i),
                        replayed.observed.get(i)
                    ));
                }
            }
            rows.push((row, replayed));
        }
    }

    // Differential: every variant replaying the same workload must observe the same.
    for Named {
        name, per_variant, ..
    } in &workloads
    {
        let same: Vec<usize> = (0..variants.len())
            .filter(|&i| per_variant[i].0 == per_variant[0].0)
            .collect();
        let replays: Vec<(&str, &Replayed)> = rows
            .iter()
            .filter(|(r, _)| r.case == *name)
            .enumerate()
            .filter(|(i, _)| same.contains(i))
            .map(|(_, (r, rep))| (r.variant.as_str(), rep))
            .collect();
        if let Some((first, reference)) = replays.first() {
            for (variant, rep) in &replays[1..] {
                if let Some(i) = divergence(reference, rep) {
                    failures.push(format!(
                        "{name}: {variant} diverges from {first} at step {i} ({:?} against {:?})",
                        rep.observed.get(i),
                        reference.observed.get(i)
                    ));
                }
            }
        }
    }

    let rows: Vec<Row> = rows.into_iter().map(|(r, _)| r).collect();
    print_table(&rows);
    write_csv(&out_dir.join("replay.csv"), &rows)?;
    println!("written: {}", out_dir.join("replay.csv").display());
    if !failures.is_empty() {
        bail!("{}", failures.join("\n"));
    }
    Ok(())
}

/// Each call's fuel in the recording and in the replay, side by side.
fn write_calls(
    path: &std::path::Path,
    records: &[trace::TraceRecord],
    wasm: &Replayed,
) -> Result<()> {
    #[derive(Serialize)]
    struct Call<'a> {
        step: usize,
        message: u64,
        op: &'a str,
        size: u64,
        align: u64,
        new_size: u64,
        recorded_fuel: u64,
        replay_fuel: Option<u64>,
        recorded_result: u64,
        replay_result: Option<usize>,
    }
    let rows: Vec<Call> = records
        .iter()
        .enumerate()
        .map(|(i, r)| Call {
            step: i,
            message: r.message,
            op: &r.op,
            size: r.size,
            align: r.align,
            new_size: r.new_size,
            recorded_fuel: r.fuel,
            replay_fuel: wasm.fuel.get(i).copied(),
            recorded_result: r.result,
            replay_result: wasm.results.get(i).copied(),
        })
        .collect();
    write_csv(path, &rows)
}

fn print_table(rows: &[Row]) {
    println!("| case | variant | steps | native ms | wasm s | replay fuel | recorded fuel | calls equal | fault |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    let opt = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
    for r in rows {
        println!(
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} |",
            r.case,
            r.variant,
            r.steps,
            r.native_ms,
            r.wasm_s.map_or("-".into(), |s| format!("{s:.2}")),
            opt(r.replay_fuel),
            opt(r.recorded_fuel),
            r.calls_equal
                .map_or("-".into(), |c| format!("{c}/{}", r.steps)),
            r.fault
        );
    }
}

/// The native replayer built for `v` (release: the replay itself is what is timed), in its
/// own target directory so variants do not rebuild each other.
fn native_replayer(ws: &Workspace, v: &Variant) -> Result<PathBuf> {
    let target = ws.target_dir(&format!("native-{}", v.id));
    let status = galloc_lab::build::process::status(
        galloc_lab::build::workspace::cargo_command()
            .current_dir(ws.root())
            .args([
                "build",
                "-q",
                "--locked",
                "--release",
                "-p",
                "galloc-replay-native",
            ])
            .args(["--features", &format!("galloc/{}", v.feature)])
            .arg("--target-dir")
            .arg(&target),
    )
    .context("running cargo for the native replayer")?;
    if !status.success() {
        bail!(
            "building the native replayer for {} failed (cargo's output above)",
            v.id
        );
    }
    Ok(target.join("release/replay-native"))
}

/// The replay program per variant and heap base, built once per run.
struct Programs<'a> {
    ws: &'a Workspace,
    /// results/artifacts.csv: the recorded builds' heap bases.
    artifacts: Vec<ArtifactRow>,
    built: HashMap<(&'static str, Option<&'static str>), Vec<u8>>,
}

impl Programs<'_> {
    /// The replay program for `v` (probe build), padded so that its `__heap_base` is that of
    /// `package`'s probe build on `v` (the recording): the allocator then sees the same
    /// addresses and the same heap-base tail. Unpadded without a recording.
    fn get(&mut self, v: &'static Variant, package: Option<&'static str>) -> Result<Vec<u8>> {
        if let Some(code) = self.built.get(&(v.id, package)) {
            return Ok(code.clone());
        }
        let request = |layout_pad| BuildRequest {
            package: "lab-replay",
            variant: v,
            probe: true,
            post: PostProcess::Gear,
            layout_pad,
            layout_offset: 0,
            heap_skip: 0,
            extra_features: "",
            external: None,
        };
        let plain = build(self.ws, request(0))?;
        let target = package.and_then(|package| {
            self.artifacts
                .iter()
                .find(|r| r.package == package && r.variant == v.id && r.build == "probe")
                .map(|r| r.heap_base)
        });
        let code = match (target, plain.heap_base) {
            (Some(target), Some(base)) if target < base => bail!(
                "the replay program's heap starts at {base}, above the recorded contract's \
                 {target}: it cannot be padded down to it"
            ),
            (Some(target), Some(base)) if target > base => {
                let padded = build(self.ws, request(target - base))?;
                if padded.heap_base != Some(target) {
                    bail!(
                        "padding the replay program by {} put its heap at {:?}, not {target}",
                        target - base,
                        padded.heap_base
                    );
                }
                padded.bytes
            }
            _ => plain.bytes,
        };
        self.built.insert((v.id, package), code.clone());
        Ok(code)
    }
}
