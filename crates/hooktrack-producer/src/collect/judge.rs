//! Judging a request, without a socket: bytes, the token and the limits in, a verdict
//! out. The exchange's code ([`super::request`], [`super::accept`]) only moves bytes and
//! does what the verdict says.
//!
//! Heads are parsed by `httparse` and then held to the collector's stricter rules, where
//! leniency would let two readers of one message disagree: a head over
//! [`MAX_HEAD_BYTES`] is refused however it arrives, every line ends with CRLF, the head
//! is UTF-8, `Content-Length` is digits only and said once (or the same each time), and
//! no `Transfer-Encoding` is taken.

use std::ops::Range;

use hooktrack_core::agent::Agent;
use hooktrack_core::delivery::Delivery;
use hooktrack_core::diagnostics::error_chain;
use hooktrack_core::envelope::Via;
use hooktrack_core::row::{LineError, MAX_LINE_BYTES, parse_line};
use hooktrack_core::time::Timestamp;

use super::auth;
use crate::http::{MAX_HEAD_BYTES, parse_content_length};

/// Most header fields in a head (`httparse` parses into a fixed array): an emitter sends
/// five, curl a few more.
const MAX_HEADERS: usize = 64;

/// What requests are held to, and what a delivery gets from the collector.
#[derive(Clone)]
pub(super) struct Rules {
    pub token: Vec<u8>,
    pub max_body: usize,
    /// A delivery's provider when its body names no agent.
    pub provider: Agent,
    /// Every row's generation.
    pub generation: u64,
}

/// What to answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Reply {
    pub status: u16,
    pub body: String,
    pub extra_headers: &'static str,
    /// Unread request bytes to discard before closing (a lingering close, so the client
    /// reads our answer instead of a reset).
    pub unread: usize,
}

impl Reply {
    pub fn new(status: u16, body: String) -> Self {
        Self {
            status,
            body,
            extra_headers: "",
            unread: 0,
        }
    }

    pub fn error(status: u16, message: &str) -> Self {
        Self::new(status, serde_json::json!({ "error": message }).to_string())
    }

    fn unread(mut self, unread: usize) -> Self {
        self.unread = unread;
        self
    }
}

/// What a request's head says.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Head {
    /// Not wholly arrived.
    Partial,
    /// Answered without a body (refused, or `GET /health`); `authenticated` when the
    /// token was presented before the refusal.
    Answer { reply: Reply, authenticated: bool },
    /// An authenticated `POST /events` whose body is `body` of the request's bytes (maybe
    /// not arrived yet); `expect_continue` when the client waits for `100 Continue`
    /// before sending it.
    Body {
        body: Range<usize>,
        expect_continue: bool,
    },
}

/// What a whole request comes to.
#[derive(Debug)]
pub(super) enum Verdict<'a> {
    /// Not wholly arrived: its head, or the body its head declares.
    Partial,
    /// Answered without writing anything.
    Answer(Reply),
    /// An authenticated delivery to write.
    Deliver(Delivery<'a>),
}

/// Judges the bytes of one request as far as they have arrived.
pub(super) fn judge<'a>(request: &'a [u8], rules: &Rules) -> Verdict<'a> {
    match head(request, rules) {
        Head::Partial => Verdict::Partial,
        Head::Answer { reply, .. } => Verdict::Answer(reply),
        Head::Body { body, .. } => match request.get(body) {
            None => Verdict::Partial,
            Some(body) => match self::body(body, rules) {
                Ok(delivery) => Verdict::Deliver(delivery),
                Err(reply) => Verdict::Answer(reply),
            },
        },
    }
}

