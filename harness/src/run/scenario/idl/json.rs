//! JSON values encoded by their IDL type (SCALE), and decoded back for the checks: the rules
//! the module's comment states, one function per kind of type.

use super::{list, Idl};
use anyhow::{anyhow, bail, Context, Result};
use parity_scale_codec::{Compact, Encode};
use sails_idl_parser_v2::ast::{EnumDef, PrimitiveType, StructDef, Type, TypeDecl, TypeDef};
use serde_json::Value;
use std::collections::HashMap;

/// `"Name"` (no payload) or `{"Name": payload}`.
pub(crate) fn variant_of(value: &Value) -> Result<(&str, &Value)> {
    match value {
        Value::String(name) => Ok((name, &Value::Null)),
        Value::Object(map) if map.len() == 1 => {
            let (name, payload) = map.iter().next().expect("one entry");
            Ok((name, payload))
        }
        _ => bail!("expected `\"Variant\"` or `{{\"Variant\": payload}}`"),
    }
}

/// Where type names resolve: the types declared next to the method (or program), and the
/// generic parameters bound on the way down.
#[derive(Clone)]
pub(super) struct Scope<'a> {
    idl: &'a Idl,
    types: &'a [Type],
    generics: HashMap<String, TypeDecl>,
}

impl<'a> Scope<'a> {
    pub(super) fn new(idl: &'a Idl, types: &'a [Type]) -> Self {
        Scope {
            idl,
            types,
            generics: HashMap::new(),
        }
    }

