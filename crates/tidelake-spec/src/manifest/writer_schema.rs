//! The writer schema of a container (`avro.schema` header), parsed into a flat arena of
//! nodes that only keeps what the binary encoding depends on.
//!
//! Logical types (`timestamp-millis`, `decimal`, ...) are reduced to their underlying type,
//! record/enum/fixed names only serve to resolve references, and field defaults are ignored
//! (a reader fills fields missing from the writer itself). Recursive named types are
//! representable (a reference is a node index); [`WriterSchema::skip`] bounds the nesting it
//! follows, so neither a hostile schema nor hostile data can recurse without limit.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::avro::Cursor;
use crate::error::{Error, Result};

/// Index of a node in [`WriterSchema::nodes`].
pub(crate) type NodeId = usize;

/// Deepest nesting of schema JSON or of skipped data we follow.
pub(crate) const MAX_DEPTH: usize = 64;

/// One Avro type, as far as the binary encoding goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed(usize),
    Enum,
    Array(NodeId),
    Map(NodeId),
    Union(Vec<NodeId>),
    Record(Vec<(String, NodeId)>),
}

impl Node {
    /// The Avro type name, for error messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Boolean => "boolean",
            Node::Int => "int",
            Node::Long => "long",
            Node::Float => "float",
            Node::Double => "double",
            Node::Bytes => "bytes",
            Node::String => "string",
            Node::Fixed(_) => "fixed",
            Node::Enum => "enum",
            Node::Array(_) => "array",
            Node::Map(_) => "map",
            Node::Union(_) => "union",
            Node::Record(_) => "record",
        }
    }
}

/// A parsed writer schema.
#[derive(Debug)]
pub(crate) struct WriterSchema {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
}

struct Parser {
    nodes: Vec<Node>,
    names: HashMap<String, NodeId>,
    what: &'static str,
}

impl WriterSchema {
    pub(crate) fn parse(json: &[u8], what: &'static str) -> Result<Self> {
        let value: Json = serde_json::from_slice(json)
            .map_err(|e| Error::corrupt(what, format_args!("avro.schema is not JSON: {e}")))?;
        let mut p = Parser {
            nodes: PRIMITIVES.iter().map(|(_, n)| n.clone()).collect(),
            names: HashMap::new(),
            what,
        };
        let root = p.node(&value, None, 0)?;
        Ok(WriterSchema {
            nodes: p.nodes,
            root,
        })
    }

