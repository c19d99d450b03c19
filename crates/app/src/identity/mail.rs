//! Outgoing mail: one-time codes. Sent over SMTP to `VELLUM_SMTP_URL` (`smtp://host:port`,
//! `smtps://…`, lettre's URL syntax) from `VELLUM_MAIL_FROM`; without a URL the mail is written to
//! the log at `info` instead, recipient and body included, as the admin contract asks for
//! development. That is the one log line that may carry a code: with SMTP configured, no code
//! reaches the log.

use std::sync::Arc;
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::Semaphore;

use crate::error::AppError;
use crate::telemetry::error_chain;

/// Mails being handed to the SMTP server at once; more wait their turn (each is small and the
/// sign-in throttle bounds how many can be asked for).
const MAX_SENDING: usize = 4;
/// How long one SMTP exchange may take.
const SMTP_TIMEOUT: Duration = Duration::from_secs(15);

/// A mail to send.
#[derive(Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
}

impl std::fmt::Debug for Mail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The body may hold a code.
        f.debug_struct("Mail")
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

/// Where mail goes.
#[derive(Clone)]
pub struct Mailer {
    transport: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Mailbox,
    sending: Arc<Semaphore>,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailer")
            .field("smtp", &self.transport.is_some())
            .field("from", &self.from.to_string())
            .finish()
    }
}

impl Mailer {
    /// A mailer for `smtp_url` (none: the log) sending as `from`.
    ///
    /// # Errors
    /// [`AppError::Invalid`] naming the setting when the URL or the sender cannot be parsed (the
    /// URL is never echoed: it may hold a password).
    pub fn new(smtp_url: Option<&str>, from: &str) -> Result<Self, AppError> {
        let from: Mailbox = from.parse().map_err(|_| {
            AppError::invalid("mail_from", "VELLUM_MAIL_FROM is not a mail address")
        })?;
        let transport = match smtp_url {
            None => None,
            Some(url) => Some(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|_| {
                        AppError::invalid("smtp_url", "VELLUM_SMTP_URL is not a valid SMTP URL")
                    })?
                    .timeout(Some(SMTP_TIMEOUT))
                    .build(),
            ),
        };
        Ok(Self {
            transport,
            from,
            sending: Arc::new(Semaphore::new(MAX_SENDING)),
        })
    }

    /// Sends `mail` (or logs it without SMTP).
    ///
    /// # Errors
    /// An unparsable recipient, or the SMTP server refusing or unreachable.
    pub async fn send(&self, mail: Mail) -> Result<(), AppError> {
        let Some(transport) = &self.transport else {
            tracing::info!(to = %mail.to, subject = %mail.subject, body = %mail.body, "mail (no VELLUM_SMTP_URL: logged instead of sent)");
            return Ok(());
        };
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|_| AppError::invalid("email", "The email must be a valid email address."))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject)
            .body(mail.body)
            .map_err(|e| AppError::Internal(Box::new(e)))?;
        let _turn = self
            .sending
            .acquire()
            .await
            .map_err(|e| AppError::Internal(Box::new(e)))?;
        transport.send(message).await.map_err(|e| {
            tracing::warn!(error = %error_chain(&e), "mail not sent");
            AppError::Internal(Box::new(e))
        })?;
        Ok(())
    }
}
