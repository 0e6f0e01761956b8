//! The wasmtime fuel meter keeps Gear's semantics where programs can see them (memory that
//! persists, failed messages rolled back, first-fit page allocation, freed pages losing their
//! data), checked against gtest on a small hand-written program; its page hooks cost no fuel;
//! and it collects every allocator call of a probe build.

use galloc_lab::build::artifact::{build, BuildRequest, PostProcess};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
use galloc_lab::run::backend::{gtest::GtestBackend, Backend, BackendKind};
use galloc_lab::run::execute::{run_case, ProbeReads};
use galloc_lab::run::measure::{measure_case, Builds};
use galloc_lab::run::scenario::select;

/// Ops, by the payload's first byte, then two little-endian u32 arguments `a`, `b`:
/// 0: counter += 1, reply counter; 1: counter += 1, alloc(1), then panic with "boom";
/// 2: reply alloc(a); 3: reply free_range(a, b); 4: store b at a, reply 0; 5: reply load(a);
/// 6: send "boom" to the zero address twice (as Sails sends events), reply 0; 7: send it, then
/// panic (nothing is sent).
const PROGRAM: &str = r#"
(module
  (import "env" "memory" (memory 17))
  (import "env" "gr_read" (func $read (param i32 i32 i32 i32)))
  (import "env" "gr_reply" (func $reply (param i32 i32 i32 i32)))
  (import "env" "gr_panic" (func $panic (param i32 i32)))
  (import "env" "alloc" (func $alloc (param i32) (result i32)))
  (import "env" "free_range" (func $free_range (param i32 i32) (result i32)))
  (import "env" "gr_send" (func $send (param i32 i32 i32 i32 i32)))
  (global $sp (mut i32) (i32.const 1048576))
  (export "__gear_stack_end" (global $sp))
  (data (i32.const 1048576) "boom")
  (func (export "init"))
  (func (export "handle")
    (local $op i32) (local $a i32) (local $b i32) (local $out i32)
    (call $read (i32.const 0) (i32.const 9) (i32.const 1048600) (i32.const 1048640))
    (local.set $op (i32.load8_u (i32.const 1048600)))
    (local.set $a (i32.load (i32.const 1048601)))
    (local.set $b (i32.load (i32.const 1048605)))
    (if (i32.le_u (local.get $op) (i32.const 1))
      (then
        (i32.store (i32.const 1048592) (i32.add (i32.load (i32.const 1048592)) (i32.const 1)))
        (local.set $out (i32.load (i32.const 1048592)))
        (if (local.get $op)
          (then
            (drop (call $alloc (i32.const 1)))
            (call $panic (i32.const 1048576) (i32.const 4))))))
    (if (i32.eq (local.get $op) (i32.const 2))
      (then (local.set $out (call $alloc (local.get $a)))))
    (if (i32.eq (local.get $op) (i32.const 3))
      (then (local.set $out (call $free_range (local.get $a) (local.get $b)))))
    (if (i32.eq (local.get $op) (i32.const 4))
      (then (i32.store (local.get $a) (local.get $b))))
    (if (i32.eq (local.get $op) (i32.const 5))
      (then (local.set $out (i32.load (local.get $a)))))
    ;; 48 zero bytes at 1048704: the zero address and no value.
    (if (i32.ge_u (local.get $op) (i32.const 6))
      (then
        (call $send (i32.const 1048704) (i32.const 1048576) (i32.const 4) (i32.const 0) (i32.const 1048640))
        (if (i32.eq (local.get $op) (i32.const 7))
          (then (call $panic (i32.const 1048576) (i32.const 4))))
        (call $send (i32.const 1048704) (i32.const 1048576) (i32.const 4) (i32.const 0) (i32.const 1048640))))
    (i32.store (i32.const 1048616) (local.get $out))
    (call $reply (i32.const 1048616) (i32.const 4) (i32.const -1) (i32.const 1048640))))
"#;

fn msg(op: u8, a: u32, b: u32) -> Vec<u8> {
    let mut m = vec![op];
    m.extend(a.to_le_bytes());
    m.extend(b.to_le_bytes());
    m
}

const PAGE: u32 = 64 * 1024;

