//! Sails calls written by service and method name in a scenario file, with their arguments,
//! return values, thrown errors and events as JSON, encoded from the program's IDL (parsed by
//! Sails' own `sails-idl-parser-v2`): the header a Sails 2.0 program reads (interface id and
//! entry id from the IDL, the route's index in the program's `services`) and the SCALE
//! encoding of each value by its IDL type. The lab's own Sails cases use the programs' Rust
//! types instead ([`super::sails`]); both frame messages with sails-rs' `SailsMessageHeader`.
//!
//! JSON for IDL types: integers as numbers or strings (decimal, or `0x` hex for the wide ones);
//! `ActorId` (and `CodeId`, `MessageId`, `H256`) as a user number (the ids scenario files send
//! from) or 32 bytes of hex; `U256` as a number or a decimal string; `[u8]` as an array or hex;
//! `Option` as `null` or the value; `Result` as `{"ok": v}` or `{"err": e}`; structs as
//! objects by field name (tuple structs as arrays); enum values as `"Variant"` or
//! `{"Variant": payload}`; tuples and argument lists as arrays (arguments also as an object by
//! parameter name).

use crate::run::backend::Sent;
use anyhow::{anyhow, bail, Context, Result};
use sails_idl_parser_v2::ast::{IdlDoc, InterfaceId, ServiceFunc, ServiceUnit, Type};
use sails_rs::meta::SailsMessageHeader;
use serde_json::Value;
use std::path::Path;

mod json;
mod text;

pub(crate) use json::variant_of;
use json::Scope;

/// A program's interface, read from its IDL file.
pub struct Idl {
    doc: IdlDoc,
    /// Named in errors.
    file: String,
}

/// One method of one route, ready to frame calls, replies, errors and events.
pub struct Method<'a> {
    idl: &'a Idl,
    service: &'a ServiceUnit,
    func: &'a ServiceFunc,
    interface: InterfaceId,
    route: u8,
}

