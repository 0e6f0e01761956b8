//! The contracts refuse bad input with an error reply and leave their state unchanged.
//! Built for the default variant, run under gtest.

use galloc_lab::build::artifact::{build, BuildRequest};
use galloc_lab::build::workspace::Workspace;
use galloc_lab::run::backend::{gtest::GtestBackend, Backend, ProgramRef};
use parity_scale_codec::{Decode, Encode};

fn code(package: &str) -> Vec<u8> {
    let ws = Workspace::find(env!("CARGO_MANIFEST_DIR").as_ref()).expect("workspace");
    let variant = galloc_variants::find("static-buffer").expect("a variant");
    let req = BuildRequest::deployed(package, variant);
    build(&ws, req).expect("contract builds").bytes
}

fn ask<R: Decode>(b: &mut GtestBackend, p: ProgramRef, from: u64, payload: impl Encode) -> R {
    let out = b.send(p, from, &payload.encode()).expect("message runs");
    assert!(!out.failed, "message failed");
    R::decode(&mut &out.reply[..]).expect("reply decodes")
}

mod ft_contract {
    use super::*;
    use ft::{FtAction, FtError, FtEvent, FtReply, InitFt};

    fn deployed() -> (GtestBackend, ProgramRef) {
        let mut b = GtestBackend::new();
        let init = InitFt {
            name: "T".into(),
            symbol: "T".into(),
            decimals: 0,
        };
        let (p, out) = b
            .deploy(&code("lab-ft"), 10, &init.encode())
            .expect("deploys");
        assert!(!out.failed);
        let minted: FtReply = ask(&mut b, p, 1, FtAction::Mint(500));
        assert_eq!(
            minted,
            Ok(FtEvent::Minted {
                to: 1u64.into(),
                amount: 500
            })
        );
        (b, p)
    }

    fn balances(b: &mut GtestBackend, p: ProgramRef) -> (FtReply, FtReply, FtReply) {
        (
            ask(b, p, 3, FtAction::BalanceOf(1u64.into())),
            ask(b, p, 3, FtAction::BalanceOf(2u64.into())),
            ask(b, p, 3, FtAction::TotalSupply),
        )
    }

    #[test]
    fn malformed_and_unauthorised_messages_change_nothing() {
        let (mut b, p) = deployed();
        let before = balances(&mut b, p);
        assert_eq!(before.0, Ok(FtEvent::Balance(500)));

        for garbage in [&[][..], &[0xff][..], &[2, 1][..]] {
            let out = b.send(p, 2, garbage).unwrap();
            assert!(!out.failed);
            assert_eq!(
                FtReply::decode(&mut &out.reply[..]).unwrap(),
                Err(FtError::InvalidPayload)
            );
        }
        let steal = FtAction::Transfer {
            from: 1u64.into(),
            to: 2u64.into(),
            amount: 100,
        };
        let r: FtReply = ask(&mut b, p, 2, steal);
        assert_eq!(r, Err(FtError::InsufficientAllowance));
        let overdraw = FtAction::Transfer {
            from: 1u64.into(),
            to: 2u64.into(),
            amount: 501,
        };
        let r: FtReply = ask(&mut b, p, 1, overdraw);
        assert_eq!(r, Err(FtError::InsufficientBalance));
        let r: FtReply = ask(&mut b, p, 2, FtAction::Burn(1));
        assert_eq!(r, Err(FtError::InsufficientBalance));
        let r: FtReply = ask(&mut b, p, 1, FtAction::Mint(u128::MAX));
        assert_eq!(r, Err(FtError::Overflow));

        assert_eq!(balances(&mut b, p), before);
    }

    #[test]
    fn allowances_let_a_spender_move_exactly_what_was_approved() {
        let (mut b, p) = deployed();
        let r: FtReply = ask(
            &mut b,
            p,
            1,
            FtAction::Approve {
                to: 2u64.into(),
                amount: 100,
            },
        );
        assert!(r.is_ok());
        let spend = |amount| FtAction::Transfer {
            from: 1u64.into(),
            to: 3u64.into(),
            amount,
        };
        assert!(ask::<FtReply>(&mut b, p, 2, spend(60)).is_ok());
        assert_eq!(
            ask::<FtReply>(&mut b, p, 2, spend(60)),
            Err(FtError::InsufficientAllowance)
        );
        let r: FtReply = ask(&mut b, p, 9, FtAction::BalanceOf(3u64.into()));
        assert_eq!(r, Ok(FtEvent::Balance(60)));
    }

