//! SCALE bytes read back by their IDL type as the Rust value they encode, for messages: a
//! reply that is not the one expected is shown as `Some(("Where shall the lab meet?", 3))`
//! beside what was expected, not as two lines of hex. The inverse of [`super::json`]'s
//! encoding, one arm per kind of type; the text follows Rust's `Debug` (strings quoted, enum
//! variants by name), ids as hex or as the user number scenario files send from.

use super::json::Scope;
use anyhow::{bail, Context, Result};
use parity_scale_codec::{Compact, Decode};
use sails_idl_parser_v2::ast::{EnumDef, PrimitiveType, StructDef, TypeDecl, TypeDef};

/// The users a scenario file can name by number, from 1: an `ActorId` equal to one is shown
/// as `user N`.
const USERS: u64 = 1_000;

impl Scope<'_> {
    /// The value of type `ty` at the start of `input`, which it consumes.
    pub(super) fn decode(&self, ty: &TypeDecl, input: &mut &[u8]) -> Result<String> {
        match ty {
            TypeDecl::Primitive(p) => primitive(*p, input),
            TypeDecl::Slice { item } => {
                let len = Compact::<u32>::decode(input).context("a length")?.0 as usize;
                self.decode_items(item, len, input)
            }
            TypeDecl::Array { item, len } => self.decode_items(item, *len as usize, input),
            TypeDecl::Tuple { types } => {
                let items = types
                    .iter()
                    .map(|t| self.decode(t, input))
                    .collect::<Result<Vec<_>>>()?;
                Ok(match &items[..] {
                    [one] => format!("({one},)"),
                    _ => format!("({})", items.join(", ")),
                })
            }
            TypeDecl::Generic { name } => {
                let bound = self
                    .bound(name)
                    .with_context(|| format!("generic `{name}` is not bound"))?;
                self.decode(&bound, input)
            }
            TypeDecl::Named { name, generics } => match (name.as_str(), &generics[..]) {
                ("Option", [item]) => match u8::decode(input)? {
                    0 => Ok("None".into()),
                    1 => Ok(format!("Some({})", self.decode(item, input)?)),
                    tag => bail!("{tag} is not an Option's tag"),
                },
                ("Result", [ok, err]) => match u8::decode(input)? {
                    0 => Ok(format!("Ok({})", self.decode(ok, input)?)),
                    1 => Ok(format!("Err({})", self.decode(err, input)?)),
                    tag => bail!("{tag} is not a Result's tag"),
                },
                _ => {
                    let (ty, inner) = self.resolve(name, generics)?;
                    match &ty.def {
                        TypeDef::Struct(def) => inner.decode_fields(name, def, input),
                        TypeDef::Enum(def) => inner.decode_enum(name, def, input),
                        TypeDef::Alias(alias) => inner.decode(&alias.target, input),
                    }
                }
            },
        }
    }

    /// `len` items of `item`: bytes as hex, anything else as a list.
    fn decode_items(&self, item: &TypeDecl, len: usize, input: &mut &[u8]) -> Result<String> {
        if *item == TypeDecl::Primitive(PrimitiveType::U8) {
            if input.len() < len {
                bail!("{len} bytes, {} left", input.len());
            }
            let (bytes, rest) = input.split_at(len);
            *input = rest;
            return Ok(format!("0x{}", crate::results::hex(bytes)));
        }
        let items = (0..len)
            .map(|_| self.decode(item, input))
            .collect::<Result<Vec<_>>>()?;
        Ok(format!("[{}]", items.join(", ")))
    }

    /// A struct's (or a variant's) fields: `Name { a: 1 }`, `Name(1, 2)` or `Name`.
    pub(super) fn decode_fields(
        &self,
        name: &str,
        def: &StructDef,
        input: &mut &[u8],
    ) -> Result<String> {
        if def.is_unit() {
            return Ok(name.to_owned());
        }
        let values = def
            .fields
            .iter()
            .map(|f| self.decode(&f.type_decl, input))
            .collect::<Result<Vec<_>>>()?;
        if def.is_tuple() {
            return Ok(format!("{name}({})", values.join(", ")));
        }
        let fields: Vec<String> = def
            .fields
            .iter()
            .zip(values)
            .map(|(f, v)| format!("{}: {v}", f.name.as_deref().unwrap_or_default()))
            .collect();
        Ok(format!("{name} {{ {} }}", fields.join(", ")))
    }

    fn decode_enum(&self, name: &str, def: &EnumDef, input: &mut &[u8]) -> Result<String> {
        let index = u8::decode(input)? as usize;
        let variant = def
            .variants
            .get(index)
            .with_context(|| format!("{name} has no variant {index}"))?;
        self.decode_fields(&variant.name, &variant.def, input)
    }
}

fn primitive(p: PrimitiveType, input: &mut &[u8]) -> Result<String> {
    use PrimitiveType as P;
    Ok(match p {
        P::Void => "()".into(),
        P::Bool => bool::decode(input)?.to_string(),
        P::Char => {
            let c = char::from_u32(u32::decode(input)?).context("not a char")?;
            format!("{c:?}")
        }
        P::String => format!("{:?}", String::decode(input)?),
        P::U8 => u8::decode(input)?.to_string(),
        P::U16 => u16::decode(input)?.to_string(),
        P::U32 => u32::decode(input)?.to_string(),
        P::U64 => u64::decode(input)?.to_string(),
        P::U128 => u128::decode(input)?.to_string(),
        P::I8 => i8::decode(input)?.to_string(),
        P::I16 => i16::decode(input)?.to_string(),
        P::I32 => i32::decode(input)?.to_string(),
        P::I64 => i64::decode(input)?.to_string(),
        P::I128 => i128::decode(input)?.to_string(),
        P::ActorId => {
            let id = <[u8; 32]>::decode(input)?;
            match (1..=USERS).find(|u| sails_rs::ActorId::from(*u).into_bytes() == id) {
                Some(user) => format!("user {user}"),
                None => format!("0x{}", crate::results::hex(&id)),
            }
        }
        P::CodeId | P::MessageId | P::H256 => {
            format!("0x{}", crate::results::hex(&<[u8; 32]>::decode(input)?))
        }
        P::H160 => format!("0x{}", crate::results::hex(&<[u8; 20]>::decode(input)?)),
        P::U256 => sails_rs::U256::decode(input)?.to_string(),
    })
}
