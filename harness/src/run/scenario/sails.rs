//! Sails messages written by service and method name, encoded on the host with sails-rs' own
//! types: the header a Sails 2.0 program reads (`SailsMessageHeader`: interface id, entry id,
//! route), then the SCALE-encoded arguments, exactly as its generated clients send them.
//! Replies and events are framed the same way, so a scenario can expect them byte for byte.

use super::{Expect, Step};
use crate::run::backend::{Sent, UserId};
use anyhow::{anyhow, Result};
use parity_scale_codec::Encode;
use sails_rs::gstd::SailsEvent;
use sails_rs::meta::{InterfaceId, MethodMetadata, ProgramMeta, SailsMessageHeader, ServiceMeta};

/// One service as a program exposes it: its interface, its route there and its methods.
#[derive(Clone, Copy, Debug)]
pub struct Route {
    pub name: &'static str,
    interface: InterfaceId,
    route: u8,
    methods: &'static [MethodMetadata],
}

/// `snake_case` or `PascalCase` to the `PascalCase` Sails routes and methods are named by.
pub(crate) fn pascal(name: &str) -> String {
    name.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

impl Route {
    /// Service `S` at route `name` of program `P` (`"vft"` or `"Vft"`); an error names the
    /// routes there are, or says `S` is not the service at that route.
    pub fn of<P: ProgramMeta, S: ServiceMeta>(name: &str) -> Result<Route> {
        let wanted = pascal(name);
        let index = P::SERVICES
            .iter()
            .position(|(route, _)| *route == wanted)
            .ok_or_else(|| {
                let routes: Vec<&str> = P::SERVICES.iter().map(|(r, _)| *r).collect();
                anyhow!(
                    "the program has no service `{wanted}`; it has {}",
                    routes.join(", ")
                )
            })?;
        let (route, meta) = &P::SERVICES[index];
        if meta.interface_id() != S::INTERFACE_ID {
            anyhow::bail!("the service at route `{route}` is not the one named");
        }
        Ok(Route {
            name: route,
            interface: S::INTERFACE_ID,
            // Sails numbers a program's routes from 1 in the order it lists them; 0 means
            // "whichever route has this interface".
            route: u8::try_from(index + 1).expect("Sails allows 255 routes"),
            methods: S::METHODS,
        })
    }

    fn entry(&self, method: &str) -> Result<u16> {
        let wanted = pascal(method);
        self.methods
            .iter()
            .find(|m| m.name == wanted)
            .map(|m| m.entry_id)
            .ok_or_else(|| {
                let names: Vec<&str> = self.methods.iter().map(|m| m.name).collect();
                anyhow!(
                    "service `{}` has no method `{wanted}`; it has {}",
                    self.name,
                    names.join(", ")
                )
            })
    }

    fn framed(&self, entry: u16, body: &impl Encode) -> Vec<u8> {
        let mut bytes = SailsMessageHeader::v1(self.interface, entry, self.route).to_bytes();
        body.encode_to(&mut bytes);
        bytes
    }

    /// A call of `method` with `args` (a tuple of its parameters, in order).
    pub fn call(&self, method: &str, args: &impl Encode) -> Result<Vec<u8>> {
        Ok(self.framed(self.entry(method)?, args))
    }

    /// The reply `method` gives when it returns `value`, or the error payload it fails with
    /// when a business error `value` is thrown (`#[export(unwrap_result)]`): framed alike.
    pub fn answer(&self, method: &str, value: &impl Encode) -> Result<Vec<u8>> {
        Ok(self.framed(self.entry(method)?, value))
    }

    /// The message the service sends for `event`: to the zero address, the header with the
    /// event's entry id, then the event without its variant index.
    pub fn event<E: SailsEvent>(&self, event: &E) -> Sent {
        let mut payload =
            SailsMessageHeader::v1(self.interface, event.entry_id(), self.route).to_bytes();
        payload.extend_from_slice(&event.encode()[E::skip_bytes()..]);
        Sent {
            destination: [0; 32],
            payload,
        }
    }
}

/// `from` calling `method` of `route` with `args`, answered as the model says: `Ok` with the
/// method's return value and the events it emits (replied and sent exactly so), or `Err` with
/// the business error it throws (the message fails with it and sends nothing).
///
/// A method returning `()` does not reply at all in Sails 2.0 (its dispatch skips the reply
/// when the result type is `()`), so Gear's automatic reply, an empty payload, is expected.
pub fn step<V: Encode + 'static>(
    from: UserId,
    route: &Route,
    method: &str,
    args: &impl Encode,
    outcome: Result<(V, Vec<Sent>), impl Encode>,
) -> Result<Step> {
    let payload = route.call(method, args)?;
    let unit = std::any::TypeId::of::<V>() == std::any::TypeId::of::<()>();
    let (expect, sent) = match outcome {
        Ok((_, sent)) if unit => {
            route.entry(method)?;
            (Expect::Reply(Vec::new()), sent)
        }
        Ok((value, sent)) => (Expect::Reply(route.answer(method, &value)?), sent),
        Err(error) => (
            Expect::FailureWith(route.answer(method, &error)?),
            Vec::new(),
        ),
    };
    Ok(Step {
        from,
        payload,
        expect,
        sent: Some(sent),
        reads: None,
    })
}

