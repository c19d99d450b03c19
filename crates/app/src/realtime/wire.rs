//! The WebSocket frames a socket's queue holds (RFC 6455, server to client: final, unmasked).
//!
//! A broadcast is framed here once and the same bytes go to every subscriber: the HTTP layer
//! writes queued frames as they are, so delivering to 5,000 sockets costs no encoding per
//! socket and no channel hop through a WebSocket session. Written here rather than taken from
//! actix-http's codec: the application layer has no web framework, and a server's frame is a
//! header of 2 to 10 bytes before the payload.

use bytes::{BufMut as _, Bytes, BytesMut};

const FIN: u8 = 0x80;
const TEXT: u8 = 0x1;
const CLOSE: u8 = 0x8;
const PONG: u8 = 0xA;

/// The longest payload of a control frame (close, pong).
const CONTROL_MAX: usize = 125;

/// A text frame carrying `payload` (the protocol's frames are JSON, hence UTF-8).
#[must_use]
pub fn text(payload: &[u8]) -> Bytes {
    frame(TEXT, payload)
}

/// A pong answering a ping with `payload` (cut to a control frame's 125 bytes).
#[must_use]
pub fn pong(payload: &[u8]) -> Bytes {
    frame(PONG, payload.get(..CONTROL_MAX).unwrap_or(payload))
}

/// A close frame with `code` and `reason` (the reason cut to fit, at a character boundary).
#[must_use]
pub fn close(code: u16, reason: &str) -> Bytes {
    let mut end = reason.len().min(CONTROL_MAX - 2);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut payload = Vec::with_capacity(2 + end);
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(reason.as_bytes().get(..end).unwrap_or_default());
    frame(CLOSE, &payload)
}

fn frame(opcode: u8, payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(payload.len() + 10);
    out.put_u8(FIN | opcode);
    match payload.len() {
        len @ 0..=125 => out.put_u8(u8::try_from(len).unwrap_or(125)),
        len @ 126..=0xFFFF => {
            out.put_u8(126);
            out.put_u16(u16::try_from(len).unwrap_or(u16::MAX));
        }
        len => {
            out.put_u8(127);
            out.put_u64(len as u64);
        }
    }
    out.put_slice(payload);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (opcode, payload) of one frame, checking it is final and unmasked.
    fn parse(frame: &[u8]) -> (u8, Vec<u8>) {
        assert_eq!(frame[0] & 0xF0, FIN, "final, no extension bits");
        assert_eq!(frame[1] & 0x80, 0, "server frames are unmasked");
        let (len, start) = match frame[1] & 0x7F {
            126 => (usize::from(u16::from_be_bytes([frame[2], frame[3]])), 4),
            127 => (
                usize::try_from(u64::from_be_bytes(frame[2..10].try_into().unwrap())).unwrap(),
                10,
            ),
            len => (usize::from(len), 2),
        };
        assert_eq!(
            frame.len(),
            start + len,
            "the length covers the payload exactly"
        );
        (frame[0] & 0x0F, frame[start..].to_vec())
    }

    #[test]
    fn text_frames_use_the_shortest_length_encoding() {
        for len in [0, 1, 125, 126, 0xFFFF, 0x1_0000, 70_000] {
            let payload = vec![b'x'; len];
            let frame = text(&payload);
            let header = match len {
                0..=125 => 2,
                126..=0xFFFF => 4,
                _ => 10,
            };
            assert_eq!(frame.len(), header + len, "payload of {len} bytes");
            assert_eq!(parse(&frame), (TEXT, payload));
        }
    }

    #[test]
    fn control_frames_fit_125_bytes() {
        assert_eq!(parse(&pong(b"abc")), (PONG, b"abc".to_vec()));
        assert_eq!(parse(&pong(&[7; 300])).1.len(), 125);

        let (opcode, payload) = parse(&close(4200, "Reconnect now."));
        assert_eq!(opcode, CLOSE);
        assert_eq!(payload[..2], 4200u16.to_be_bytes());
        assert_eq!(&payload[2..], b"Reconnect now.");

        // 200 two-byte characters: cut to 123 bytes would split one, so 122.
        let (_, payload) = parse(&close(1000, &"é".repeat(200)));
        assert_eq!(payload.len(), 2 + 122);
        assert!(std::str::from_utf8(&payload[2..]).is_ok());
    }
}