/// Judges a request's head, from the first bytes of the request.
pub(super) fn head(buf: &[u8], rules: &Rules) -> Head {
    let too_large = || Head::Answer {
        reply: Reply::error(431, "request head too large"),
        authenticated: false,
    };
    let bad = |message: &str| Head::Answer {
        reply: Reply::error(400, message),
        authenticated: false,
    };
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let head_len = match request.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD_BYTES + 4 => return too_large(),
        Ok(httparse::Status::Partial) => return Head::Partial,
        Err(httparse::Error::TooManyHeaders) => return too_large(),
        Err(e) => return bad(&format!("malformed request head: {e}")),
    };
    // `httparse` ends a head at a bare LF as well; ours end at CRLF CRLF.
    let head_bytes = buf.get(..head_len).unwrap_or_default();
    if !head_bytes.ends_with(b"\r\n\r\n") || bare_lf(head_bytes) {
        if head_len > MAX_HEAD_BYTES + 4 {
            return too_large();
        }
        return bad("malformed request head: a line does not end with CRLF");
    }
    if head_len - 4 > MAX_HEAD_BYTES {
        return too_large();
    }
    if std::str::from_utf8(head_bytes).is_err() {
        return bad("request head is not UTF-8");
    }
    let (Some(method), Some(target)) = (request.method, request.path) else {
        return bad("malformed request line");
    };
    let fields = request.headers;
    // A NUL (or another control byte but HTAB) in a value is no HTTP (RFC 9110 5.5) and
    // could cut the value short for a reader in C: refused, whatever the field.
    if fields.iter().any(|f| {
        f.value
            .iter()
            .any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f)
    }) {
        return bad("malformed request head: a control byte in a header value");
    }
    // Two credentials leave the question of which one was checked: refused outright.
    if fields
        .iter()
        .filter(|f| f.name.eq_ignore_ascii_case("authorization"))
        .count()
        > 1
    {
        return bad("more than one Authorization header");
    }
    let path = target.split('?').next().unwrap_or(target);
    let declared = content_length(fields);
    let already = buf.len() - head_len;
    let unread_after = |len: Option<usize>| len.unwrap_or(0).saturating_sub(already);
    let refuse = |reply: Reply| Head::Answer {
        reply: reply.unread(unread_after(declared.ok().flatten())),
        authenticated: false,
    };
    match (method, path) {
        ("GET", "/health") => {
            return Head::Answer {
                reply: Reply::new(
                    200,
                    serde_json::json!({"status": "running", "generation": rules.generation})
                        .to_string(),
                ),
                authenticated: false,
            };
        }
        (_, "/events") if method != "POST" => return refuse(Reply::error(405, "use POST")),
        (_, "/events") => {}
        _ => return refuse(Reply::error(404, "no such path")),
    }
    // Authenticate before looking at the body.
    if !auth::presents(value(fields, "authorization"), &rules.token) {
        let mut reply = Reply::error(401, "missing or wrong bearer token");
        reply.extra_headers = auth::CHALLENGE;
        return refuse(reply);
    }
    let refuse = |reply: Reply| Head::Answer {
        reply,
        authenticated: true,
    };
    if value(fields, "transfer-encoding").is_some() {
        return refuse(Reply::error(
            411,
            "send a Content-Length; no transfer encoding",
        ));
    }
    let length = match declared {
        Ok(Some(n)) => n,
        Ok(None) => return refuse(Reply::error(411, "Content-Length required")),
        Err(()) => return refuse(Reply::error(400, "bad Content-Length")),
    };
    if length > rules.max_body {
        let reply = Reply::error(
            413,
            &format!(
                "body of {length} bytes is over the {}-byte limit",
                rules.max_body
            ),
        );
        return refuse(reply.unread(unread_after(Some(length))));
    }
    // curl sends `Expect: 100-continue` for larger bodies and waits a second for it.
    let expect_continue = already < length
        && value(fields, "expect").is_some_and(|v| v.eq_ignore_ascii_case(b"100-continue"));
    Head::Body {
        body: head_len..head_len + length,
        expect_continue,
    }
}

