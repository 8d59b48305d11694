//! What a transport does with the bytes of one incoming message before the
//! SDK sees it: the message size limit, and one JSON-RPC error for input
//! that is too large, not JSON, not a JSON-RPC message, or an `initialize`
//! without its `protocolVersion`. Pure functions; the transports (stdio,
//! HTTP) write what they return.

use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use serde_json::{json, Value};

/// JSON-RPC's code for input that is not JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request, and for a message
/// over the transport's size limit.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for a request whose parameters are wrong.
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// How many bytes of an oversized message are kept to find its `id`.
pub(crate) const ID_PREFIX_BYTES: usize = 4096;

/// The largest message (one stdio line, one HTTP request body) a transport
/// takes, for an engine whose patch limit is `max_patch_bytes`.
///
/// A patch travels as a JSON string, where one byte can take six (`\u0001`;
/// Python's `json.dumps` writes every non-ASCII character as `\uXXXX`), so
/// the limit is six times the patch limit plus 1 MiB for the rest of the
/// message: every patch the engine takes reaches it, however its client
/// escapes it, and a larger one gets the engine's own `too_large` refusal.
/// With the default 16 MiB patch limit this is 97 MiB.
pub fn max_message_bytes(max_patch_bytes: usize) -> usize {
    max_patch_bytes.saturating_mul(6).saturating_add(1 << 20)
}

/// What to do with one incoming message.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A JSON-RPC message for the SDK.
    Message(Box<ClientJsonRpcMessage>),
    /// Not one: answer with this JSON-RPC error response and go on.
    Refused(Refusal),
    /// A notification the SDK does not know: JSON-RPC never answers one.
    Ignored,
}

/// A JSON-RPC error response for input the SDK never saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// The request's id when it could be read, else `null`.
    pub id: Value,
    /// The JSON-RPC error code.
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
    /// Structured details (`{"limit": N}` for a message too large).
    pub data: Option<Value>,
}

impl Refusal {
    /// The response as one JSON text (no newline).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        json!({"jsonrpc": "2.0", "id": self.id, "error": error})
            .to_string()
            .into_bytes()
    }
}

/// Decode one message (a stdio line without its newline, an HTTP body).
pub(crate) fn decode(bytes: &[u8]) -> Decoded {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let error = match serde_json::from_slice::<ClientJsonRpcMessage>(bytes) {
        Ok(ClientJsonRpcMessage::Request(request)) => {
            // The SDK takes an `initialize` it cannot read as a request of
            // a method it does not know.
            if let ClientRequest::CustomRequest(custom) = &request.request {
                if custom.method == "initialize" {
                    let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
                    return Decoded::Refused(no_protocol_version(id));
                }
            }
            return Decoded::Message(Box::new(ClientJsonRpcMessage::Request(request)));
        }
        Ok(message) => return Decoded::Message(Box::new(message)),
        Err(e) => e,
    };
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => value,
        Err(e) => {
            return Decoded::Refused(Refusal {
                id: Value::Null,
                code: PARSE_ERROR,
                message: format!("parse error: the message is not JSON ({e})"),
                data: None,
            })
        }
    };
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_i64())
        .cloned();
    let method = value.get("method").and_then(Value::as_str);
    if id.is_none() && method.is_some() {
        return Decoded::Ignored;
    }
    let id = id.unwrap_or(Value::Null);
    if method == Some("initialize")
        && value
            .pointer("/params/protocolVersion")
            .is_none_or(|v| !v.is_string())
    {
        return Decoded::Refused(no_protocol_version(id));
    }
    Decoded::Refused(Refusal {
        id,
        code: INVALID_REQUEST,
        message: format!("invalid request: not a JSON-RPC 2.0 message MCP defines ({error})"),
        data: None,
    })
}

/// The one error for an `initialize` without a readable `protocolVersion`.
fn no_protocol_version(id: Value) -> Refusal {
    Refusal {
        id,
        code: INVALID_PARAMS,
        message: "initialize needs params.protocolVersion, the protocol revision the client \
                  speaks (e.g. \"2025-11-25\")"
            .into(),
        data: Some(json!({"field": "params.protocolVersion"})),
    }
}

