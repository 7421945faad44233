//! Canonical JSON written straight from any `Serialize` value or JSON text,
//! without building a `serde_json::Value` tree first.
//!
//! A tree of a large artifact costs several times its text (every string,
//! map and vector allocated on its own); building one only to print it in
//! sorted order made a kernel's output, and the host's reading of it, the
//! largest memory cost of a big run. Here the value is written once into
//! one buffer by `serde_json`'s serializer; an object's members are noted
//! as they are written and, when the object ends, put in key order within
//! the buffer if they were not already (a struct's fields come in
//! declaration order, a `BTreeMap`'s already sorted). The bytes are the
//! same as [`crate::hash::canonical_bytes`] of the value's tree.

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};
use std::cell::RefCell;
use std::io;
use std::rc::Rc;

/// The canonical JSON bytes of `value`, written without a `Value` tree.
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Finding { line: u32, kind: &'static str }
/// let bytes = koas_kernel_api::hash::to_canonical_vec(&Finding { line: 3, kind: "x" }).unwrap();
/// assert_eq!(bytes, br#"{"kind":"x","line":3}"#);
/// ```
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let buffer = Shared::default();
    let mut serializer = serde_json::Serializer::with_formatter(
        buffer.clone(),
        Canonical {
            buffer: buffer.clone(),
            objects: Vec::new(),
        },
    );
    value.serialize(&mut serializer)?;
    drop(serializer);
    Ok(buffer.take())
}

/// The canonical form of any JSON text: the same bytes as parsing it into a
/// `Value` and writing [`crate::hash::canonical_bytes`], without the tree.
///
/// ```
/// let bytes = koas_kernel_api::hash::canonicalize(br#"{ "b": [1.0, {"d": 1, "c": 2}], "a": "x" }"#).unwrap();
/// assert_eq!(bytes, br#"{"a":"x","b":[1.0,{"c":2,"d":1}]}"#);
/// ```
pub fn canonicalize(text: &[u8]) -> serde_json::Result<Vec<u8>> {
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let bytes = to_canonical_vec(&serde_transcode::Transcoder::new(&mut deserializer))?;
    // Trailing characters after the value make the text invalid, as they
    // would for `serde_json::from_slice`.
    deserializer.end()?;
    Ok(bytes)
}

/// The one buffer both the serializer (as its writer) and the formatter
/// (to reorder members) reach. Never borrowed across a call.
#[derive(Clone, Default)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Shared {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.borrow_mut())
    }

    fn len(&self) -> usize {
        self.0.borrow().len()
    }
}

impl io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One member of an object being written: where it starts (its key's
/// opening quote), where its key ends and where its value ends.
#[derive(Clone, Copy)]
struct Member {
    start: usize,
    key_end: usize,
    end: usize,
}

/// An object being written: where its members start (after `{`) and the
/// members so far.
#[derive(Default)]
struct Open {
    start: usize,
    members: Vec<Member>,
    pending: Option<(usize, usize)>,
}

struct Canonical {
    buffer: Shared,
    objects: Vec<Open>,
}

impl Canonical {
    /// Puts the members of the object that just ended in key order (by the
    /// key's bytes), keeping the last of equal keys, as a `Value` map
    /// would.
    fn order(&mut self, open: Open) {
        let mut buffer = self.buffer.0.borrow_mut();
        let text = &buffer[..];
        let key = |m: &Member| KeyText(&text[m.start..m.key_end]);
        let in_order = open
            .members
            .windows(2)
            .all(|w| key(&w[0]).cmp_raw(&key(&w[1])) == std::cmp::Ordering::Less);
        if in_order {
            return;
        }
        let mut members = open.members;
        // Stable: equal keys keep their order, and the last one wins.
        members.sort_by(|a, b| key(a).cmp_raw(&key(b)));
        let mut kept: Vec<Member> = Vec::with_capacity(members.len());
        for m in members {
            match kept.last_mut() {
                Some(last) if key(last).cmp_raw(&key(&m)) == std::cmp::Ordering::Equal => *last = m,
                _ => kept.push(m),
            }
        }
        let mut ordered = Vec::with_capacity(buffer.len() - open.start);
        for (i, m) in kept.iter().enumerate() {
            if i > 0 {
                ordered.push(b',');
            }
            ordered.extend_from_slice(&buffer[m.start..m.end]);
        }
        buffer.truncate(open.start);
        buffer.extend_from_slice(&ordered);
    }
}

/// A member's key as written: a JSON string literal, quotes included.
struct KeyText<'a>(&'a [u8]);