    #[test]
    fn a_malformed_init_fails_visibly() {
        let mut b = GtestBackend::new();
        let (_, out) = b.deploy(&code("lab-ft"), 10, &[1, 2, 3]).unwrap();
        assert!(out.failed, "init with a bad payload must fail");
    }
}

mod nft_contract {
    use super::*;
    use nft::{InitNft, NftAction, NftError, NftEvent, NftReply, TokenMetadata};

    fn deployed() -> (GtestBackend, ProgramRef) {
        let mut b = GtestBackend::new();
        let init = InitNft {
            name: "N".into(),
            symbol: "N".into(),
            base_uri: "u".into(),
        };
        let (p, out) = b
            .deploy(&code("lab-nft"), 10, &init.encode())
            .expect("deploys");
        assert!(!out.failed);
        let mint = NftAction::Mint {
            transaction_id: 1,
            metadata: TokenMetadata::default(),
        };
        let r: NftReply = ask(&mut b, p, 1, mint);
        assert_eq!(
            r,
            Ok(NftEvent::Minted {
                to: 1u64.into(),
                token_id: 0
            })
        );
        (b, p)
    }

    fn owner(b: &mut GtestBackend, p: ProgramRef) -> NftReply {
        ask(b, p, 5, NftAction::Owner { token_id: 0 })
    }

    #[test]
    fn malformed_and_unauthorised_messages_change_nothing() {
        let (mut b, p) = deployed();
        let before = owner(&mut b, p);
        assert_eq!(
            before,
            Ok(NftEvent::Owner {
                token_id: 0,
                owner: 1u64.into()
            })
        );

        let out = b.send(p, 2, &[9, 9, 9]).unwrap();
        assert_eq!(
            NftReply::decode(&mut &out.reply[..]).unwrap(),
            Err(NftError::InvalidPayload)
        );
        let burn = NftAction::Burn {
            transaction_id: 7,
            token_id: 0,
        };
        assert_eq!(ask::<NftReply>(&mut b, p, 2, burn), Err(NftError::NotOwner));
        let take = NftAction::Transfer {
            transaction_id: 8,
            to: 2u64.into(),
            token_id: 0,
        };
        assert_eq!(
            ask::<NftReply>(&mut b, p, 2, take),
            Err(NftError::NotApproved)
        );
        let approve = NftAction::Approve {
            transaction_id: 9,
            to: 3u64.into(),
            token_id: 0,
        };
        assert_eq!(
            ask::<NftReply>(&mut b, p, 2, approve),
            Err(NftError::NotOwner)
        );
        let missing = NftAction::Burn {
            transaction_id: 10,
            token_id: 42,
        };
        assert_eq!(
            ask::<NftReply>(&mut b, p, 1, missing),
            Err(NftError::TokenNotFound)
        );

        assert_eq!(owner(&mut b, p), before);
    }

    #[test]
    fn a_repeated_transaction_id_returns_the_first_result() {
        let (mut b, p) = deployed();
        let give = NftAction::Transfer {
            transaction_id: 2,
            to: 2u64.into(),
            token_id: 0,
        };
        let first: NftReply = ask(&mut b, p, 1, give.clone());
        assert_eq!(
            first,
            Ok(NftEvent::Transferred {
                from: 1u64.into(),
                to: 2u64.into(),
                token_id: 0
            })
        );
        // Sent again, the transfer is not re-executed (user 1 no longer owns the token).
        assert_eq!(ask::<NftReply>(&mut b, p, 1, give), first);
        assert_eq!(
            owner(&mut b, p),
            Ok(NftEvent::Owner {
                token_id: 0,
                owner: 2u64.into()
            })
        );
    }
}

#[test]
fn a_module_gear_rejects_is_named_not_panicked_on() {
    let mut b = GtestBackend::new();
    let err = b
        .deploy(b"\0asm not really", 10, &[])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("gtest rejected the Wasm:"), "{err}");
}

/// The Sails token: calls framed as sails-rs frames them, replies and events byte for byte on
/// both embedded backends, refusals that fail with the thrown error and change nothing.
mod vft_contract {
    use super::*;
    use galloc_lab::run::backend::{wasmtime::WasmtimeBackend, Outcome};
    use galloc_lab::run::scenario::sails::{constructor, Route};
    use sails_rs::{ActorId, U256};
    use vft::{VftAdminService, VftError, VftEvents, VftProgram, VftService};

    const ADMIN: u64 = 42;

    fn routes() -> (Route, Route) {
        (
            Route::of::<VftProgram, VftService>("vft").unwrap(),
            Route::of::<VftProgram, VftAdminService>("VftAdmin").unwrap(),
        )
    }

