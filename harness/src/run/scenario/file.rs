//! A scenario from a file, for a program outside the lab (`lab pick`, `just program`): JSON
//! messages (raw payloads, or Sails calls by service and method name encoded from the
//! program's IDL) or a text file of hex lines; see [`Scenario::read`] and docs/your-program.md,
//! "Measuring another program".

use crate::build::external::Program;
use crate::run::backend::UserId;
use crate::run::scenario::idl::Idl;
use crate::run::scenario::unhex;
use crate::run::scenario::{Expect, Scenario, Step};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// The scenario file's JSON shape.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// Who deploys and (unless a message says otherwise) sends.
    #[serde(default = "default_user")]
    from: UserId,
    /// A Sails program's IDL file (relative to the scenario file), for `call`s by name.
    #[serde(default)]
    idl: Option<PathBuf>,
    /// The `init` payload: SCALE hex, or a Sails constructor call.
    #[serde(default)]
    init: Init,
    messages: Vec<Message>,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Init {
    Hex(String),
    Constructor {
        constructor: String,
        #[serde(default)]
        args: serde_json::Value,
    },
}

impl Default for Init {
    fn default() -> Self {
        Init::Hex(String::new())
    }
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Message {
    /// SCALE hex; or `call` instead.
    #[serde(default)]
    payload: Option<String>,
    /// A Sails call, `Service/Method`, with `args` (needs `idl`).
    #[serde(default)]
    call: Option<String>,
    #[serde(default)]
    args: serde_json::Value,
    #[serde(default)]
    from: Option<UserId>,
    /// The exact reply expected, SCALE hex; absent means any reply from a successful run.
    #[serde(default, deserialize_with = "given")]
    reply: Option<String>,
    /// A Sails call's return value (its reply, framed). `null` is a value (`None` for a
    /// method returning `Option`, nothing for one returning `()`), not the key left out.
    #[serde(default, deserialize_with = "given")]
    returns: Option<serde_json::Value>,
    /// The error a Sails call throws (the message fails with it, framed).
    #[serde(default, deserialize_with = "given")]
    throws: Option<serde_json::Value>,
    /// The events a Sails call emits, in order, when it sends nothing else (checked only
    /// when given).
    #[serde(default, deserialize_with = "given")]
    events: Option<Vec<serde_json::Value>>,
    /// Everything the message sends, in order: events (`{"event": {"Name": {..}}}`, Sails
    /// calls) and messages to users (`{"to": 42, "payload": "0x.."}`). Instead of `events`.
    #[serde(default, deserialize_with = "given")]
    sends: Option<Vec<Sends>>,
    /// The message must fail (panic or trap).
    #[serde(default)]
    fails: bool,
}

/// One thing a message sends (`sends`): a Sails event, or a message to a user.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Sends {
    #[serde(default)]
    event: Option<serde_json::Value>,
    #[serde(default)]
    to: Option<UserId>,
    #[serde(default)]
    payload: Option<String>,
}

/// A key that is present is `Some`, even when its value is `null`: serde's own `Option`
/// reads `null` as the key left out, so `"returns": null` (expecting `None`) accepted any
/// reply.
fn given<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// What a message must send, from `events` or `sends` (`method`: the Sails call's, which
/// events need); `None` when neither is given (left unchecked).
fn expected_sends(
    m: &Message,
    method: Option<&crate::run::scenario::idl::Method<'_>>,
    failing: bool,
) -> Result<Option<Vec<crate::run::backend::Sent>>> {
    let sent: Vec<crate::run::backend::Sent> = match (&m.events, &m.sends) {
        (Some(_), Some(_)) => bail!(
            "`events` and `sends` both given: list everything in `sends` \
             ({{\"event\": ..}} and {{\"to\": USER, \"payload\": \"0x..\"}})"
        ),
        (None, None) => return Ok(None),
        (Some(events), None) => {
            let method = method
                .with_context(|| "`events` go with a `call` (a Sails program's IDL)".to_owned())?;
            events
                .iter()
                .map(|e| method.event(e))
                .collect::<Result<_>>()?
        }
        (None, Some(sends)) => sends
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let what = format!("`sends` item {}", i + 1);
                match (&s.event, s.to, &s.payload) {
                    (Some(e), None, None) => method
                        .with_context(|| {
                            format!("{what}: an `event` goes with a `call` (the program's IDL)")
                        })?
                        .event(e)
                        .with_context(|| what.clone()),
                    (None, Some(to), Some(payload)) => Ok(crate::run::backend::Sent {
                        destination: gstd::ActorId::from(to).into_bytes(),
                        payload: unhex(payload, &what)?,
                    }),
                    _ => {
                        bail!("{what}: give `event`, or `to` (a user number) with `payload` (hex)")
                    }
                }
            })
            .collect::<Result<_>>()?,
    };
    // A message sent earlier with a delay can reach its user in a failing message's block;
    // an event cannot be delayed, and nothing the failing message sent itself is kept.
    if failing && sent.iter().any(|m| m.destination == [0; 32]) {
        bail!(
            "a failed message sends nothing: what it sent is discarded with it (only a \
             message sent earlier with a delay, `{{\"to\": USER, ..}}`, can arrive in its block)"
        );
    }
    Ok(Some(sent))
}