impl KeyText<'_> {
    /// Compares the keys' strings by their bytes. Without escapes the
    /// literal's inside is the string; with one, it is decoded first.
    fn cmp_raw(&self, other: &KeyText<'_>) -> std::cmp::Ordering {
        let (a, b) = (self.inside(), other.inside());
        if !a.contains(&b'\\') && !b.contains(&b'\\') {
            return a.cmp(b);
        }
        self.decoded().cmp(&other.decoded())
    }

    /// The literal without its quotes.
    fn inside(&self) -> &[u8] {
        self.0
            .get(1..self.0.len().saturating_sub(1))
            .unwrap_or_default()
    }

    /// The key's string, its escapes decoded.
    fn decoded(&self) -> Vec<u8> {
        serde_json::from_slice::<String>(self.0)
            .map(String::into_bytes)
            .unwrap_or_else(|_| self.inside().to_vec())
    }
}

impl Formatter for Canonical {
    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        // A `Value` keeps every float as an f64: print it as that f64.
        CompactFormatter.write_f64(writer, f64::from(value))
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b"{")?;
        self.objects.push(Open {
            start: self.buffer.len(),
            ..Open::default()
        });
        Ok(())
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        let at = self.buffer.len();
        if let Some(open) = self.objects.last_mut() {
            open.pending = Some((at, at));
        }
        Ok(())
    }

    fn end_object_key<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        let at = self.buffer.len();
        if let Some(Open {
            pending: Some((_, key_end)),
            ..
        }) = self.objects.last_mut()
        {
            *key_end = at;
        }
        Ok(())
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b":")
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        let end = self.buffer.len();
        if let Some(open) = self.objects.last_mut() {
            if let Some((start, key_end)) = open.pending.take() {
                open.members.push(Member {
                    start,
                    key_end,
                    end,
                });
            }
        }
        Ok(())
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        if let Some(open) = self.objects.pop() {
            if open.members.len() > 1 {
                self.order(open);
            }
        }
        writer.write_all(b"}")
    }

    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Embedded raw JSON is canonicalized like the rest.
        let bytes = canonicalize(fragment.as_bytes()).map_err(io::Error::other)?;
        writer.write_all(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::canonical_bytes;
    use serde_json::{json, Value};
    use std::collections::{BTreeMap, HashMap};

    #[derive(Serialize)]
    struct Outcome {
        zeta: Vec<Entry>,
        alpha: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        ratio: f32,
        map: HashMap<String, i64>,
        #[serde(flatten)]
        extra: BTreeMap<String, Value>,
    }

    #[derive(Serialize)]
    struct Entry {
        b: (),
        note: String,
        a: i64,
    }

    #[test]
    fn a_struct_is_written_as_the_canonical_bytes_of_its_tree() {
        let value = Outcome {
            zeta: (0..20)
                .map(|i| Entry {
                    b: (),
                    note: format!("é \"{i}\"\n\u{1}"),
                    a: -i,
                })
                .collect(),
            alpha: None,
            skipped: None,
            ratio: 0.1,
            map: (0..30).map(|i| (format!("k{i}"), i)).collect(),
            extra: [("beta".to_string(), json!({"y": 1, "x": [true, null]}))].into(),
        };
        let tree = serde_json::to_value(&value).expect("tree");
        assert_eq!(
            String::from_utf8(to_canonical_vec(&value).expect("canonical")).expect("utf8"),
            String::from_utf8(canonical_bytes(&tree)).expect("utf8")
        );
    }

    #[test]
    fn keys_are_ordered_by_their_strings_not_their_escapes_and_the_last_duplicate_wins() {
        // `"\"` escapes as `\"` (0x5C) but sorts as `"` (0x22), before `a`.
        let pairs = vec![("a", 1), ("\"", 2), ("\u{7f}", 3), ("a", 4), ("\n", 5)];
        struct Pairs(Vec<(&'static str, i32)>);
        impl Serialize for Pairs {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(None)?;
                for (k, v) in &self.0 {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
        let bytes = to_canonical_vec(&Pairs(pairs)).expect("canonical");
        let tree = json!({"a": 4, "\"": 2, "\u{7f}": 3, "\n": 5});
        assert_eq!(bytes, canonical_bytes(&tree));
        assert_eq!(
            String::from_utf8(bytes).expect("utf8"),
            "{\"\\n\":5,\"\\\"\":2,\"a\":4,\"\u{7f}\":3}"
        );
    }

    #[test]
    fn any_json_text_is_canonicalized_like_its_parsed_tree() {
        let text = br#" { "z" : [ 1 , 2.50, -0.0, 1e3, 18446744073709551615, -9223372036854775808, 123456789012345678901234567890 ],
            "a" : { "y" : "\u00e9\/", "x" : null } , "m": {} , "n": [] } "#;
        let tree: Value = serde_json::from_slice(text).expect("parse");
        assert_eq!(
            canonicalize(text).expect("canonicalize"),
            canonical_bytes(&tree)
        );
        assert!(canonicalize(b"{\"a\":1} x").is_err(), "trailing characters");
        assert!(canonicalize(b"{\"a\":").is_err(), "cut text");
    }

    #[test]
    fn raw_json_inside_a_value_is_canonicalized_too() {
        let raw = serde_json::value::RawValue::from_string(r#"{"b": 1, "a": 2}"#.to_string())
            .expect("raw");
        let bytes = to_canonical_vec(&json!({"k": 1})).expect("plain");
        assert_eq!(bytes, br#"{"k":1}"#);
        let wrapped: BTreeMap<&str, &serde_json::value::RawValue> = [("r", &*raw)].into();
        assert_eq!(
            to_canonical_vec(&wrapped).expect("raw"),
            br#"{"r":{"a":2,"b":1}}"#
        );
    }

    use crate::hash::tests::json_value;
    use proptest::prelude::*;

    proptest! {
        /// Written from the value, from its pretty text or from its text
        /// with members reversed, the bytes are those of the tree walk.
        /// Floats included: the one place the two could drift.
        #[test]
        fn every_route_gives_the_tree_walks_bytes(v in json_value(true)) {
            let expected = canonical_bytes(&v);
            prop_assert_eq!(&to_canonical_vec(&v).expect("value"), &expected);
            // From text, compare with the tree parsed from the same text:
            // serde_json's float parsing may differ from the value in the
            // last digit, whatever reads the text.
            let of_text = |text: &[u8]| {
                canonical_bytes(&serde_json::from_slice::<Value>(text).expect("parse"))
            };
            let pretty = serde_json::to_vec_pretty(&v).expect("pretty");
            prop_assert_eq!(&canonicalize(&pretty).expect("text"), &of_text(&pretty));
            let reversed = reverse_members(&v);
            prop_assert_eq!(
                &canonicalize(reversed.as_bytes()).expect("reversed"),
                &of_text(reversed.as_bytes())
            );
        }
    }

    /// The JSON text of `v` with every object's members written in reverse
    /// order (keys sorted descending).
    fn reverse_members(v: &Value) -> String {
        match v {
            Value::Object(map) => {
                let members: Vec<String> = map
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("{}: {}", json!(k), reverse_members(v)))
                    .collect();
                format!("{{ {} }}", members.join(" , "))
            }
            Value::Array(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(reverse_members)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            other => other.to_string(),
        }
    }
}