    /// Runs `messages` on a fresh token on `backend`; every outcome, in order.
    fn run(backend: &mut dyn Backend, messages: &[(u64, Vec<u8>)]) -> Vec<Outcome> {
        let init = constructor(0, &("T".to_owned(), "T".to_owned(), 0u8));
        let (p, init) = backend.deploy(&code("lab-vft"), ADMIN, &init).unwrap();
        assert!(
            !init.failed,
            "init: {:?}",
            String::from_utf8_lossy(&init.reply)
        );
        messages
            .iter()
            .map(|(from, payload)| backend.send(p, *from, payload).unwrap())
            .collect()
    }

    #[test]
    fn replies_events_and_refusals_are_exact_on_both_backends() {
        let (vft, admin) = routes();
        let (a, b) = (ActorId::from(1u64), ActorId::from(2u64));
        let v = U256::from;
        let messages = vec![
            (ADMIN, admin.call("mint", &(a, v(100))).unwrap()),
            (1, vft.call("transfer", &(b, v(30))).unwrap()),
            // Over the balance: refused, nothing moves.
            (1, vft.call("transfer", &(b, v(71))).unwrap()),
            // Not the admin.
            (1, admin.call("mint", &(a, v(1))).unwrap()),
            // Not a Sails message at all: Sails ignores it (no header), state unchanged.
            (1, vec![1, 2, 3]),
            (1, vft.call("balance_of", &a).unwrap()),
            (1, vft.call("total_supply", &()).unwrap()),
        ];
        let gtest = run(&mut GtestBackend::new(), &messages);
        let fuel = run(&mut WasmtimeBackend::new().unwrap(), &messages);
        let transfer_event = vft.event(&VftEvents::Transfer {
            from: a,
            to: b,
            value: v(30),
        });
        for outcomes in [&gtest, &fuel] {
            let o = |i: usize| (&outcomes[i].reply, outcomes[i].failed);
            assert_eq!(o(0), (&admin.answer("mint", &true).unwrap(), false));
            assert_eq!(o(1), (&vft.answer("transfer", &true).unwrap(), false));
            assert_eq!(
                outcomes[1].sent.as_deref(),
                Some(&[transfer_event.clone()][..])
            );
            let over = vft
                .answer("transfer", &VftError::InsufficientBalance)
                .unwrap();
            assert_eq!(o(2), (&over, true));
            assert_eq!(outcomes[2].sent.as_deref(), Some(&[][..]));
            let not_admin = admin.answer("mint", &VftError::NotAdmin).unwrap();
            assert_eq!(o(3), (&not_admin, true));
            assert_eq!(o(4), (&Vec::new(), false));
            assert_eq!(o(5), (&vft.answer("balance_of", &v(70)).unwrap(), false));
            assert_eq!(o(6), (&vft.answer("total_supply", &v(100)).unwrap(), false));
        }
        let view = |os: &[Outcome]| -> Vec<_> {
            os.iter()
                .map(|o| (o.failed, o.reply.clone(), o.sent.clone()))
                .collect()
        };
        assert_eq!(view(&gtest), view(&fuel), "gtest and wasmtime differ");
    }

    #[test]
    fn an_unknown_method_names_what_the_service_has() {
        let (vft, _) = routes();
        let err = vft.call("mint", &()).unwrap_err().to_string();
        assert!(
            err.contains("no method `Mint`") && err.contains("Transfer"),
            "{err}"
        );
        let err = Route::of::<VftProgram, VftService>("nft")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no service `Nft`") && err.contains("Vft"),
            "{err}"
        );
    }
}

/// The Sails cases run to the end on both embedded backends: every reply, thrown error and
/// event is checked against the model per message (`run_case`), so both backends answered
/// byte for byte alike.
#[test]
fn the_sails_cases_run_exactly_on_both_backends() {
    use galloc_lab::run::backend::wasmtime::WasmtimeBackend;
    use galloc_lab::run::execute::{run_case, ProbeReads};
    for case in ["vft-stress", "vnft-stress"] {
        let scenario = (galloc_lab::run::scenario::select(case).unwrap()[0].make)();
        let code = code(scenario.package);
        let mut backends: [Box<dyn Backend>; 2] = [
            Box::new(GtestBackend::new()),
            Box::new(WasmtimeBackend::new().unwrap()),
        ];
        for b in &mut backends {
            let run = run_case(b.as_mut(), &code, &scenario, ProbeReads::Never, || {})
                .unwrap_or_else(|e| panic!("{case} on {}: {e:#}", b.name()));
            assert_eq!(run.messages.len(), scenario.steps.len() + 1);
            let failed = run.messages.iter().filter(|m| m.failed).count();
            assert!(failed > 0, "{case}: refusals are part of the case");
        }
    }
}