fn default_user() -> UserId {
    gtest::constants::DEFAULT_USER_ALICE
}

impl Scenario {
    /// A scenario for `program` from a file: `.json`
    /// (`{"from": 42, "init": "0x..", "messages": [{"payload": "0x..", "reply": "0x..",
    /// "from": 43, "fails": false}]}`; `from`, `init`, `reply`, `fails` optional), or any
    /// other name for text: one message per line, `PAYLOAD` or `PAYLOAD => REPLY` in hex
    /// (`REPLY` may be `fail`), an optional first line `init PAYLOAD`, `#` comments.
    ///
    /// For a Sails program the JSON may name its IDL (`"idl": "app.idl"`) and give calls by
    /// name instead of hex: `"init": {"constructor": "New", "args": [..]}` and messages
    /// `{"call": "Service/Method", "args": [..], "returns": v}` (or `"throws": e`, or
    /// `"fails": true`), with `"events": [{"Name": {..}}]` to check what it emits; values as
    /// [`crate::run::scenario::idl`] reads them.
    pub fn read(path: &Path, case: &'static str, program: &Program) -> Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the scenario file {}", path.display()))?;
        let file = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a scenario (JSON with `messages`: [{{\"payload\": \"0x..\"}}])",
                    path.display()
                )
            })?
        } else {
            parse_lines(&text).with_context(|| format!("in {}", path.display()))?
        };
        // Shared with each call's step, which reads its replies back through it.
        let idl = match &file.idl {
            Some(idl) => Some(std::sync::Arc::new(Idl::read(
                &path.parent().unwrap_or(Path::new(".")).join(idl),
            )?)),
            None => None,
        };
        let mut steps = Vec::with_capacity(file.messages.len());
        for (i, m) in file.messages.iter().enumerate() {
            let what = format!("{}: message {}", path.display(), i + 1);
            let step = match &m.call {
                None => hex_step(m, &what)?,
                Some(call) => {
                    let idl = idl.as_ref().with_context(|| {
                        format!(
                            "{what}: a `call` needs the program's IDL (`\"idl\": \"FILE.idl\"`)"
                        )
                    })?;
                    sails_step(idl, call, m).with_context(|| what.clone())?
                }
            };
            super::check_payload(&step.payload, &what)?;
            steps.push(Step {
                from: m.from.unwrap_or(file.from),
                ..step
            });
        }
        if steps.is_empty() {
            bail!("{}: the scenario has no messages", path.display());
        }
        let what = format!("{}: init", path.display());
        let init = match (&file.init, &idl) {
            (Init::Hex(hex), _) => unhex(hex, &what)?,
            (Init::Constructor { constructor, args }, Some(idl)) => {
                idl.constructor(constructor, args).context(what.clone())?
            }
            (Init::Constructor { .. }, None) => {
                bail!("{what}: a constructor call needs the program's IDL (`\"idl\"`)")
            }
        };
        super::check_payload(&init, &what)?;
        Ok(Scenario {
            case,
            package: Box::leak(program.package.clone().into_boxed_str()),
            deployer: file.from,
            init,
            steps,
        })
    }
}