/// `(message, expected reply as u32 or None for a failure)`.
fn script() -> Vec<(Vec<u8>, Option<u32>)> {
    vec![
        (msg(0, 0, 0), Some(1)),
        (msg(1, 0, 0), None), // increments, allocates, panics: all rolled back
        (msg(0, 0, 0), Some(2)),
        (msg(2, 1, 0), Some(17)), // first page above the 17 static ones
        (msg(2, 2, 0), Some(18)),
        (msg(3, 17, 17), Some(0)),
        (msg(2, 1, 0), Some(17)), // first fit reuses the hole
        (msg(2, 2, 0), Some(20)), // a 2-page run does not fit at 17
        (msg(3, 5, 5), Some(1)),  // static pages cannot be freed
        (msg(4, 20 * PAGE, 77), Some(0)),
        (msg(5, 20 * PAGE, 0), Some(77)), // memory persists
        (msg(3, 20, 21), Some(0)),
        (msg(2, 2, 0), Some(20)),
        (msg(5, 20 * PAGE, 0), Some(0)), // a page freed at the end of a message lost its data
        (msg(2, 1, 0), Some(22)),
        (msg(6, 0, 0), Some(0)),
        (msg(7, 0, 0), None),
    ]
}

/// Per message: failed, reply, and the payloads of what it sent (all to the zero address).
type Run = Vec<(bool, Vec<u8>, Vec<Vec<u8>>)>;

fn run(backend: &mut dyn Backend) -> Run {
    let code = wat::parse_str(PROGRAM).unwrap();
    let (program, init) = backend.deploy(&code, 7, &[]).unwrap();
    assert!(!init.failed);
    script()
        .into_iter()
        .map(|(payload, _)| {
            let out = backend.send(program, 7, &payload).unwrap();
            let sent = out.sent.expect("both backends see what a program sends");
            assert!(sent.iter().all(|m| m.destination == [0; 32]), "{sent:?}");
            let payloads = sent.into_iter().map(|m| m.payload).collect();
            (out.failed, out.reply, payloads)
        })
        .collect()
}

#[test]
fn gear_semantics_match_gtest() {
    let fuel = run(&mut WasmtimeBackend::new().unwrap());
    for (i, ((_, _, sent), (payload, _))) in fuel.iter().zip(script()).enumerate() {
        let expected = if payload[0] == 6 { 2 } else { 0 };
        assert_eq!(sent, &vec![b"boom".to_vec(); expected], "message {i}");
    }
    for (i, ((failed, reply, _), (_, expected))) in fuel.iter().zip(script()).enumerate() {
        match expected {
            Some(v) => assert_eq!(
                (*failed, reply.as_slice()),
                (false, &v.to_le_bytes()[..]),
                "message {i}"
            ),
            None => assert_eq!(
                (*failed, reply.as_slice()),
                (true, &b"boom"[..]),
                "message {i}"
            ),
        }
    }
    assert_eq!(
        fuel,
        run(&mut GtestBackend::new()),
        "wasmtime and gtest differ"
    );
}

#[test]
fn pages_are_counted_above_the_stack() {
    let mut b = WasmtimeBackend::new().unwrap();
    let code = wat::parse_str(PROGRAM).unwrap();
    let (p, _) = b.deploy(&code, 7, &[]).unwrap();
    // Reads the payload into the static page (a host write), reads it back, bumps the counter.
    let first = b.send(p, 7, &msg(0, 0, 0)).unwrap().pages.unwrap();
    assert_eq!(
        (first.read, first.write, first.loaded),
        (0, 1, 0),
        "{first:?}"
    );
    // The same page again: now it has stored data, so it is loaded.
    let second = b.send(p, 7, &msg(0, 0, 0)).unwrap().pages.unwrap();
    assert_eq!((second.write, second.loaded), (1, 1), "{second:?}");
    // Reading a fresh heap page adds a read; the stack (below 1 MiB) is never counted.
    b.send(p, 7, &msg(2, 1, 0)).unwrap();
    let read = b.send(p, 7, &msg(5, 17 * PAGE, 0)).unwrap().pages.unwrap();
    assert_eq!((read.read, read.write), (1, 1), "{read:?}");
}