/// The refusal of a message over `limit` bytes, of which `prefix` is the
/// start: its id is kept when the prefix shows it.
pub(crate) fn oversized(prefix: &[u8], limit: usize, transport: &str) -> Refusal {
    Refusal {
        id: id_in_prefix(prefix).unwrap_or(Value::Null),
        code: INVALID_REQUEST,
        message: format!("the message exceeds the {transport} message size limit of {limit} bytes"),
        data: Some(json!({"limit": limit, "transport": transport})),
    }
}

/// The top-level `"id"` (a number or a string) of a JSON object of which
/// `prefix` is the start, when it appears in it.
fn id_in_prefix(prefix: &[u8]) -> Option<Value> {
    let mut s = Scan { b: prefix, i: 0 };
    s.ws();
    s.eat(b'{')?;
    loop {
        s.ws();
        let key = s.string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        let start = s.i;
        s.value()?;
        if key == b"\"id\"" {
            let id: Value = serde_json::from_slice(&prefix[start..s.i]).ok()?;
            return (id.is_string() || id.is_i64()).then_some(id);
        }
        s.ws();
        s.eat(b',')?;
    }
}

/// A cursor over the start of a JSON text; every step is `None` when the
/// text ends or is not JSON there.
struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// A string, quotes included, as its raw bytes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    let b: &'a [u8] = self.b;
                    return b.get(start..self.i);
                }
                b'\\' => self.i += 2,
                _ => self.i += 1,
            }
        }
    }

    /// Skip one value of any kind.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while matches!(self.peek()?, b'-' | b'+' | b'.' | b'0'..=b'9' | b'a'..=b'z' | b'E')
                {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(bytes: &[u8]) -> Refusal {
        match decode(bytes) {
            Decoded::Refused(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_limit_fits_the_engines_patch_limit_escaped_six_times() {
        assert_eq!(max_message_bytes(16 << 20), 97 << 20);
        assert!(max_message_bytes(usize::MAX) == usize::MAX);
    }

    #[test]
    fn a_message_decodes_and_bad_input_is_one_json_rpc_error() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(decode(ok), Decoded::Message(_)));
        let r = refusal(b"{not json");
        assert_eq!((r.code, &r.id), (PARSE_ERROR, &Value::Null));
        let r = refusal(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":7}"#);
        assert_eq!((r.code, &r.id), (INVALID_REQUEST, &json!("a")));
        let r = refusal(br#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#);
        assert_eq!((r.code, &r.id), (INVALID_PARAMS, &json!(3)));
        assert!(r.message.contains("protocolVersion"), "{}", r.message);
        let r = refusal(br#"{"jsonrpc":"2.0","id":4,"method":"initialize"}"#);
        assert_eq!((r.code, &r.id), (INVALID_PARAMS, &json!(4)));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":1}"#),
            Decoded::Ignored
        ));
        let bytes = r.to_bytes();
        let v: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(v["error"]["code"], INVALID_PARAMS);
        assert_eq!(v["id"], 4);
    }

    #[test]
    fn an_oversized_message_keeps_its_id_when_the_prefix_shows_it() {
        for (prefix, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"x":"#[..],
                json!(7),
            ),
            (
                br#" { "method" : "a\"}" , "params": {"a":[1,{"b":"}"}]}, "id" : "q-1" ,"#,
                json!("q-1"),
            ),
            (
                br#"{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"patch":"xx"#,
                Value::Null,
            ),
            (br#"{"jsonrpc":"2.0","id":{"x":1},"#, Value::Null),
            (b"[1,2", Value::Null),
            (b"", Value::Null),
        ] {
            let r = oversized(prefix, 10, "stdio");
            assert_eq!(r.id, id, "{}", String::from_utf8_lossy(prefix));
            assert_eq!(r.code, INVALID_REQUEST);
            assert!(r.message.contains("stdio message size limit of 10 bytes"));
        }
    }
}