impl Idl {
    pub fn read(path: &Path) -> Result<Idl> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the IDL file {}", path.display()))?;
        Idl::parse(&text, &path.display().to_string())
    }

    /// `file` names the source in errors.
    pub fn parse(text: &str, file: &str) -> Result<Idl> {
        let doc = sails_idl_parser_v2::parse_idl(text)
            .map_err(|e| anyhow!("{file} is not a Sails IDL: {e}"))?;
        if doc.program.is_none() {
            bail!("{file} declares no `program` (its routes and constructors are needed)");
        }
        Ok(Idl {
            doc,
            file: file.to_owned(),
        })
    }

    fn program(&self) -> &sails_idl_parser_v2::ast::ProgramUnit {
        self.doc.program.as_ref().expect("checked in parse")
    }

    /// The `init` payload calling constructor `name` with `args`.
    pub fn constructor(&self, name: &str, args: &Value) -> Result<Vec<u8>> {
        let program = self.program();
        let wanted = super::sails::pascal(name);
        let ctor = program
            .ctors
            .iter()
            .find(|c| c.name == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = program.ctors.iter().map(|c| c.name.as_str()).collect();
                anyhow!(
                    "{}: the program has no constructor `{wanted}`; it has {}",
                    self.file,
                    list(&names)
                )
            })?;
        let mut bytes = SailsMessageHeader::v1(InterfaceId::zero(), ctor.entry_id, 0).to_bytes();
        let scope = Scope::new(self, &program.types);
        let params: Vec<_> = ctor
            .params
            .iter()
            .map(|p| (&p.name, &p.type_decl))
            .collect();
        scope.encode_args(&params, args, &mut bytes, &format!("constructor {wanted}"))?;
        Ok(bytes)
    }

    /// `target` is `Route/Method` (`Polls/Vote` or `polls/vote`).
    pub fn method(&self, target: &str) -> Result<Method<'_>> {
        let (route_name, method) = target.split_once('/').with_context(|| {
            format!("`{target}` is not `Service/Method` (a route of the program and its method)")
        })?;
        let program = self.program();
        let wanted = super::sails::pascal(route_name);
        let route_of = |e: &sails_idl_parser_v2::ast::ServiceExpo| {
            e.route.clone().unwrap_or_else(|| e.name.name.clone())
        };
        let expo = program
            .services
            .iter()
            .find(|e| route_of(e) == wanted)
            .ok_or_else(|| {
                let routes: Vec<String> = program.services.iter().map(route_of).collect();
                let routes: Vec<&str> = routes.iter().map(String::as_str).collect();
                anyhow!(
                    "{}: the program has no service `{wanted}`; it has {}",
                    self.file,
                    list(&routes)
                )
            })?;
        let service = self.service(&expo.name.name)?;
        let wanted_method = super::sails::pascal(method);
        let (service, func) = self.find_func(service, &wanted_method)?.ok_or_else(|| {
            let names: Vec<&str> = service.funcs.iter().map(|f| f.name.as_str()).collect();
            anyhow!(
                "{}: service `{wanted}` has no method `{wanted_method}`; it has {}",
                self.file,
                list(&names)
            )
        })?;
        let interface = service
            .name
            .interface_id
            .or(expo
                .name
                .interface_id
                .filter(|_| service.name.name == expo.name.name))
            .with_context(|| {
                format!(
                    "{}: service `{}` has no interface id (Sails 2.0 IDL writes `{}@0x…`)",
                    self.file, service.name.name, service.name.name
                )
            })?;
        Ok(Method {
            idl: self,
            service,
            func,
            interface,
            route: expo.route_idx,
        })
    }

    fn service(&self, name: &str) -> Result<&ServiceUnit> {
        self.doc
            .services
            .iter()
            .find(|s| s.name.name == name)
            .with_context(|| format!("{}: no `service {name}` is declared", self.file))
    }

    /// `name` in `service` or, failing that, in the services it extends (called with theirs
    /// interface id).
    fn find_func<'a>(
        &'a self,
        service: &'a ServiceUnit,
        name: &str,
    ) -> Result<Option<(&'a ServiceUnit, &'a ServiceFunc)>> {
        if let Some(f) = service.funcs.iter().find(|f| f.name == name) {
            return Ok(Some((service, f)));
        }
        for base in &service.extends {
            if let Some(found) = self.find_func(self.service(&base.name)?, name)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The type `name`, looked for in `first` (the service's or the program's types), then in
    /// every service's.
    fn named<'a>(&'a self, first: &'a [Type], name: &str) -> Option<&'a Type> {
        first
            .iter()
            .chain(self.program().types.iter())
            .chain(self.doc.services.iter().flat_map(|s| s.types.iter()))
            .find(|t| t.name == name)
    }
}

impl Method<'_> {
    fn name(&self) -> String {
        format!("{}/{}", self.service.name.name, self.func.name)
    }

    fn framed(&self, entry: u16) -> Vec<u8> {
        SailsMessageHeader::v1(self.interface, entry, self.route).to_bytes()
    }

    fn scope(&self) -> Scope<'_> {
        Scope::new(self.idl, &self.service.types)
    }

    /// The call's payload.
    pub fn call(&self, args: &Value) -> Result<Vec<u8>> {
        let mut bytes = self.framed(self.func.entry_id);
        let params: Vec<_> = self
            .func
            .params
            .iter()
            .map(|p| (&p.name, &p.type_decl))
            .collect();
        self.scope()
            .encode_args(&params, args, &mut bytes, &self.name())?;
        Ok(bytes)
    }

    /// The reply to a call returning `value`; empty for a method returning `()`, which sends
    /// no reply in Sails 2.0 (Gear's automatic reply is empty).
    pub fn reply(&self, value: &Value) -> Result<Vec<u8>> {
        if self.func.returns_void() {
            if !value.is_null() {
                bail!(
                    "{} returns nothing; give `null` or leave `returns` out",
                    self.name()
                );
            }
            return Ok(Vec::new());
        }
        let mut bytes = self.framed(self.func.entry_id);
        let what = format!("{}'s return value", self.name());
        self.scope()
            .encode(&self.func.output, value, &mut bytes, &what)?;
        Ok(bytes)
    }

    /// The error reply of a call that throws `error`.
    pub fn thrown(&self, error: &Value) -> Result<Vec<u8>> {
        let ty = self.func.throws.as_ref().with_context(|| {
            format!(
                "{} throws nothing (the IDL gives it no `throws`)",
                self.name()
            )
        })?;
        let mut bytes = self.framed(self.func.entry_id);
        let what = format!("{}'s error", self.name());
        self.scope().encode(ty, error, &mut bytes, &what)?;
        Ok(bytes)
    }

    /// A reply to this call read as the value it encodes, for messages: the return value (for
    /// a failed call, the thrown error) by its IDL type after the header; `None` for bytes
    /// that are not one.
    pub fn describe_reply(&self, bytes: &[u8], failed: bool) -> Option<String> {
        if !failed && self.func.returns_void() {
            return bytes.is_empty().then(|| "()".to_owned());
        }
        let ty = if failed {
            self.func.throws.as_ref()?
        } else {
            &self.func.output
        };
        let mut rest = bytes.strip_prefix(self.framed(self.func.entry_id).as_slice())?;
        let text = self.scope().decode(ty, &mut rest).ok()?;
        rest.is_empty().then_some(text)
    }

    /// A message the service sent read as the event it encodes (`Voted { id: 0, voter: user
    /// 5, option: 1 }`); `None` for bytes that are not one of its events.
    pub fn describe_event(&self, bytes: &[u8]) -> Option<String> {
        self.service.events.iter().find_map(|e| {
            let mut rest = bytes.strip_prefix(self.framed(e.entry_id).as_slice())?;
            let text = self
                .scope()
                .decode_fields(&e.name, &e.def, &mut rest)
                .ok()?;
            rest.is_empty().then_some(text)
        })
    }

    /// The message the service sends for `event` (`{"Name": fields}` or `"Name"`): to the
    /// zero address, the header with the event's entry id, then its fields.
    pub fn event(&self, event: &Value) -> Result<Sent> {
        let (name, fields) =
            variant_of(event).with_context(|| format!("an event of {}: `{event}`", self.name()))?;
        let wanted = super::sails::pascal(name);
        let declared = self
            .service
            .events
            .iter()
            .find(|e| e.name == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = self
                    .service
                    .events
                    .iter()
                    .map(|e| e.name.as_str())
                    .collect();
                anyhow!(
                    "service `{}` has no event `{wanted}`; it has {}",
                    self.service.name.name,
                    list(&names)
                )
            })?;
        let mut payload = self.framed(declared.entry_id);
        let what = format!("event {wanted}");
        self.scope()
            .encode_struct(&declared.def, fields, &mut payload, &what)?;
        Ok(Sent {
            destination: [0; 32],
            payload,
        })
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_scale_codec::Encode;
    use sails_rs::ActorId;
    use serde_json::json;

    /// A service with one of each kind of type; the parser computes its interface id.
    const IDL: &str = r#"