/// A message given as hex.
fn hex_step(m: &Message, what: &str) -> Result<Step> {
    if m.returns.is_some() || m.throws.is_some() || m.events.is_some() || !m.args.is_null() {
        bail!(
            "{what}: `args`, `returns`, `throws` and `events` go with a `call`, not a `payload` \
             (`reply` and `sends` do)"
        );
    }
    let payload = m
        .payload
        .as_deref()
        .with_context(|| format!("{what}: give a `payload` (hex) or a `call`"))?;
    let expect = match (&m.reply, m.fails) {
        (Some(_), true) => bail!("{what}: a reply and `fails` both given"),
        (Some(reply), false) => Expect::Reply(unhex(reply, what)?),
        (None, true) => Expect::Failure,
        (None, false) => Expect::Success,
    };
    let failing = matches!(expect, Expect::Failure);
    Ok(Step {
        from: default_user(),
        payload: unhex(payload, what)?,
        expect,
        sent: expected_sends(m, None, failing).with_context(|| what.to_owned())?,
        reads: None,
    })
}

/// A Sails call by name: its payload, reply or thrown error, and events from the IDL.
fn sails_step(idl: &std::sync::Arc<Idl>, call: &str, m: &Message) -> Result<Step> {
    if m.payload.is_some() || m.reply.is_some() {
        bail!("give a `call` or a `payload`, not both (and `returns`, not `reply`)");
    }
    let method = idl.method(call)?;
    let expect = match (&m.returns, &m.throws, m.fails) {
        (Some(_), Some(_), _) | (Some(_), _, true) => {
            bail!("`returns` with `throws` or `fails`: a call either returns or fails")
        }
        (Some(value), None, false) => Expect::Reply(method.reply(value)?),
        (None, Some(error), _) => Expect::FailureWith(method.thrown(error)?),
        (None, None, true) => Expect::Failure,
        (None, None, false) => Expect::Success,
    };
    let failing = matches!(expect, Expect::Failure | Expect::FailureWith(_));
    Ok(Step {
        from: default_user(),
        payload: method.call(&m.args)?,
        expect,
        sent: expected_sends(m, Some(&method), failing)?,
        reads: Some(reads(idl.clone(), call.to_owned())),
    })
}

/// A call's replies and events read through the IDL, for messages.
fn reads(idl: std::sync::Arc<Idl>, call: String) -> crate::run::scenario::ReplyText {
    let (events_idl, events_call) = (idl.clone(), call.clone());
    crate::run::scenario::ReplyText {
        reply: std::sync::Arc::new(move |bytes, failed| {
            idl.method(&call).ok()?.describe_reply(bytes, failed)
        }),
        event: std::sync::Arc::new(move |bytes| {
            events_idl.method(&events_call).ok()?.describe_event(bytes)
        }),
    }
}