/// Judges a body: a delivery, or a 400 saying why not.
pub(super) fn body<'a>(body: &'a [u8], rules: &Rules) -> Result<Delivery<'a>, Reply> {
    Delivery::parse(body, rules.provider, rules.generation)
        .map_err(|e| Reply::error(400, &error_chain(&e)))
}

/// The row the collector writes for `delivery`, or why it is refused: 200 means "on disk
/// and read", so a row the reader would skip is answered 400 (413 over the line limit)
/// and never written.
pub(super) fn row(
    delivery: &Delivery<'_>,
    sequence: u64,
    received_at: Timestamp,
) -> Result<Vec<u8>, Reply> {
    let row = delivery
        .envelope(Via::Http, Some(sequence), received_at)
        .render();
    let line = row.strip_suffix(b"\n").unwrap_or(&row);
    match parse_line(line) {
        Ok(_) => Ok(row),
        Err(e @ LineError::Oversized { .. }) => Err(Reply::error(
            413,
            &format!("the row would be over the {MAX_LINE_BYTES}-byte line limit: {e}"),
        )),
        Err(e) => Err(Reply::error(
            400,
            &format!("the reader would skip this row: {e}"),
        )),
    }
}

/// `Ok(None)` when absent; `Err` when malformed or contradictory.
fn content_length(fields: &[httparse::Header<'_>]) -> Result<Option<usize>, ()> {
    let mut found: Option<usize> = None;
    for field in fields {
        if !field.name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        let text = std::str::from_utf8(field.value.trim_ascii()).map_err(|_| ())?;
        let n = parse_content_length(text).ok_or(())?;
        if found.is_some_and(|f| f != n) {
            return Err(());
        }
        found = Some(n);
    }
    Ok(found)
}

/// The value of the first field called `name`, without surrounding whitespace.
fn value<'h>(fields: &[httparse::Header<'h>], name: &str) -> Option<&'h [u8]> {
    fields
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
        .map(|f| f.value.trim_ascii())
}