    /// Skips one value of type `id`.
    pub(crate) fn skip(&self, id: NodeId, cur: &mut Cursor<'_>, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(cur.corrupt("value nested too deeply"));
        }
        match &self.nodes[id] {
            Node::Null => {}
            Node::Boolean => {
                cur.take(1)?;
            }
            Node::Int | Node::Long | Node::Enum => {
                cur.long()?;
            }
            Node::Float => {
                cur.take(4)?;
            }
            Node::Double => {
                cur.take(8)?;
            }
            Node::Bytes | Node::String => {
                cur.bytes()?;
            }
            Node::Fixed(n) => {
                cur.take(*n)?;
            }
            Node::Array(item) => self.skip_blocks(cur, depth, &[*item])?,
            Node::Map(value) => self.skip_blocks(cur, depth, &[STRING_NODE, *value])?,
            Node::Union(branches) => {
                let i = cur.long()?;
                let branch = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| cur.corrupt(format_args!("union index {i} out of range")))?;
                self.skip(*branch, cur, depth + 1)?;
            }
            Node::Record(fields) => {
                for (_, f) in fields {
                    self.skip(*f, cur, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// Skips the blocks of an array (`parts` = [item]) or a map (`parts` = [key, value]).
    fn skip_blocks(&self, cur: &mut Cursor<'_>, depth: usize, parts: &[NodeId]) -> Result<()> {
        loop {
            let n = cur.block_count()?;
            if n == 0 {
                return Ok(());
            }
            for _ in 0..n {
                let before = cur.position();
                for part in parts {
                    self.skip(*part, cur, depth + 1)?;
                }
                if cur.position() == before {
                    // Items of this type occupy no bytes: the rest of the block is empty too.
                    break;
                }
            }
        }
    }
}

/// Primitive types by name; every schema's arena starts with these nodes, in this order.
const PRIMITIVES: [(&str, Node); 8] = [
    ("null", Node::Null),
    ("boolean", Node::Boolean),
    ("int", Node::Int),
    ("long", Node::Long),
    ("float", Node::Float),
    ("double", Node::Double),
    ("bytes", Node::Bytes),
    ("string", Node::String),
];
/// Arena index of the `string` node (map keys).
const STRING_NODE: NodeId = 7;

impl Parser {
    fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(self.what, format_args!("avro.schema: {reason}"))
    }

    fn primitive(name: &str) -> Option<NodeId> {
        PRIMITIVES.iter().position(|(p, _)| *p == name)
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn node(&mut self, json: &Json, ns: Option<&str>, depth: usize) -> Result<NodeId> {
        if depth > MAX_DEPTH {
            return Err(self.corrupt("schema nested too deeply"));
        }
        match json {
            Json::String(name) => self.named(name, ns),
            Json::Array(branches) => {
                if branches.is_empty() {
                    return Err(self.corrupt("empty union"));
                }
                let ids = branches
                    .iter()
                    .map(|b| self.node(b, ns, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                Ok(self.push(Node::Union(ids)))
            }
            Json::Object(obj) => match obj.get("type") {
                Some(Json::String(t)) => match t.as_str() {
                    "record" | "error" => self.record(obj, ns, depth),
                    "enum" => {
                        let id = self.push(Node::Enum);
                        self.define(obj, ns, id)?;
                        Ok(id)
                    }
                    "fixed" => {
                        let size = obj
                            .get("size")
                            .and_then(Json::as_u64)
                            .and_then(|s| usize::try_from(s).ok())
                            .ok_or_else(|| self.corrupt("fixed without a valid size"))?;
                        let id = self.push(Node::Fixed(size));
                        self.define(obj, ns, id)?;
                        Ok(id)
                    }
                    "array" => {
                        let items = obj
                            .get("items")
                            .ok_or_else(|| self.corrupt("array without items"))?;
                        let item = self.node(items, ns, depth + 1)?;
                        Ok(self.push(Node::Array(item)))
                    }
                    "map" => {
                        let values = obj
                            .get("values")
                            .ok_or_else(|| self.corrupt("map without values"))?;
                        let value = self.node(values, ns, depth + 1)?;
                        Ok(self.push(Node::Map(value)))
                    }
                    other => self.named(other, ns),
                },
                Some(inner @ (Json::Object(_) | Json::Array(_))) => self.node(inner, ns, depth + 1),
                _ => Err(self.corrupt("schema object without a valid \"type\"")),
            },
            _ => Err(self.corrupt(format_args!("unexpected schema JSON {json}"))),
        }
    }

    /// A primitive name or a reference to an already defined named type.
    fn named(&mut self, name: &str, ns: Option<&str>) -> Result<NodeId> {
        if let Some(id) = Parser::primitive(name) {
            return Ok(id);
        }
        let qualified = match ns {
            Some(ns) if !name.contains('.') && !ns.is_empty() => Some(format!("{ns}.{name}")),
            _ => None,
        };
        qualified
            .and_then(|q| self.names.get(&q).copied())
            .or_else(|| self.names.get(name).copied())
            .ok_or_else(|| self.corrupt(format_args!("unknown type {name:?}")))
    }

    /// Registers the full name of a named type; returns its namespace.
    fn define(
        &mut self,
        obj: &serde_json::Map<String, Json>,
        ns: Option<&str>,
        id: NodeId,
    ) -> Result<Option<String>> {
        let name = obj
            .get("name")
            .and_then(Json::as_str)
            .ok_or_else(|| self.corrupt("named type without a name"))?;
        let (full, own_ns) = match name.rsplit_once('.') {
            Some((space, _)) => (name.to_owned(), Some(space.to_owned())),
            None => {
                let space = obj.get("namespace").and_then(Json::as_str).or(ns);
                match space {
                    Some(s) if !s.is_empty() => (format!("{s}.{name}"), Some(s.to_owned())),
                    _ => (name.to_owned(), None),
                }
            }
        };
        if self.names.insert(full.clone(), id).is_some() {
            return Err(self.corrupt(format_args!("type {full:?} defined twice")));
        }
        Ok(own_ns)
    }

    fn record(
        &mut self,
        obj: &serde_json::Map<String, Json>,
        ns: Option<&str>,
        depth: usize,
    ) -> Result<NodeId> {
        // Register first so that fields may refer to the record itself.
        let id = self.push(Node::Record(Vec::new()));
        let own_ns = self.define(obj, ns, id)?;
        let fields = obj
            .get("fields")
            .and_then(Json::as_array)
            .ok_or_else(|| self.corrupt("record without fields"))?;
        let mut out = Vec::with_capacity(fields.len());
        for f in fields {
            let name = f
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| self.corrupt("record field without a name"))?;
            let ty = f
                .get("type")
                .ok_or_else(|| self.corrupt(format_args!("field {name:?} without a type")))?;
            let ty = self.node(ty, own_ns.as_deref(), depth + 1)?;
            out.push((name.to_owned(), ty));
        }
        self.nodes[id] = Node::Record(out);
        Ok(id)
    }
}
