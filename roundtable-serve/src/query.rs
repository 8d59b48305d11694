//! A request's query string and path segments, percent-decoded, and the
//! paging parameters every list route takes.

use roundtable::ToolError;

/// The most items one page of a list route holds.
pub(crate) const MAX_LIMIT: u32 = 200;

/// The page size when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u32 = 50;

/// The decoded `name=value` pairs of a query string, in order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query(Vec<(String, String)>);

impl Query {
    /// Parse `a=1&b=x%20y` (`+` is a space). A pair whose bytes do not
    /// decode to UTF-8 is refused naming it.
    pub(crate) fn parse(raw: Option<&str>) -> Result<Query, ToolError> {
        let mut pairs = Vec::new();
        for pair in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = decode(&k.replace('+', " "))
                .ok_or_else(|| ToolError::invalid_argument("query", "not UTF-8 once decoded"))?;
            let v = decode(&v.replace('+', " "))
                .ok_or_else(|| ToolError::invalid_argument(&k, "not UTF-8 once decoded"))?;
            pairs.push((k, v));
        }
        Ok(Query(pairs))
    }

    /// The first value of `name`, when given and not empty.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// The value of `name` as a number, when given.
    pub(crate) fn number(&self, name: &str) -> Result<Option<u64>, ToolError> {
        self.get(name)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ToolError::invalid_argument(name, format!("{v:?} is not a number"))
                })
            })
            .transpose()
    }

    /// `limit` (1 to [`MAX_LIMIT`], default [`DEFAULT_LIMIT`]) and `cursor`.
    pub(crate) fn page(&self) -> Result<Page, ToolError> {
        let limit = match self.number("limit")? {
            None => DEFAULT_LIMIT,
            Some(n) if (1..=u64::from(MAX_LIMIT)).contains(&n) => n as u32,
            Some(n) => {
                return Err(ToolError::invalid_argument(
                    "limit",
                    format!("{n} is not between 1 and {MAX_LIMIT}"),
                ))
            }
        };
        Ok(Page {
            limit,
            cursor: self.get("cursor").map(str::to_owned),
        })
    }
}

/// One page's request: its size and where it starts.
#[derive(Debug, Clone)]
pub(crate) struct Page {
    /// At most this many items.
    pub(crate) limit: u32,
    /// The `next_cursor` of the page before, if any.
    pub(crate) cursor: Option<String>,
}

/// `s` with its `%XX` escapes decoded; `None` when the result is not
/// UTF-8. A `%` not followed by two hex digits stays as it is.
pub(crate) fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// `s` hex-encoded (an opaque cursor made of a key).
pub(crate) fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// The key an opaque cursor made by [`hex`] holds, if it is one.
pub(crate) fn unhex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode_and_pages_are_bounded() {
        let q = Query::parse(Some("status=open&author=a%20b&x=1+2&limit=20&cursor=")).expect("q");
        assert_eq!(q.get("status"), Some("open"));
        assert_eq!(q.get("author"), Some("a b"));
        assert_eq!(q.get("x"), Some("1 2"));
        assert_eq!(q.get("cursor"), None);
        assert_eq!(q.page().expect("page").limit, 20);
        assert_eq!(Query::parse(None).expect("q").page().expect("p").limit, 50);
        for bad in ["limit=0", "limit=201", "limit=x"] {
            let e = Query::parse(Some(bad)).expect("q").page().expect_err(bad);
            assert_eq!(e.code(), roundtable::ErrorCode::InvalidArgument);
        }
        assert!(Query::parse(Some("a=%ff")).is_err());
        assert_eq!(decode("100%"), Some("100%".to_owned()));
        assert_eq!(decode("%4"), Some("%4".to_owned()));
        assert_eq!(unhex(&hex("src/é.rs")), Some("src/é.rs".to_owned()));
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("abc"), None);
    }
}