    /// Arguments as an array in parameter order, or an object by parameter name.
    pub(super) fn encode_args(
        &self,
        params: &[(&String, &TypeDecl)],
        args: &Value,
        out: &mut Vec<u8>,
        what: &str,
    ) -> Result<()> {
        let names = || {
            params
                .iter()
                .map(|(n, t)| format!("{n}: {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match args {
            Value::Null if params.is_empty() => Ok(()),
            Value::Array(values) => {
                if values.len() != params.len() {
                    bail!(
                        "{what} takes {} argument(s) ({}), {} given",
                        params.len(),
                        names(),
                        values.len()
                    );
                }
                for ((name, ty), v) in params.iter().zip(values) {
                    self.encode(ty, v, out, &format!("{what}, argument `{name}`"))?;
                }
                Ok(())
            }
            Value::Object(map) => {
                if let Some(extra) = map.keys().find(|k| !params.iter().any(|(n, _)| n == k)) {
                    bail!("{what} has no parameter `{extra}`; it takes ({})", names());
                }
                for (name, ty) in params {
                    let v = map
                        .get(name.as_str())
                        .with_context(|| format!("{what}: argument `{name}` is missing"))?;
                    self.encode(ty, v, out, &format!("{what}, argument `{name}`"))?;
                }
                Ok(())
            }
            _ => bail!(
                "{what}: give the arguments ({}) as an array or an object",
                names()
            ),
        }
    }

    pub(super) fn encode(
        &self,
        ty: &TypeDecl,
        v: &Value,
        out: &mut Vec<u8>,
        what: &str,
    ) -> Result<()> {
        let mismatch = || anyhow!("{what}: `{v}` is not a {ty}");
        match ty {
            TypeDecl::Primitive(p) => primitive(*p, v, out).with_context(mismatch),
            TypeDecl::Slice { item } => {
                let (count, items) = self.items(item, v, what)?;
                Compact(count as u32).encode_to(out);
                out.extend(items);
                Ok(())
            }
            TypeDecl::Array { item, len } => {
                let (count, items) = self.items(item, v, what)?;
                if count != *len as usize {
                    bail!("{what}: {count} item(s) given, {ty} has {len}");
                }
                out.extend(items);
                Ok(())
            }
            TypeDecl::Tuple { types } => {
                let values = match v {
                    Value::Null if types.is_empty() => Vec::new(),
                    Value::Array(values) if values.len() == types.len() => values.clone(),
                    _ => return Err(mismatch()),
                };
                for (i, (t, v)) in types.iter().zip(&values).enumerate() {
                    self.encode(t, v, out, &format!("{what}, item {i}"))?;
                }
                Ok(())
            }
            TypeDecl::Generic { name } => {
                let bound = self
                    .generics
                    .get(name)
                    .with_context(|| format!("{what}: generic `{name}` is not bound"))?
                    .clone();
                self.encode(&bound, v, out, what)
            }
            TypeDecl::Named { name, generics } => match (name.as_str(), &generics[..]) {
                ("Option", [item]) => {
                    if v.is_null() {
                        out.push(0);
                        Ok(())
                    } else {
                        out.push(1);
                        self.encode(item, v, out, what)
                    }
                }
                ("Result", [ok, err]) => {
                    let (tag, inner) = variant_of(v).with_context(mismatch)?;
                    match tag.to_ascii_lowercase().as_str() {
                        "ok" => {
                            out.push(0);
                            self.encode(ok, inner, out, what)
                        }
                        "err" => {
                            out.push(1);
                            self.encode(err, inner, out, what)
                        }
                        _ => Err(mismatch()),
                    }
                }
                _ => self.user_type(name, generics, v, out, what),
            },
        }
    }

    /// How many items a `[T]` or `[T; N]` has and their encoding (without a length), from an
    /// array or, for bytes, hex.
    pub(super) fn items(&self, item: &TypeDecl, v: &Value, what: &str) -> Result<(usize, Vec<u8>)> {
        match v {
            Value::String(hex) if *item == TypeDecl::Primitive(PrimitiveType::U8) => {
                let bytes = unhex(hex).with_context(|| format!("{what}: `{hex}` is not hex"))?;
                Ok((bytes.len(), bytes))
            }
            Value::Array(values) => {
                let mut out = Vec::new();
                for (i, v) in values.iter().enumerate() {
                    self.encode(item, v, &mut out, &format!("{what}, item {i}"))?;
                }
                Ok((values.len(), out))
            }
            _ => bail!("{what}: `{v}` is not a list of {item}"),
        }
    }

    pub(super) fn user_type(
        &self,
        name: &str,
        generics: &[TypeDecl],
        v: &Value,
        out: &mut Vec<u8>,
        what: &str,
    ) -> Result<()> {
        let (ty, inner) = self
            .resolve(name, generics)
            .with_context(|| what.to_owned())?;
        match &ty.def {
            TypeDef::Struct(def) => inner.encode_struct(def, v, out, what),
            TypeDef::Enum(def) => inner.encode_enum(name, def, v, out, what),
            TypeDef::Alias(alias) => inner.encode(&alias.target, v, out, what),
        }
    }

    /// The type declared as `name`, and the scope inside it: its generic parameters bound to
    /// `generics` as they resolve here.
    pub(super) fn resolve(&self, name: &str, generics: &[TypeDecl]) -> Result<(&'a Type, Self)> {
        let ty = self
            .idl
            .named(self.types, name)
            .with_context(|| format!("the IDL declares no type `{name}`"))?;
        if ty.type_params.len() != generics.len() {
            bail!(
                "`{name}` takes {} generic(s), {} given",
                ty.type_params.len(),
                generics.len()
            );
        }
        let mut inner = self.clone();
        for (param, arg) in ty.type_params.iter().zip(generics) {
            let arg = match arg {
                TypeDecl::Generic { name } => {
                    self.generics.get(name).cloned().unwrap_or(arg.clone())
                }
                _ => arg.clone(),
            };
            inner.generics.insert(param.name.clone(), arg);
        }
        Ok((ty, inner))
    }

    /// What the generic parameter `name` is bound to here.
    pub(super) fn bound(&self, name: &str) -> Option<TypeDecl> {
        self.generics.get(name).cloned()
    }

    /// Fields by name from an object, unnamed ones from an array (or the value alone for one).
    pub(super) fn encode_struct(
        &self,
        def: &StructDef,
        v: &Value,
        out: &mut Vec<u8>,
        what: &str,
    ) -> Result<()> {
        if def.is_unit() {
            return match v {
                Value::Null => Ok(()),
                Value::Object(m) if m.is_empty() => Ok(()),
                Value::Array(a) if a.is_empty() => Ok(()),
                _ => bail!("{what}: `{v}` given where no fields are"),
            };
        }
        if def.is_tuple() {
            let values = match v {
                Value::Array(values) => values.clone(),
                single if def.fields.len() == 1 => vec![single.clone()],
                _ => bail!("{what}: give the {} fields as an array", def.fields.len()),
            };
            if values.len() != def.fields.len() {
                bail!(
                    "{what}: {} field(s) given, it has {}",
                    values.len(),
                    def.fields.len()
                );
            }
            for (i, (f, v)) in def.fields.iter().zip(&values).enumerate() {
                self.encode(&f.type_decl, v, out, &format!("{what}, field {i}"))?;
            }
            return Ok(());
        }
        let map = v
            .as_object()
            .with_context(|| format!("{what}: `{v}` is not an object of its fields"))?;
        let names: Vec<&str> = def
            .fields
            .iter()
            .filter_map(|f| f.name.as_deref())
            .collect();
        if let Some(extra) = map.keys().find(|k| !names.contains(&k.as_str())) {
            bail!("{what} has no field `{extra}`; it has {}", list(&names));
        }
        for f in &def.fields {
            let name = f.name.as_deref().unwrap_or_default();
            let v = map
                .get(name)
                .with_context(|| format!("{what}: field `{name}` is missing"))?;
            self.encode(&f.type_decl, v, out, &format!("{what}, field `{name}`"))?;
        }
        Ok(())
    }

    /// The variant's index is its place in the declaration (SCALE's order for a derived enum).
    pub(super) fn encode_enum(
        &self,
        name: &str,
        def: &EnumDef,
        v: &Value,
        out: &mut Vec<u8>,
        what: &str,
    ) -> Result<()> {
        let (variant, payload) =
            variant_of(v).with_context(|| format!("{what}: `{v}` for {name}"))?;
        let index = def
            .variants
            .iter()
            .position(|x| x.name == variant)
            .ok_or_else(|| {
                let names: Vec<&str> = def.variants.iter().map(|x| x.name.as_str()).collect();
                anyhow!(
                    "{what}: {name} has no variant `{variant}`; it has {}",
                    list(&names)
                )
            })?;
        out.push(u8::try_from(index).context("more than 256 variants")?);
        self.encode_struct(
            &def.variants[index].def,
            payload,
            out,
            &format!("{what}, {name}::{variant}"),
        )
    }
}

/// Hex as scenario files write it everywhere (the same reader as payloads).
pub(crate) fn unhex(text: &str) -> Result<Vec<u8>> {
    crate::run::scenario::unhex(text, "value")
}

/// An integer from a JSON number or a decimal / `0x` hex string.
fn integer(v: &Value) -> Result<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .context("not an integer"),
        Value::String(s) => match s.strip_prefix("0x") {
            Some(hex) => Ok(i128::try_from(u128::from_str_radix(hex, 16)?)?),
            None => Ok(s.parse()?),
        },
        _ => bail!("not an integer"),
    }
}

