//! Typed table rows. Each data table is one struct whose fields are its columns, in order,
//! named as the header names them (units in the names: `queue_p99_s`); [`csv`] writes rows
//! of it, the header from the field names, so a column cannot be added to the rows without
//! its header or the other way round. Parquet files are converted from this CSV text
//! ([`super::columnar`]), so both come from the same struct.
//!
//! Cells are written as the tables always were: numbers by Rust's `Display` (shortest text
//! that reads back to the same value, no exponent: `0.5`, `1`, `120000`), text quoted only
//! when it must be ([`crate::csv::field`]), `None` as an empty cell. The header comes from
//! the type's `Default` value, so a table with no rows still has its header.

use serde::Serialize;
use serde::ser::{self, Impossible};
use std::fmt::{self, Display};

/// A text cell always in quotes, even empty (a column whose text is free-form, such as an
/// error message, reads the same whatever it holds).
#[derive(Serialize, Default)]
#[serde(rename = "Quoted")]
pub struct Quoted<'a>(pub &'a str);

/// The CSV text of `rows` under their header.
pub fn csv<R: Serialize + Default>(rows: impl IntoIterator<Item = R>) -> String {
    let mut out = Cells::header(&R::default()).join(",");
    out.push('\n');
    for r in rows {
        out.push_str(&Cells::of(&r).join(","));
        out.push('\n');
    }
    out
}

/// Why a row could not be written: a field of a kind a cell cannot hold (a list, a map, a
/// nested struct). A bug in a row type, found by the tests that write every table.
#[derive(Debug)]
pub struct Unsupported(String);

impl Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a table row cannot hold {}", self.0)
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: Display>(msg: T) -> Self {
        Unsupported(msg.to_string())
    }
}

/// A row's field names or cells, as serde visits its struct.
#[derive(Default)]
struct Cells {
    names: Vec<&'static str>,
    cells: Vec<String>,
}

impl Cells {
    fn header<R: Serialize>(r: &R) -> Vec<&'static str> {
        let mut c = Cells::default();
        r.serialize(&mut c).expect("a row type holds only cells");
        c.names
    }

    fn of<R: Serialize>(r: &R) -> Vec<String> {
        let mut c = Cells::default();
        r.serialize(&mut c).expect("a row type holds only cells");
        c.cells
    }
}

/// Only a struct is a row.
impl ser::Serializer for &mut Cells {
    type Ok = ();
    type Error = Unsupported;
    type SerializeSeq = Impossible<(), Unsupported>;
    type SerializeTuple = Impossible<(), Unsupported>;
    type SerializeTupleStruct = Impossible<(), Unsupported>;
    type SerializeTupleVariant = Impossible<(), Unsupported>;
    type SerializeMap = Impossible<(), Unsupported>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), Unsupported>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Unsupported> {
        Ok(self)
    }

    fn serialize_bool(self, _: bool) -> Result<(), Unsupported> {
        Err(Unsupported("a bare value".into()))
    }
    fn serialize_i8(self, _: i8) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_i16(self, _: i16) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_i32(self, _: i32) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_i64(self, _: i64) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_u8(self, _: u8) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_u16(self, _: u16) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_u32(self, _: u32) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_u64(self, _: u64) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_f32(self, _: f32) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_f64(self, _: f64) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_char(self, _: char) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_str(self, _: &str) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_none(self) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_unit(self) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Unsupported> {
        self.serialize_bool(false)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported("a list".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported("a map (`#[serde(flatten)]`)".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported("an enum with fields".into()))
    }
}

impl ser::SerializeStruct for &mut Cells {
    type Ok = ();
    type Error = Unsupported;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Unsupported> {
        self.names.push(key);
        self.cells.push(value.serialize(Cell { quote: false })?);
        Ok(())
    }

    fn end(self) -> Result<(), Unsupported> {
        Ok(())
    }
}

/// One value as its cell's text; `quote`: inside a [`Quoted`].
struct Cell {
    quote: bool,
}

fn shown<T: Display>(v: T) -> Result<String, Unsupported> {
    Ok(v.to_string())
}

impl ser::Serializer for Cell {
    type Ok = String;
    type Error = Unsupported;
    type SerializeSeq = Impossible<String, Unsupported>;
    type SerializeTuple = Impossible<String, Unsupported>;
    type SerializeTupleStruct = Impossible<String, Unsupported>;
    type SerializeTupleVariant = Impossible<String, Unsupported>;
    type SerializeMap = Impossible<String, Unsupported>;
    type SerializeStruct = Impossible<String, Unsupported>;
    type SerializeStructVariant = Impossible<String, Unsupported>;

    fn serialize_bool(self, v: bool) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_i8(self, v: i8) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_i16(self, v: i16) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_i32(self, v: i32) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_i64(self, v: i64) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_u8(self, v: u8) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_u16(self, v: u16) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_u32(self, v: u32) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_u64(self, v: u64) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_f32(self, v: f32) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_f64(self, v: f64) -> Result<String, Unsupported> {
        shown(v)
    }
    fn serialize_char(self, v: char) -> Result<String, Unsupported> {
        Ok(crate::csv::field(&v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<String, Unsupported> {
        Ok(if self.quote {
            crate::csv::quoted(v)
        } else {
            crate::csv::field(v)
        })
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, Unsupported> {
        Err(Unsupported("bytes".into()))
    }
    fn serialize_none(self) -> Result<String, Unsupported> {
        Ok(String::new())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, v: &T) -> Result<String, Unsupported> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, Unsupported> {
        Ok(String::new())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, Unsupported> {
        Ok(String::new())
    }
    /// An enum without fields: its (serde-renamed) variant name.
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, Unsupported> {
        Ok(crate::csv::field(variant))
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<String, Unsupported> {
        v.serialize(Cell {
            quote: self.quote || name == "Quoted",
        })
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Unsupported> {
        Err(Unsupported("an enum with fields".into()))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported("a list".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported("a tuple".into()))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported("a map".into()))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported("a nested struct".into()))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported("an enum with fields".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Default)]
    struct Row<'a> {
        name: &'a str,
        count: u64,
        secs: f64,
        share: Option<f64>,
        note: Quoted<'a>,
    }

    #[test]
    fn a_table_is_its_header_then_its_rows_as_display_writes_them() {
        let rows = [
            Row {
                name: "a,b",
                count: 3,
                secs: 1.0,
                share: Some(0.25),
                note: Quoted(""),
            },
            Row {
                name: "c",
                count: 0,
                secs: 1e-7,
                share: None,
                note: Quoted("said \"no\""),
            },
        ];
        assert_eq!(
            csv(rows),
            "name,count,secs,share,note\n\"a,b\",3,1,0.25,\"\"\nc,0,0.0000001,,\"said \"\"no\"\"\"\n"
        );
        assert_eq!(csv(Vec::<Row>::new()), "name,count,secs,share,note\n");
    }

    #[test]
    fn a_row_that_is_not_flat_is_refused() {
        #[derive(Serialize, Default)]
        struct Bad {
            list: Vec<u32>,
        }
        let mut c = Cells::default();
        let e = Bad { list: vec![1] }.serialize(&mut c).unwrap_err();
        assert_eq!(e.to_string(), "a table row cannot hold a list");
    }
}