/// The steps of a program with one service, each answered by the program's own rules run on
/// the host: what the corpus scenarios are written with.
pub struct Calls {
    pub route: Route,
    pub steps: Vec<Step>,
}

impl Calls {
    /// Calls of service `S` at route `name` of program `P`.
    pub fn of<P: ProgramMeta, S: ServiceMeta>(name: &str) -> Calls {
        Calls {
            route: Route::of::<P, S>(name).expect("the program's service"),
            steps: Vec::new(),
        }
    }

    fn push<V: Encode + 'static>(
        &mut self,
        from: UserId,
        method: &str,
        args: &impl Encode,
        outcome: Result<(V, Vec<Sent>), impl Encode>,
    ) {
        let s = step(from, &self.route, method, args, outcome);
        self.steps
            .push(s.unwrap_or_else(|e| panic!("{method}: {e:#}")));
    }

    /// A change that emits one event when done, or is refused with the model's error.
    pub fn change<V: Encode + 'static, E: SailsEvent>(
        &mut self,
        from: UserId,
        method: &str,
        args: &impl Encode,
        outcome: Result<(V, E), impl Encode>,
    ) {
        let route = self.route;
        let outcome = outcome.map(|(v, e)| (v, vec![route.event(&e)]));
        self.push(from, method, args, outcome);
    }

    /// A call that emits nothing: a query, or a change the program does not announce.
    pub fn quiet<V: Encode + 'static>(
        &mut self,
        from: UserId,
        method: &str,
        args: &impl Encode,
        outcome: Result<V, impl Encode>,
    ) {
        self.push(from, method, args, outcome.map(|v| (v, Vec::new())));
    }

    /// A query, which always answers.
    pub fn query<V: Encode + 'static>(
        &mut self,
        from: UserId,
        method: &str,
        args: &impl Encode,
        value: V,
    ) {
        self.quiet(from, method, args, Ok::<_, ()>(value));
    }
}

/// The `init` payload calling the program's constructor number `entry` (Sails numbers them
/// in the alphabetical order of their names; a program with one has only 0) with `args`.
pub fn constructor(entry: u16, args: &impl Encode) -> Vec<u8> {
    let mut bytes = SailsMessageHeader::v1(InterfaceId::zero(), entry, 0).to_bytes();
    args.encode_to(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_pascal_cased() {
        assert_eq!(pascal("transfer_from"), "TransferFrom");
        assert_eq!(pascal("TransferFrom"), "TransferFrom");
        assert_eq!(pascal("vft_admin"), "VftAdmin");
    }
}
