//! The gclient calls: fund the scenario's users, upload and send, wait, read state.
//!
//! Nothing here can run without a node; what it decides is in `accounts` and `events`, which
//! are tested on their own.

use crate::accounts::{self, Accounts};
use crate::events::{self, Sent};
use anyhow::{Context, Result, anyhow, bail};
use galloc_lab_wire::{Id, Outcome};
use gclient::{
    GearApi,
    ext::{gear_core::ids::ActorId, subxt::utils::H256},
};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Value each user is given from `//Alice` before it sends anything: far more than the gas of
/// any of the lab's scenarios (a few thousand messages of ~1G gas each at a few value units
/// per gas) and well above the existential deposit.
const FUNDS: u128 = 10_000 * 1_000_000_000_000;
/// How long to wait for a sent message to be processed before giving up.
const PROCESSING_TIMEOUT: Duration = Duration::from_secs(180);
/// How many blocks back to look for a message's events.
const MAX_BLOCKS: usize = 64;

/// A connection to one node, signing as `//Alice` for funding and as each user for messages.
pub struct Session {
    alice: GearApi,
    bank: Id,
    users: HashMap<u64, GearApi>,
    accounts: Accounts,
    /// Salt for the next upload: the same code is uploaded once per run (plain, probe, twin
    /// builds may even be byte-equal), and each upload must be a new program.
    salt: u64,
}

fn id_of(api: &GearApi) -> Id {
    let account: &[u8; 32] = api.account_id().as_ref();
    *account
}

impl Session {
    pub async fn new(alice: GearApi) -> Result<Self> {
        let bank = alice
            .bank_address()
            .await
            .context("reading the gear bank's address (GearBank::BankAddress)")?;
        let bank: &[u8; 32] = bank.as_ref();
        // Runs on one node must not collide with programs an earlier run left there.
        let salt = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default();
        Ok(Session {
            alice,
            bank: *bank,
            users: HashMap::new(),
            accounts: Accounts::default(),
            salt,
        })
    }

    /// Derives each user's key, funds new ones from `//Alice`, and answers their accounts.
    pub async fn users(&mut self, users: &[u64]) -> Result<Vec<Id>> {
        let mut accounts = Vec::with_capacity(users.len());
        for &user in users {
            if !self.users.contains_key(&user) {
                let api = self
                    .alice
                    .clone()
                    .with(accounts::suri(user))
                    .with_context(|| format!("deriving the key of user {user}"))?;
                let account = id_of(&api);
                self.alice
                    .transfer_keep_alive(ActorId::from(account), FUNDS)
                    .await
                    .with_context(|| format!("funding user {user} from //Alice"))?;
                self.accounts.insert(user, account);
                self.users.insert(user, api);
            }
            accounts.push(id_of(&self.users[&user]));
        }
        Ok(accounts)
    }

    fn signer(&self, user: u64) -> Result<&GearApi> {
        self.users
            .get(&user)
            .ok_or_else(|| anyhow!("user {user} was not announced before sending (lab bug)"))
    }

    pub async fn deploy(
        &mut self,
        code: &[u8],
        from: u64,
        payload: &[u8],
    ) -> Result<(Id, Outcome)> {
        let payload = self.accounts.to_node(payload);
        let api = self.signer(from)?.clone();
        let gas = api
            .calculate_upload_gas(Some(H256(id_of(&api))), code.to_vec(), payload.clone(), 0, true)
            .await
            .context("the node's gas estimate for the upload (gear_calculateInitUploadGas); a rejected Wasm fails here")?;
        self.salt += 1;
        let (message, program, block) = api
            .upload_program_bytes(code, self.salt.to_le_bytes(), &payload, gas.min_limit, 0)
            .await
            .context("uploading the program")?;
        let outcome = self.wait(&api, message, block, gas.min_limit).await?;
        Ok((program.into(), outcome))
    }

    pub async fn send(&mut self, program: Id, from: u64, payload: &[u8]) -> Result<Outcome> {
        let payload = self.accounts.to_node(payload);
        let api = self.signer(from)?.clone();
        let gas = api
            .calculate_handle_gas(
                Some(H256(id_of(&api))),
                ActorId::from(program),
                payload.clone(),
                0,
                true,
            )
            .await
            .context("the node's gas estimate (gear_calculateHandleGas)")?;
        let (message, block) = api
            .send_message_bytes(ActorId::from(program), &payload, gas.min_limit, 0)
            .await
            .context("sending the message")?;
        self.wait(&api, message, block, gas.min_limit).await
    }

    pub async fn read_state(&self, program: Id) -> Result<Vec<u8>> {
        self.alice
            .read_state_bytes(ActorId::from(program), Vec::new())
            .await
            .context("reading the program's state (gear_readState)")
    }

    /// Reads the events from the message's block on until it has been processed.
    async fn wait(
        &self,
        api: &GearApi,
        message: gclient::ext::gear_core::ids::MessageId,
        block: H256,
        gas_limit: u64,
    ) -> Result<Outcome> {
        let sent = Sent {
            message,
            sender: id_of(api),
            bank: self.bank,
            gas_limit,
        };
        let start = Instant::now();
        loop {
            let events = api
                .events_since(block, MAX_BLOCKS)
                .await
                .context("reading the node's events")?;
            if let Some(outcome) = events::outcome(&events, &sent)? {
                return Ok(Outcome {
                    reply: self.accounts.to_lab(&outcome.reply),
                    ..outcome
                });
            }
            if start.elapsed() > PROCESSING_TIMEOUT {
                bail!(
                    "message {message:?} was not processed within {} s: is the node producing blocks?",
                    PROCESSING_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}