fn unsigned(v: &Value) -> Result<u128> {
    match v {
        Value::String(s) if !s.starts_with('-') => match s.strip_prefix("0x") {
            Some(hex) => Ok(u128::from_str_radix(hex, 16)?),
            None => Ok(s.parse()?),
        },
        _ => Ok(u128::try_from(integer(v)?)?),
    }
}

/// 32 bytes: a user number (as the scenario's `from`) or hex.
fn id32(v: &Value) -> Result<[u8; 32]> {
    match v {
        Value::String(s) if s.starts_with("0x") => {
            Ok(unhex(s)?.try_into().map_err(|_| anyhow!("not 32 bytes"))?)
        }
        _ => Ok(sails_rs::ActorId::from(u64::try_from(unsigned(v)?)?).into_bytes()),
    }
}

fn primitive(p: PrimitiveType, v: &Value, out: &mut Vec<u8>) -> Result<()> {
    use PrimitiveType as P;
    match p {
        P::Void => match v {
            Value::Null => {}
            Value::Array(a) if a.is_empty() => {}
            _ => bail!("not ()"),
        },
        P::Bool => v.as_bool().context("not a bool")?.encode_to(out),
        P::Char => {
            let s = v.as_str().context("not a string")?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => u32::from(c).encode_to(out),
                _ => bail!("not one character"),
            }
        }
        P::String => v.as_str().context("not a string")?.encode_to(out),
        P::U8 => u8::try_from(unsigned(v)?)?.encode_to(out),
        P::U16 => u16::try_from(unsigned(v)?)?.encode_to(out),
        P::U32 => u32::try_from(unsigned(v)?)?.encode_to(out),
        P::U64 => u64::try_from(unsigned(v)?)?.encode_to(out),
        P::U128 => unsigned(v)?.encode_to(out),
        P::I8 => i8::try_from(integer(v)?)?.encode_to(out),
        P::I16 => i16::try_from(integer(v)?)?.encode_to(out),
        P::I32 => i32::try_from(integer(v)?)?.encode_to(out),
        P::I64 => i64::try_from(integer(v)?)?.encode_to(out),
        P::I128 => integer(v)?.encode_to(out),
        P::ActorId | P::CodeId | P::MessageId | P::H256 => out.extend(id32(v)?),
        P::H160 => {
            let bytes: [u8; 20] = unhex(v.as_str().context("not hex")?)?
                .try_into()
                .map_err(|_| anyhow!("not 20 bytes"))?;
            out.extend(bytes);
        }
        P::U256 => {
            let n = match v {
                Value::Number(_) => sails_rs::U256::from(unsigned(v)?),
                Value::String(s) => match s.strip_prefix("0x") {
                    Some(hex) => sails_rs::U256::from_str_radix(hex, 16)?,
                    None => sails_rs::U256::from_dec_str(s).map_err(|e| anyhow!("{e:?}"))?,
                },
                _ => bail!("not a number"),
            };
            n.encode_to(out);
        }
    }
    Ok(())
}