/// A LF not preceded by CR.
fn bare_lf(head: &[u8]) -> bool {
    head.iter()
        .enumerate()
        .any(|(i, &b)| b == b'\n' && (i == 0 || head.get(i - 1) != Some(&b'\r')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Rules {
        Rules {
            token: b"t".to_vec(),
            max_body: 100,
            provider: Agent::ASSUMED,
            generation: 7,
        }
    }

    fn post(extra: &str, body: &str) -> Vec<u8> {
        format!(
            "POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    fn status(verdict: &Verdict<'_>) -> Option<u16> {
        match verdict {
            Verdict::Answer(reply) => Some(reply.status),
            _ => None,
        }
    }

    #[test]
    fn a_request_is_judged_only_with_its_whole_body_or_a_refusal_in_hand() {
        let whole = post("", r#"{"payload":{"hook_event_name":"Stop"}}"#);
        assert!(matches!(judge(&whole, &rules()), Verdict::Deliver(_)));
        assert!(matches!(
            judge(&whole[..whole.len() - 1], &rules()),
            Verdict::Partial
        ));
        assert!(matches!(judge(&whole[..20], &rules()), Verdict::Partial));
        assert!(matches!(judge(b"", &rules()), Verdict::Partial));
        // No body declared: the head is the request.
        let health = judge(b"GET /health HTTP/1.1\r\n\r\n", &rules());
        assert_eq!(status(&health), Some(200));
        // Refused without reading on: a bad length, a head past the limit.
        let plus = judge(
            b"POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: +5\r\n\r\n",
            &rules(),
        );
        assert_eq!(status(&plus), Some(400));
        let long = format!("POST /events HTTP/1.1\r\nX: {}", "p".repeat(MAX_HEAD_BYTES));
        assert_eq!(status(&judge(long.as_bytes(), &rules())), Some(431));
        assert!(matches!(
            judge(&long.as_bytes()[..MAX_HEAD_BYTES], &rules()),
            Verdict::Partial
        ));
    }

    #[test]
    fn the_token_is_asked_for_before_anything_about_the_body() {
        let request = b"POST /events HTTP/1.1\r\nContent-Length: 9999\r\n\r\nab";
        match head(request, &rules()) {
            Head::Answer {
                reply,
                authenticated: false,
            } => {
                assert_eq!(reply.status, 401);
                assert_eq!(reply.extra_headers, auth::CHALLENGE);
                assert_eq!(reply.unread, 9997, "the rest is read before closing");
            }
            other => panic!("{other:?}"),
        }
        let wrong =
            b"POST /events HTTP/1.1\r\nAuthorization: Bearer u\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(status(&judge(wrong, &rules())), Some(401));
        let over = post("", &"x".repeat(101));
        assert!(matches!(
            head(&over, &rules()),
            Head::Answer {
                reply: Reply { status: 413, .. },
                authenticated: true
            }
        ));
    }

    #[test]
    fn methods_paths_lengths_and_encodings_are_refused_by_status() {
        let cases: [(&[u8], u16); 8] = [
            (b"GET /events HTTP/1.1\r\n\r\n", 405),
            (b"POST /other HTTP/1.1\r\n\r\n", 404),
            (
                b"POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n",
                411,
            ),
            (
                b"POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\nTransfer-Encoding: chunked\r\n\r\n",
                411,
            ),
            (
                b"POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                400,
            ),
            (b"POST /events HTTP/1.9\r\n\r\n", 400),
            (b"POST /events HTTP/1.1\r\nContent-Length : 5\r\n\r\n", 400),
            (b"POST /events HTTP/1.1\nAuthorization: Bearer t\n\n", 400),
        ];
        for (request, want) in cases {
            assert_eq!(
                status(&judge(request, &rules())),
                Some(want),
                "{}",
                String::from_utf8_lossy(request)
            );
        }
    }

    #[test]
    fn a_client_waiting_for_100_continue_is_told_to_go_on() {
        let request = post("Expect: 100-continue\r\n", "hello");
        let head_only = b"POST /events HTTP/1.1\r\nAuthorization: Bearer t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
        assert!(matches!(
            head(head_only, &rules()),
            Head::Body {
                expect_continue: true,
                ..
            }
        ));
        assert!(matches!(
            head(&request, &rules()),
            Head::Body {
                expect_continue: false,
                ..
            }
        ));
    }

    #[test]
    fn a_body_is_a_delivery_with_the_collectors_generation_or_a_400() {
        // The body names its agent (the rules' is only the default).
        for agent in Agent::ALL {
            let store = agent.store_name();
            let whole = post(
                "",
                &format!(
                    r#"{{"provider":"{store}","generation":99,"emitter_seq":3,"payload":{{"hook_event_name":"Stop"}}}}"#
                ),
            );
            let Verdict::Deliver(delivery) = judge(&whole, &rules()) else {
                panic!("{agent}: not a delivery");
            };
            assert_eq!(delivery.provider, agent);
            assert_eq!(delivery.generation, 7);
            assert_eq!(delivery.emitter_seq, Some(3));
            let written = row(&delivery, 12, Timestamp::from_millis(0)).unwrap();
            let start = format!(
                r#"{{"v":1,"provider":"{store}","generation":7,"via":"http","sequence":12,"emitter_seq":3,"#
            );
            assert!(written.starts_with(start.as_bytes()), "{agent}");
        }
        for bad in ["[1,2,3]", r#"{"no":"payload"}"#, r#"{"payload":[1]}"#] {
            let request = post("", bad);
            let verdict = judge(&request, &rules());
            let refused = match verdict {
                Verdict::Deliver(d) => row(&d, 1, Timestamp::from_millis(0)).err(),
                Verdict::Answer(reply) => Some(reply),
                Verdict::Partial => None,
            };
            assert_eq!(refused.map(|r| r.status), Some(400), "{bad}");
        }
    }
}
