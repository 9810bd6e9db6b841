//! Where each value of a JSON text sits: byte spans of objects, members, arrays and
//! items, so an edit can cut or insert text at a value's edges and leave every other byte
//! (number spellings, escapes, spacing, duplicate keys) as the user wrote it.
//!
//! The text is one serde_json has already accepted ([`super::Settings::parse`]); this
//! reader only finds the edges, and gives up (`None`) on anything it does not expect
//! rather than guess.

/// One value and its span `start..end` in the text.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    /// A string, number, `true`, `false` or `null`.
    Scalar,
}

/// `"key": value` in an object: `start` is the key's opening quote, `key_end` just past
/// its closing one.
#[derive(Clone, Debug)]
pub(super) struct Member {
    /// The key decoded (`"hook\u0073"` is `hooks`).
    pub key: String,
    pub start: usize,
    pub key_end: usize,
    pub value: Node,
}

/// serde_json's own nesting limit: a text it accepted is never deeper.
const MAX_DEPTH: usize = 128;

/// The root value of `text` (leading and trailing whitespace outside it).
pub(super) fn parse(text: &str) -> Option<Node> {
    let mut reader = Reader {
        bytes: text.as_bytes(),
        text,
        at: 0,
    };
    reader.skip_ws();
    let root = reader.value(0)?;
    reader.skip_ws();
    (reader.at == reader.bytes.len()).then_some(root)
}

impl Node {
    /// Its members, when it is an object.
    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    /// Its items, when it is an array.
    pub fn items(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The value of the last member named `key` (the one JSON readers keep).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members()?
            .iter()
            .rev()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }

    /// The spans of its children (members or items), in order.
    pub fn child_spans(&self) -> Vec<(usize, usize)> {
        match &self.kind {
            Kind::Object(members) => members.iter().map(|m| (m.start, m.value.end)).collect(),
            Kind::Array(items) => items.iter().map(|i| (i.start, i.end)).collect(),
            Kind::Scalar => Vec::new(),
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Reader<'_> {
    fn skip_ws(&mut self) {
        while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.at;
        let kind = match self.bytes.get(self.at)? {
            b'{' => Kind::Object(self.object(depth)?),
            b'[' => Kind::Array(self.array(depth)?),
            b'"' => {
                self.string()?;
                Kind::Scalar
            }
            _ => {
                // A number or a literal: runs to the next delimiter.
                while self.bytes.get(self.at).is_some_and(|b| {
                    !matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    self.at += 1;
                }
                if self.at == start {
                    return None;
                }
                Kind::Scalar
            }
        };
        Some(Node {
            start,
            end: self.at,
            kind,
        })
    }

    /// Past a string's closing quote; the escapes are skipped, not decoded.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Vec<Member>> {
        self.eat(b'{')?;
        let mut members = Vec::new();
        self.skip_ws();
        if self.eat(b'}').is_some() {
            return Some(members);
        }
        loop {
            self.skip_ws();
            let start = self.at;
            self.string()?;
            let key_end = self.at;
            let key = serde_json::from_str(self.text.get(start..key_end)?).ok()?;
            self.skip_ws();
            self.eat(b':')?;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                start,
                key_end,
                value,
            });
            self.skip_ws();
            if self.eat(b'}').is_some() {
                return Some(members);
            }
            self.eat(b',')?;
        }
    }

    fn array(&mut self, depth: usize) -> Option<Vec<Node>> {
        self.eat(b'[')?;
        let mut items = Vec::new();
        self.skip_ws();
        if self.eat(b']').is_some() {
            return Some(items);
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            if self.eat(b']').is_some() {
                return Some(items);
            }
            self.eat(b',')?;
        }
    }
}
