//! A test SMTP server: accepts every mail on a random local port and hands it to the test.
//! Just enough of RFC 5321 for lettre: greeting, EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A received mail: the envelope recipients and the raw message.
#[derive(Debug, Clone)]
pub struct Received {
    pub to: Vec<String>,
    pub data: String,
}

/// The sink: its URL for `VELLUM_SMTP_URL`, and the mails it received.
pub struct SmtpSink {
    pub url: String,
    mails: mpsc::UnboundedReceiver<Received>,
}

impl SmtpSink {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("smtp://{}", listener.local_addr().unwrap());
        let (tx, mails) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let tx = tx.clone();
                tokio::spawn(async move {
                    let (read, mut write) = socket.into_split();
                    let mut lines = BufReader::new(read).lines();
                    let _ = write.write_all(b"220 sink ESMTP\r\n").await;
                    let mut to = Vec::new();
                    while let Ok(Some(line)) = lines.next_line().await {
                        let upper = line.to_ascii_uppercase();
                        let reply: &[u8] = if upper.starts_with("EHLO") || upper.starts_with("HELO")
                        {
                            b"250 sink\r\n"
                        } else if upper.starts_with("RCPT TO:") {
                            to.push(line[8..].trim().trim_matches(['<', '>']).to_owned());
                            b"250 OK\r\n"
                        } else if upper.starts_with("DATA") {
                            let _ = write.write_all(b"354 go ahead\r\n").await;
                            let mut data = String::new();
                            while let Ok(Some(line)) = lines.next_line().await {
                                if line == "." {
                                    break;
                                }
                                data.push_str(&line);
                                data.push('\n');
                            }
                            let _ = tx.send(Received {
                                to: std::mem::take(&mut to),
                                data,
                            });
                            b"250 queued\r\n"
                        } else if upper.starts_with("QUIT") {
                            let _ = write.write_all(b"221 bye\r\n").await;
                            return;
                        } else {
                            b"250 OK\r\n"
                        };
                        if write.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self { url, mails }
    }

    /// The next mail, waiting up to 10 s.
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(Duration::from_secs(10), self.mails.recv())
            .await
            .expect("no mail within 10 s")
            .expect("the sink stopped")
    }

    /// Whether a mail arrives within `wait`.
    pub async fn any_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.mails.recv()).await.is_ok()
    }
}

/// The 6-digit code in a mail.
pub fn code_in(mail: &Received) -> String {
    let body = mail.data.replace("=\n", "");
    let at = body.find("code is ").expect("the mail names the code") + "code is ".len();
    body[at..at + 6].to_owned()
}