/// The text form: `init HEX` first (optional), then `HEX` or `HEX => HEX|fail` per line.
fn parse_lines(text: &str) -> Result<File> {
    let mut file = File {
        from: default_user(),
        idl: None,
        init: Init::default(),
        messages: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(init) = line.strip_prefix("init ") {
            if !file.messages.is_empty() {
                bail!("line {}: `init` must come before the messages", n + 1);
            }
            file.init = Init::Hex(init.trim().to_owned());
            continue;
        }
        let (payload, reply) = match line.split_once("=>") {
            Some((p, r)) => (p.trim(), Some(r.trim())),
            None => (line, None),
        };
        file.messages.push(Message {
            payload: Some(payload.to_owned()),
            fails: reply == Some("fail"),
            reply: reply.filter(|r| *r != "fail").map(str::to_owned),
            ..Message::default()
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `"returns": null` expects `None` (not any reply); `sends` lists events and messages to
    /// users in order; contradictory or malformed expectations are refused.
    #[test]
    fn null_is_a_value_and_everything_sent_can_be_expected() {
        let polls = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contracts/examples/polls");
        let program = Program::at(&polls).unwrap();
        let idl = Idl::read(&polls.join("polls.idl")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let read = |message: &str| {
            let file = dir.path().join("s.json");
            let text = format!(
                r#"{{"idl": {:?}, "init": {{"constructor": "New", "args": []}}, "messages": [{message}]}}"#,
                polls.join("polls.idl")
            );
            std::fs::write(&file, text).unwrap();
            Scenario::read(&file, "s", &program).map_err(|e| format!("{e:#}"))
        };
        let tally = idl.method("Polls/Tally").unwrap();
        let none = tally.reply(&serde_json::Value::Null).unwrap();
        assert_eq!(none.last(), Some(&0), "None encodes as 0");
        let s = read(r#"{"call": "Polls/Tally", "args": [3], "returns": null}"#).unwrap();
        assert!(matches!(&s.steps[0].expect, Expect::Reply(r) if *r == none));
        let s = read(r#"{"call": "Polls/Tally", "args": [3]}"#).unwrap();
        assert!(matches!(s.steps[0].expect, Expect::Success) && s.steps[0].sent.is_none());

        let voted = serde_json::json!({"Voted": {"id": 0, "voter": 7, "option": 1}});
        let s = read(&format!(
            r#"{{"call": "Polls/Vote", "args": [0, 1], "returns": 1, "sends": [{{"event": {voted}}}, {{"to": 42, "payload": "0x0102"}}]}}"#
        ))
        .unwrap();
        let vote = idl.method("Polls/Vote").unwrap();
        assert_eq!(
            s.steps[0].sent.as_deref().unwrap(),
            [
                vote.event(&voted).unwrap(),
                crate::run::backend::Sent {
                    destination: gstd::ActorId::from(42u64).into_bytes(),
                    payload: vec![1, 2],
                }
            ]
        );
        // A plain (hex) message can expect messages to users too.
        let dir2 = tempfile::tempdir().unwrap();
        let hex = dir2.path().join("h.json");
        std::fs::write(
            &hex,
            r#"{"messages": [{"payload": "0x00", "sends": [{"to": 3, "payload": "0x"}]}]}"#,
        )
        .unwrap();
        let s = Scenario::read(&hex, "h", &program).unwrap();
        assert_eq!(s.steps[0].sent.as_ref().unwrap().len(), 1);

        for (message, expect) in [
            (
                r#"{"call": "Polls/Vote", "args": [0, 1], "events": [], "sends": []}"#.to_owned(),
                "`events` and `sends` both given",
            ),
            (
                r#"{"call": "Polls/Vote", "args": [0, 1], "sends": [{"to": 42}]}"#.into(),
                "`sends` item 1: give `event`, or `to`",
            ),
            (
                r#"{"call": "Polls/Vote", "args": [0, 1], "events": null}"#.into(),
                "invalid type: null, expected a sequence",
            ),
            (
                r#"{"call": "Polls/Vote", "args": [7, 1], "throws": "NoSuchPoll", "events": [{"Voted": {"id": 7, "voter": 2, "option": 1}}]}"#.into(),
                "a failed message sends nothing",
            ),
            (
                r#"{"call": "Polls/Tally", "args": [0], "returns": 5}"#.into(),
                "Tally",
            ),
        ] {
            let err = read(&message).unwrap_err();
            assert!(err.contains(expect), "{message}: {err}");
        }
    }

    #[test]
    fn the_text_form_reads_init_replies_and_failures() {
        let file = parse_lines(
            "# a comment\ninit 0x01\n0x0203 => 0x04\n05   # no reply expected\n0x06 => fail\n",
        )
        .unwrap();
        assert!(matches!(&file.init, Init::Hex(hex) if hex == "0x01"));
        let got: Vec<(&str, Option<&str>, bool)> = file
            .messages
            .iter()
            .map(|m| (m.payload.as_deref().unwrap(), m.reply.as_deref(), m.fails))
            .collect();
        assert_eq!(
            got,
            [
                ("0x0203", Some("0x04"), false),
                ("05", None, false),
                ("0x06", None, true)
            ]
        );
        assert!(parse_lines("0x01\ninit 0x02\n").is_err());
    }

    #[test]
    fn hex_errors_name_the_message() {
        assert_eq!(unhex("0x0aff", "m").unwrap(), [10, 255]);
        let err = unhex("0xabc", "message 3").unwrap_err().to_string();
        assert!(err.contains("message 3") && err.contains("odd"), "{err}");
        let err = unhex("zz", "message 1").unwrap_err().to_string();
        assert!(err.contains("not hex"), "{err}");
        // Not ASCII: an error, not a slice through a character.
        let err = unhex("0xé1", "message 2").unwrap_err().to_string();
        assert!(err.contains("`é` at digit 1"), "{err}");
        // A long payload is quoted by its start only.
        let long = format!("0x{}g", "ab".repeat(10_000));
        let err = unhex(&long, "message 4").unwrap_err().to_string();
        assert!(
            err.len() < 200 && err.contains("(20003 characters)"),
            "{err}"
        );
    }
}
