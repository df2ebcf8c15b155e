//! A `Serialize` view made into a `serde_json::Value` with every number kept as written.
//!
//! `serde_json::to_value` reads each number it is given back from its text, which respells
//! some (`1E5` becomes `1e+5`); a call's parameters keep the model's spelling in every output.
//! This serializer takes a number's text as it is (serde_json's `arbitrary_precision` hands a
//! `Number` over as a struct holding its text), so a value built from a view is the value its
//! JSON text reads as, and the views stay the one encoding of each output type.

use serde::ser::{self, Impossible, Serialize};
use serde_json::{Map, Number, Value};

/// How serde_json (with `arbitrary_precision`) names the struct that carries a number's text.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

type Error = serde_json::Error;

/// `value` as a `Value`, numbers as written.
pub(crate) fn to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    // The views serialize only what this serializer takes: this cannot fail.
    value.serialize(ValueSerializer).unwrap_or_default()
}

fn unsupported() -> Error {
    ser::Error::custom("not a JSON value")
}

struct ValueSerializer;

impl ser::Serializer for ValueSerializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Impossible<Value, Error>;
    type SerializeTupleVariant = Impossible<Value, Error>;
    type SerializeMap = Object;
    type SerializeStruct = Struct;
    type SerializeStructVariant = Impossible<Value, Error>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Ok(v.into())
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::String(v.into()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Value, Error> {
        Err(unsupported())
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Value, Error> {
        Err(unsupported())
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        Ok(Seq(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(unsupported())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(unsupported())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object, Error> {
        Ok(Object {
            map: Map::new(),
            key: None,
        })
    }
    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Struct, Error> {
        Ok(if name == NUMBER_TOKEN {
            Struct::Number(None)
        } else {
            Struct::Object(Map::new())
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(unsupported())
    }
}

struct Seq(Vec<Value>);

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.push(value.serialize(ValueSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.0))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

struct Object {
    map: Map<String, Value>,
    key: Option<String>,
}

impl ser::SerializeMap for Object {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match key.serialize(ValueSerializer)? {
            Value::String(key) => {
                self.key = Some(key);
                Ok(())
            }
            _ => Err(unsupported()),
        }
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(unsupported)?;
        self.map.insert(key, value.serialize(ValueSerializer)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.map))
    }
}

/// A struct: serde_json's number (its text) or any other, made an object.
enum Struct {
    Number(Option<Number>),
    Object(Map<String, Value>),
}

impl ser::SerializeStruct for Struct {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            Struct::Number(number) => match value.serialize(ValueSerializer)? {
                // The text serde_json holds is a number it read or wrote: kept as it is.
                Value::String(text) => *number = Some(Number::from_string_unchecked(text)),
                _ => return Err(unsupported()),
            },
            Struct::Object(map) => {
                map.insert(key.to_owned(), value.serialize(ValueSerializer)?);
            }
        }
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        match self {
            Struct::Number(number) => number.map(Value::Number).ok_or_else(unsupported),
            Struct::Object(map) => Ok(Value::Object(map)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value made from its own `Serialize` is the value, numbers spelled as they were.
    #[test]
    fn a_value_comes_back_as_it_was() {
        let text = r#"{"n":1E5,"big":123456789012345678901234567890,"x":0.10,"s":"a\u0000","l":[true,null,-0,{"k":[]}]}"#;
        let value = crate::exact::parse(text, 100).unwrap();
        let made = to_value(&value);
        assert_eq!(made, value);
        assert_eq!(
            serde_json::to_string(&made).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
        assert!(serde_json::to_string(&made).unwrap().contains(r#""n":1E5"#));
    }
}
