//! What a step's total counts: every execution the step's message sets off in the program (the
//! message's own, each message the program sends itself, each reply it handles), which the
//! step's sender pays for, on gtest and on the fuel meter, which carries Gear's message layer
//! (docs/method.md, "How the gas is measured", its point "What a step's total counts").

use galloc_lab::build::artifact::{build, BuildRequest, PostProcess};
use galloc_lab::build::external::Program;
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::{gtest::GtestBackend, wasmtime::WasmtimeBackend, Backend};
use gtest::{constants::UNITS, System};

const USER: u64 = 42;

#[test]
fn a_step_counts_every_execution_its_message_sets_off() {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let program = Program::at(&ws.root().join("contracts/examples/relay")).unwrap();
    let wasm = build(
        &ws,
        BuildRequest {
            package: &program.package,
            variant: galloc_variants::find("shipping").unwrap(),
            probe: false,
            post: PostProcess::Gear,
            layout_pad: 0,
            layout_offset: 0,
            heap_skip: 0,
            extra_features: "",
            external: Some(&program),
        },
    )
    .unwrap();

    // The lab's gtest backend: one step with no hop, one with three, one more with none. (Its
    // chain is dropped before the direct one below: gtest allows one `System` per thread.)
    let (init, alone, hops, after) = {
        let mut lab = GtestBackend::new();
        let (relay, init) = lab.deploy(&wasm.bytes, USER, &[]).unwrap();
        let mut send = |payload: u8| lab.send(relay, USER, &[payload]).unwrap();
        (init, send(0), send(3), send(0))
    };
    assert!(!init.failed);
    assert!(!alone.failed && !hops.failed && !after.failed);
    // Answered with the log's length, 64 entries an execution: the 3-hop message is answered
    // in its own execution (the 2nd), and the next user message finds its 3 hops done (the 6th).
    assert_eq!(alone.reply, 64u32.to_le_bytes());
    assert_eq!(hops.reply, (64u32 * 2).to_le_bytes());
    assert_eq!(after.reply, (64u32 * 6).to_le_bytes());

    // The same messages on gtest directly: every block's burned gas, per message.
    let system = System::new();
    system.mint_to(USER, 1_000_000 * UNITS);
    let direct = gtest::Program::from_binary_with_id(&system, 1u64 << 48, wasm.bytes.clone());
    let drain = |sent: gstd::MessageId| -> (u64, u64, usize) {
        let (mut all, mut own, mut executions) = (0, 0, 0);
        while system.queue_len() > 0 {
            let block = system.run_next_block();
            all += block.gas_burned.values().sum::<u64>();
            executions += block.gas_burned.len();
            own += block.gas_burned.get(&sent).copied().unwrap_or(0);
        }
        (all, own, executions)
    };
    let (init_all, ..) = drain(direct.send_bytes(USER, Vec::new()));
    assert_eq!(init.cost, init_all);
    let (alone_all, alone_own, alone_runs) = drain(direct.send_bytes(USER, vec![0]));
    let (hops_all, hops_own, hops_runs) = drain(direct.send_bytes(USER, vec![3]));
    assert_eq!(alone_runs, 1, "no hop: the message alone");
    assert_eq!(alone.cost, alone_all);
    assert_eq!(alone_all, alone_own);
    // Three hops: four executions, all counted, not the sent message's alone.
    assert!(hops_runs >= 4, "{hops_runs} executions");
    assert_eq!(hops.cost, hops_all);
    assert!(
        hops_all > hops_own + 2 * alone_own,
        "{hops_all} counted, {hops_own} of them the sent message's"
    );

    // The fuel meter carries Gear's message layer: the same replies, and the 3-hop step's
    // fuel is its four executions', not the sent message's alone.
    let mut meter = WasmtimeBackend::new().unwrap();
    let (relay, metered_init) = meter.deploy(&wasm.bytes, USER, &[]).unwrap();
    assert!(!metered_init.failed);
    let mut send = |payload: u8| meter.send(relay, USER, &[payload]).unwrap();
    let (m_alone, m_hops, m_after) = (send(0), send(3), send(0));
    assert_eq!(
        [&m_alone.reply, &m_hops.reply, &m_after.reply],
        [&alone.reply, &hops.reply, &after.reply]
    );
    assert!(
        m_hops.cost > 3 * m_alone.cost,
        "{} fuel for three hops, {} for none",
        m_hops.cost,
        m_alone.cost
    );
}