/// An import that is not a Gear syscall (Gear refuses such a program too) is named before
/// anything runs; every syscall Gear has is implemented (the library's test holds the list to
/// gear-wasm-instrument's).
#[test]
fn an_import_it_lacks_is_named() {
    let code = wat::parse_str(
        r#"(module (import "env" "memory" (memory 17))
             (import "env" "gr_teleport" (func (param i32)))
             (func (export "init")))"#,
    )
    .unwrap();
    let err = WasmtimeBackend::new()
        .unwrap()
        .deploy(&code, 1, &[])
        .expect_err("refused");
    let err = format!("{err:#}");
    assert!(
        err.contains("`env.gr_teleport`") && err.contains("not a Gear syscall"),
        "{err}"
    );
    // Read before any run (what `lab measure` leaves the meter out on): the function imports
    // it lacks, not the memory, not the syscalls it implements.
    let lacking = wat::parse_str(
        r#"(module (import "env" "memory" (memory 17))
             (import "env" "gr_read" (func (param i32 i32 i32 i32)))
             (import "env" "gr_exit" (func (param i32)))
             (import "env" "gr_teleport" (func (param i32)))
             (func (export "init")))"#,
    )
    .unwrap();
    assert_eq!(
        WasmtimeBackend::lacking(&lacking).unwrap(),
        ["env.gr_teleport"]
    );
    assert!(WasmtimeBackend::lacking(&code[..code.len() - 1]).is_err());
}

fn workspace() -> Workspace {
    Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).unwrap()
}

/// The page hooks refund their own fuel exactly: every message costs the same with and
/// without them, and the probe records the same.
#[test]
fn page_hooks_cost_no_fuel() {
    let ws = workspace();
    let scenario = (select("nft-stress").unwrap()[0].make)();
    let variant = galloc_variants::find("static-buffer").unwrap();
    let req = BuildRequest {
        package: scenario.package,
        variant,
        probe: true,
        post: PostProcess::Gear,
        layout_pad: 0,
        layout_offset: 0,
        heap_skip: 0,
        extra_features: "",
        external: None,
    };
    let code = build(&ws, req).unwrap().bytes;
    let run = |track| {
        let mut b = WasmtimeBackend::with_page_tracking(track).unwrap();
        run_case(&mut b, &code, &scenario, ProbeReads::EveryMessage, || {}).unwrap()
    };
    let (hooked, bare) = (run(true), run(false));
    let costs = |r: &galloc_lab::run::execute::CaseRun| {
        r.messages.iter().map(|m| m.cost).collect::<Vec<_>>()
    };
    assert_eq!(costs(&hooked), costs(&bare));
    assert_eq!(hooked.probe, bare.probe);
    assert!(hooked.messages.iter().all(|m| m.pages.is_some()));
    assert!(bare.messages.iter().all(|m| m.pages.is_none()));
}

/// The host collects every call of the probe build: `measure_case` fails unless they add up
/// to the probe's own statistics op by op; here they are also checked call by call.
#[test]
fn every_call_of_the_probe_build_is_collected() {
    let ws = workspace();
    let scenario = (select("nft-stress").unwrap()[0].make)();
    let variant = galloc_variants::find("static-buffer").unwrap();
    let builds = Builds::new(&ws, scenario.package, variant, |_| {}).unwrap();
    let m = measure_case(&builds, &scenario, BackendKind::Wasmtime, |_| {}).unwrap();
    let mut seq = 0;
    for msg in &m.probe.messages {
        let counts = msg.op_counts.unwrap();
        for op in galloc::probe::Op::ALL {
            let n = msg.ops.iter().filter(|r| r.op() == Some(op)).count() as u64;
            assert_eq!(
                n,
                counts[op as usize],
                "message {}, {}",
                msg.index,
                op.name()
            );
        }
        for r in &msg.ops {
            seq += 1;
            assert_eq!(r.seq, seq, "calls are collected once each, in order");
        }
    }
    assert!(seq > 1000, "nft-stress allocates: {seq}");
}