!@sails: 2.0.0

service Shop {
    events {
        Opened,
        Sold {
            who: ActorId,
            amount: u128,
        },
    }
    functions {
        Buy(item: Item, count: u32, note: Option<String>) -> u64 throws ShopError;
        Peek(tags: [u8], pair: (bool, i16)) -> [u8; 2];
        Reset();
        Zoom(who: ActorId) -> Option<(String, [u8], Item, ActorId)>;
    }
    types {
        struct Item {
            id: u16,
            kind: Kind,
        }
        enum Kind {
            Food,
            Tool(u8),
            Other {
                label: String,
            },
        }
        enum ShopError {
            SoldOut,
            TooMany(u32),
        }
    }
}

program Shop {
    constructors {
        New(name: String);
    }
    services {
        Shop,
    }
}
"#;

    fn header(method: &Method, entry: u16) -> Vec<u8> {
        SailsMessageHeader::v1(method.interface, entry, 1).to_bytes()
    }

    /// A reply reads back as the Rust value it encodes (strings quoted, bytes as hex, enum
    /// variants and struct fields by name, a scenario's user by number, any other id as hex),
    /// a thrown error too; bytes that are not the call's reply read as nothing.
    #[test]
    fn replies_read_back_as_their_rust_values() {
        let idl = Idl::parse(IDL, "shop.idl").unwrap();
        let zoom = idl.method("Shop/Zoom").unwrap();
        let item = json!({"id": 7, "kind": {"Other": {"label": "lab"}}});
        let stranger = format!("0x{}", "ab".repeat(32));
        let reply = zoom
            .reply(&json!(["Where shall the lab meet?", "0x0102", item, 3]))
            .unwrap();
        assert_eq!(
            zoom.describe_reply(&reply, false).unwrap(),
            r#"Some(("Where shall the lab meet?", 0x0102, Item { id: 7, kind: Other { label: "lab" } }, user 3))"#
        );
        let other = zoom
            .reply(&json!(["", [], {"id": 1, "kind": {"Tool": 4}}, stranger]))
            .unwrap();
        assert_eq!(
            zoom.describe_reply(&other, false).unwrap(),
            format!(r#"Some(("", 0x, Item {{ id: 1, kind: Tool(4) }}, {stranger}))"#)
        );
        assert_eq!(
            zoom.describe_reply(&zoom.reply(&json!(null)).unwrap(), false)
                .unwrap(),
            "None"
        );
        let buy = idl.method("Shop/Buy").unwrap();
        let thrown = buy.thrown(&json!({"TooMany": 4})).unwrap();
        assert_eq!(buy.describe_reply(&thrown, true).unwrap(), "TooMany(4)");
        assert_eq!(
            buy.describe_reply(&buy.thrown(&json!("SoldOut")).unwrap(), true)
                .unwrap(),
            "SoldOut"
        );
        assert_eq!(
            buy.describe_reply(&buy.reply(&json!(5)).unwrap(), false)
                .unwrap(),
            "5"
        );
        // Another method's header, a byte too many, a panic's text: not this call's reply.
        assert_eq!(
            zoom.describe_reply(&buy.reply(&json!(5)).unwrap(), false),
            None
        );
        let mut longer = buy.reply(&json!(5)).unwrap();
        longer.push(0);
        assert_eq!(buy.describe_reply(&longer, false), None);
        assert_eq!(buy.describe_reply(b"panicked with 'x'", true), None);
        let reset = idl.method("Shop/Reset").unwrap();
        assert_eq!(reset.describe_reply(&[], false).unwrap(), "()");
    }

    /// Each value is encoded as the Rust value it stands for would be: entry ids in the
    /// methods' alphabetical order, the route's index from 1, enum variants by declaration.
    #[test]
    fn calls_replies_errors_and_events_encode_as_their_rust_values() {
        let idl = Idl::parse(IDL, "shop.idl").unwrap();
        let buy = idl.method("shop/buy").unwrap();
        let args = json!([{"id": 7, "kind": {"Other": {"label": "x"}}}, 3, null]);
        let mut want = header(&buy, 0);
        (7u16, 2u8, "x", 3u32, None::<String>).encode_to(&mut want);
        assert_eq!(buy.call(&args).unwrap(), want);
        // The same arguments by parameter name.
        let named = json!({"note": "hi", "count": 3, "item": {"id": 7, "kind": "Food"}});
        let mut want = header(&buy, 0);
        (7u16, 0u8, 3u32, Some("hi")).encode_to(&mut want);
        assert_eq!(buy.call(&named).unwrap(), want);

        let mut want = header(&buy, 0);
        5u64.encode_to(&mut want);
        assert_eq!(buy.reply(&json!(5)).unwrap(), want);
        let mut want = header(&buy, 0);
        (1u8, 4u32).encode_to(&mut want);
        assert_eq!(buy.thrown(&json!({"TooMany": 4})).unwrap(), want);

        let peek = idl.method("Shop/Peek").unwrap();
        let mut want = header(&peek, 1);
        (vec![1u8, 2], (true, -2i16)).encode_to(&mut want);
        assert_eq!(peek.call(&json!(["0x0102", [true, -2]])).unwrap(), want);
        assert_eq!(peek.call(&json!([[1, 2], [true, -2]])).unwrap(), want);
        let mut want = header(&peek, 1);
        [9u8, 8].encode_to(&mut want);
        assert_eq!(peek.reply(&json!([9, 8])).unwrap(), want);

        // `()`: no reply of its own (Gear's empty automatic reply).
        assert_eq!(
            idl.method("Shop/Reset")
                .unwrap()
                .reply(&json!(null))
                .unwrap(),
            Vec::<u8>::new()
        );

        let sold = buy
            .event(&json!({"Sold": {"who": 3, "amount": u128::MAX.to_string()}}))
            .unwrap();
        let mut want = header(&buy, 1);
        (ActorId::from(3u64), u128::MAX).encode_to(&mut want);
        assert_eq!(sold.payload, want);
        assert_eq!(sold.destination, [0; 32]);
        assert_eq!(
            buy.event(&json!("Opened")).unwrap().payload,
            header(&buy, 0)
        );

        let mut want = SailsMessageHeader::v1(InterfaceId::zero(), 0, 0).to_bytes();
        "shop".encode_to(&mut want);
        assert_eq!(idl.constructor("new", &json!(["shop"])).unwrap(), want);
    }

    /// Every mistake names what was asked for and what there is.
    #[test]
    fn mistakes_name_what_there_is() {
        let idl = Idl::parse(IDL, "shop.idl").unwrap();
        let err = |r: Result<Vec<u8>>| format!("{:#}", r.unwrap_err());
        let e = idl.method("Bar/Buy").err().unwrap().to_string();
        assert!(e.contains("no service `Bar`; it has Shop"), "{e}");
        let e = idl.method("Shop/Sell").err().unwrap().to_string();
        assert!(
            e.contains("no method `Sell`; it has Buy, Peek, Reset"),
            "{e}"
        );
        let e = idl.method("Shop").err().unwrap().to_string();
        assert!(e.contains("not `Service/Method`"), "{e}");
        let buy = idl.method("Shop/Buy").unwrap();
        let e = err(buy.call(&json!([1, 2])));
        assert!(
            e.contains("takes 3 argument(s)") && e.contains("2 given"),
            "{e}"
        );
        let e = err(buy.call(&json!([{"id": 7}, 3, null])));
        assert!(e.contains("field `kind` is missing"), "{e}");
        let e = err(buy.call(&json!([{"id": 7, "kind": "Boat"}, 3, null])));
        assert!(
            e.contains("Kind has no variant `Boat`; it has Food, Tool, Other"),
            "{e}"
        );
        let e = err(buy.call(&json!([{"id": 70000, "kind": "Food"}, 3, null])));
        assert!(e.contains("`70000` is not a u16"), "{e}");
        let e = err(buy.thrown(&json!("Broke")));
        assert!(e.contains("no variant `Broke`"), "{e}");
        let e = buy
            .event(&json!({"Bought": null}))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no event `Bought`; it has Opened, Sold"), "{e}");
        let e = err(idl.method("Shop/Reset").unwrap().thrown(&json!(null)));
        assert!(e.contains("throws nothing"), "{e}");
        let e = err(idl.constructor("Create", &json!([])));
        assert!(e.contains("no constructor `Create`; it has New"), "{e}");
        let e = Idl::parse("service {", "bad.idl")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("bad.idl is not a Sails IDL"), "{e}");
    }
}
