//! Surface syntax: text → generic tree ([`ast`]) and back ([`fmt`]).

pub mod ast;
pub mod fmt;
pub mod parse;
mod recover;

pub use ast::{File, Stmt, Value, ValueKind};
pub use parse::parse;