/// A page map (`lab heap-skip`) watches without changing anything: every message of a probe
/// build costs the same fuel and counts the same pages and first touches with it as without;
/// each message's map holds every page it counts exactly once (the stack apart), a state read
/// adds no map, and the map dates blocks: nft-stress's messages touch blocks given out in
/// them and blocks from earlier ones.
#[test]
fn a_page_map_changes_no_count_and_places_every_page() {
    use galloc_lab::run::backend::wasmtime::PageKind;
    let ws = workspace();
    let scenario = (select("nft-stress").unwrap()[0].make)();
    let variant = galloc_variants::find("lab").unwrap();
    let artifact = build(
        &ws,
        BuildRequest {
            probe: true,
            ..BuildRequest::deployed(scenario.package, variant)
        },
    )
    .unwrap();
    let heap_base = artifact.heap_base.unwrap();
    let mut plain = WasmtimeBackend::new().unwrap();
    plain.heap_base(heap_base);
    let mut mapping = WasmtimeBackend::mapping_pages().unwrap();
    mapping.heap_base(heap_base);
    let run = |b: &mut WasmtimeBackend| {
        run_case(
            b,
            &artifact.bytes,
            &scenario,
            ProbeReads::EveryMessage,
            || {},
        )
        .unwrap()
    };
    let (without, with) = (run(&mut plain), run(&mut mapping));
    assert!(plain.take_page_maps().iter().all(|m| m.is_empty()));
    let maps = mapping.take_page_maps().remove(0);
    assert_eq!(
        maps.len(),
        with.messages.len(),
        "one map a message, none a state read"
    );
    let mut kinds = std::collections::BTreeSet::new();
    for ((a, b), map) in without.messages.iter().zip(&with.messages).zip(&maps) {
        assert_eq!((a.cost, a.pages), (b.cost, b.pages), "message {}", a.index);
        let counts = b.pages.unwrap();
        let charged: Vec<u32> = map
            .iter()
            .filter(|p| p.kind != PageKind::Stack)
            .map(|p| p.page)
            .collect();
        assert_eq!(
            charged.len() as u32,
            counts.read + counts.write,
            "message {}",
            a.index
        );
        assert!(charged.windows(2).all(|w| w[0] < w[1]), "each page once");
        kinds.extend(map.iter().map(|p| p.kind));
    }
    assert_eq!(without.probe, with.probe);
    for kind in [
        PageKind::Stack,
        PageKind::Static,
        PageKind::NewBlock,
        PageKind::OldBlock,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
}

/// The layout model's ground (`lab layout-model`): keeping every granule changes no count, and
/// the model reproduces the meter's own counts, message by message, at the layout the program
/// ran and, on `nft` (whose blocks sit at the same distance from the heap base at every layout),
/// at another layout of the sweep, run there.
#[test]
fn the_layout_model_gives_the_meters_counts_where_only_addresses_move() {
    use galloc_lab::analyse::layout_model::{page_counts, Heap};
    use galloc_lab::results::pages::PageCounts;
    let ws = workspace();
    let scenario = (select("nft").unwrap()[0].make)();
    let variant = galloc_variants::find("shipping").unwrap();
    let counts = |offset: u32, tracing: bool| {
        let artifact = build(
            &ws,
            BuildRequest {
                layout_offset: offset,
                ..BuildRequest::deployed(scenario.package, variant)
            },
        )
        .unwrap();
        let mut meter = if tracing {
            WasmtimeBackend::tracing_touches().unwrap()
        } else {
            WasmtimeBackend::new().unwrap()
        };
        meter.heap_base(artifact.heap_base.unwrap());
        let run = run_case(
            &mut meter,
            &artifact.bytes,
            &scenario,
            ProbeReads::Never,
            || {},
        )
        .unwrap();
        let trace = meter.take_touches().remove(0);
        let counted: Vec<(u64, PageCounts)> = run
            .messages
            .iter()
            .map(|m| {
                let mut c = m.pages.unwrap();
                (c.allocation_intervals, c.first_touch) = (0, None);
                (m.cost, c)
            })
            .collect();
        (counted, trace)
    };
    let (plain, untraced) = counts(0, false);
    let (at_zero, trace) = counts(0, true);
    assert!(untraced.messages.is_empty(), "no granules unless asked");
    assert_eq!(
        plain, at_zero,
        "fuel and counts are the same with granules kept"
    );
    assert_eq!(trace.messages.len(), at_zero.len());
    let just_counts = |c: &[(u64, PageCounts)]| c.iter().map(|(_, c)| *c).collect::<Vec<_>>();
    for heap in [Heap::Moves, Heap::Stays] {
        assert_eq!(
            page_counts(&trace, 0, heap),
            just_counts(&at_zero),
            "{heap:?}"
        );
    }
    let (there, _) = counts(43_008, false);
    assert_eq!(
        page_counts(&trace, 43_008, Heap::Moves),
        just_counts(&there)
    );
    assert_ne!(
        just_counts(&there),
        just_counts(&at_zero),
        "the layout changes the counts"
    );
}
