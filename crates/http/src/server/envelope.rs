//! The answers actix-http's HTTP/1 dispatcher writes by itself, before any app code runs: 408
//! when the first request's head is not received in time, 431 when the head outgrows the parser's
//! buffer, 400 when it does not parse, 500 on an impossible payload state. It writes them with
//! an empty body and offers no hook to change them, so they are rewritten on their way out, in
//! the connection's I/O: [`Enveloped`] wraps the accepted socket.
//!
//! Only the connection's first response is a candidate. The first bytes a connection writes are
//! certainly a response head; later writes may be any part of any response (a file's bytes
//! could spell `HTTP/1.1 400 Bad Request`), and telling response boundaries apart would take
//! the codec's framing. The dispatcher's own answers are nearly always first: the 408 exists
//! only for a connection's first request, and a client that sends a head too large or broken
//! does so at once. A keep-alive connection whose later request is refused by the parser still
//! gets actix's empty answer (the connection is closed right after it either way).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_codec::{AsyncRead, AsyncWrite, ReadBuf};
use serde_json::json;

/// The dispatcher's answers that are rewritten, by status code, with their messages.
/// The longest head [`rewrite`] looks at: the dispatcher's bodiless answers are under 200 bytes.
const MAX_ANSWER_HEAD: usize = 512;

const ANSWERS: [(&str, &str); 4] = [
    ("400", "The request could not be parsed."),
    ("408", "The request was not received in time."),
    ("431", "The request line or headers are too large."),
    ("500", "Server error."),
];

/// The connection's output so far.
#[derive(Debug)]
enum Output {
    /// Nothing written yet: the next write starts with the first response's head.
    First,
    /// The first response was one of the dispatcher's: these bytes replace it. `claimed` is
    /// what the dispatcher handed over (reported written once all of `bytes` are).
    Rewriting {
        bytes: Vec<u8>,
        sent: usize,
        claimed: usize,
    },
    /// Everything else: bytes pass through unchanged.
    Passing,
}

/// A connection's I/O that gives the dispatcher's empty error answers the contract's JSON body
/// (`{"message": …}`, `Content-Type: application/json`).
#[derive(Debug)]
pub struct Enveloped<T> {
    io: T,
    output: Output,
}

impl<T> Enveloped<T> {
    pub fn new(io: T) -> Self {
        Self {
            io,
            output: Output::First,
        }
    }
}

/// `head` with a JSON body, when `head` is exactly one of the dispatcher's bodiless answers
/// (a complete head with `content-length: 0` and nothing after it).
fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    // The dispatcher's answers are a status line and a few short headers; every other first
    // write (a whole response, often with its body) is passed on without being scanned.
    if head.len() > MAX_ANSWER_HEAD {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let lines = text.strip_suffix("\r\n\r\n")?;
    let mut lines = lines.split("\r\n");
    let status_line = lines.next()?;
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next()?, parts.next()?);
    if !version.starts_with("HTTP/1.") {
        return None;
    }
    let message = ANSWERS.iter().find(|(c, _)| *c == code)?.1;
    let mut headers = Vec::new();
    let mut empty = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.eq_ignore_ascii_case("content-length") {
            empty = value.trim() == "0";
        } else if name.eq_ignore_ascii_case("content-type")
            || name.eq_ignore_ascii_case("transfer-encoding")
        {
            return None;
        } else {
            headers.push(line);
        }
    }
    if !empty {
        return None;
    }
    let body = json!({ "message": message }).to_string();
    let mut out = Vec::with_capacity(head.len() + body.len() + 64);
    out.extend_from_slice(status_line.as_bytes());
    out.extend_from_slice(b"\r\n");
    for line in headers {
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"content-type: application/json\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

impl<T: AsyncRead + Unpin> AsyncRead for Enveloped<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Enveloped<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if matches!(this.output, Output::First) && !buf.is_empty() {
            this.output = match rewrite(buf) {
                Some(bytes) => Output::Rewriting {
                    bytes,
                    sent: 0,
                    claimed: buf.len(),
                },
                None => Output::Passing,
            };
        }
        let Output::Rewriting {
            bytes,
            sent,
            claimed,
        } = &mut this.output
        else {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        };
        // The dispatcher offers the same bytes again until they are reported written.
        while *sent < bytes.len() {
            let rest = bytes.get(*sent..).unwrap_or_default();
            match Pin::new(&mut this.io).poll_write(cx, rest) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *sent += n,
                Poll::Ready(Err(err)) => return Poll::Ready(Err(err)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let claimed = *claimed;
        this.output = Output::Passing;
        Poll::Ready(Ok(claimed))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dispatchers_empty_answers_get_the_envelope() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\nconnection: close\r\ndate: Thu, 26 Nov 2026 15:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(head).unwrap()).unwrap();
        let body = r#"{"message":"The request line or headers are too large."}"#;
        assert_eq!(
            out,
            format!(
                "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ndate: Thu, 26 Nov 2026 15:00:00 GMT\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
        );
        for code in [
            "400 Bad Request",
            "408 Request Timeout",
            "500 Internal Server Error",
        ] {
            let head = format!("HTTP/1.1 {code}\r\ncontent-length: 0\r\n\r\n");
            assert!(rewrite(head.as_bytes()).is_some(), "{code}");
        }
    }

    #[test]
    fn anything_else_passes_unchanged() {
        for head in [
            // The app's own answers have a body (and a type).
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 20\r\ncontent-type: application/json\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ncontent-type: text/plain\r\n\r\n",
            // Other statuses, a head followed by a body, an unfinished head, not a head.
            "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nmore",
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            "HTTP/1.1 400 Bad Request\r\n\r\n",
            "XTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
        ] {
            assert_eq!(rewrite(head.as_bytes()), None, "{head:?}");
        }
    }
}
