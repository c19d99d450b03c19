//! The admin app's request and response shapes in the OpenAPI description (tag group "admin").
//! Like the public ones they are checked by the black-box suite, which validates every admin
//! response it receives against the description, and by schemathesis signed in.

use serde::Serialize;
use utoipa::ToSchema;

use super::ErrorBody;

/// `POST /login`.
#[derive(Debug, ToSchema, Serialize)]
pub struct PasswordSignIn {
    #[schema(max_length = 254)]
    pub email: String,
    #[schema(max_length = 1024)]
    pub password: String,
}

/// `POST /login/code`.
#[derive(Debug, ToSchema, Serialize)]
pub struct CodeRequest {
    #[schema(max_length = 254)]
    pub email: String,
}

/// `POST /login/code/verify`.
#[derive(Debug, ToSchema, Serialize)]
pub struct CodeSignIn {
    #[schema(max_length = 254)]
    pub email: String,
    /// The 6 digits mailed.
    #[schema(max_length = 16)]
    pub code: String,
}

/// The signed-in account (`GET /account`, every sign-in).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Account {
    pub id: i64,
    pub name: String,
    #[schema(required = true)]
    pub email: Option<String>,
    #[schema(required = true, format = DateTime)]
    pub email_verified_at: Option<String>,
    /// The names of the roles held directly and through groups.
    pub roles: Vec<String>,
    /// The admin permissions those roles give (every one for `super-admin`).
    pub permissions: Vec<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccountEnvelope {
    pub data: Account,
}

/// The sign-in methods the server offers (`GET /login`).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SignInMethods {
    pub data: SignInMethodList,
}

/// `password`, `code` (a mailed one-time code) and `passkey` (when passkeys work here).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SignInMethodList {
    pub methods: Vec<String>,
}

/// A message without data (`202` of `POST /login/code`).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub message: String,
}

/// One session of the account.
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Whether this is the session of the request.
    pub current: bool,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime)]
    pub last_seen_at: String,
    #[schema(format = DateTime)]
    pub expires_at: String,
    #[schema(required = true)]
    pub ip: Option<String>,
    #[schema(required = true)]
    pub user_agent: Option<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SessionList {
    pub data: Vec<Session>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RevokedCount {
    /// How many other sessions ended.
    pub revoked: u64,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Revoked {
    pub data: RevokedCount,
}

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "Too many attempts; retry after `Retry-After` seconds.",
    headers(("Retry-After" = u64, description = "Seconds to wait"))
)]
pub struct TooManyRequests(pub ErrorBody);

#[derive(Debug, utoipa::ToResponse)]
#[response(
    description = "Forbidden: the permission is missing, or a cross-site request with a session was refused."
)]
pub struct CrossSite(pub ErrorBody);

/// A passkey of the account (never its key material).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyItem {
    pub id: i64,
    pub name: String,
    #[schema(format = DateTime)]
    pub created_at: String,
    #[schema(format = DateTime, required = true)]
    pub last_used_at: Option<String>,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyEnvelope {
    pub data: PasskeyItem,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyList {
    pub data: Vec<PasskeyItem>,
}

/// A started WebAuthn ceremony: its id (sent back with the browser's answer) and the options
/// for `navigator.credentials.create` or `.get` (`{"publicKey": …}`, WebAuthn's JSON form).
#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Ceremony {
    pub ceremony: String,
    #[schema(value_type = Object)]
    pub options: serde_json::Value,
}

#[derive(Debug, ToSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CeremonyEnvelope {
    pub data: Ceremony,
}

/// `POST /account/passkeys`: the ceremony and the browser's new credential
/// (`PublicKeyCredential.toJSON()`).
#[derive(Debug, ToSchema, Serialize)]
pub struct PasskeyRegistration {
    #[schema(max_length = 64)]
    pub ceremony: String,
    #[schema(value_type = Object)]
    pub credential: serde_json::Value,
    #[schema(max_length = 100)]
    pub name: Option<String>,
}

/// `POST /login/passkey`: the ceremony and the browser's assertion
/// (`PublicKeyCredential.toJSON()`).
#[derive(Debug, ToSchema, Serialize)]
pub struct PasskeySignIn {
    #[schema(max_length = 64)]
    pub ceremony: String,
    #[schema(value_type = Object)]
    pub credential: serde_json::Value,
}

/// `POST /broadcasting/auth`'s body (form, as pusher-js sends it, or JSON).
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ChannelAuthRequest {
    /// The socket's id from `pusher:connection_established` (`\\d+\\.\\d+`).
    #[schema(example = "1234.5678")]
    pub socket_id: String,
    /// `private-App.Models.User.{id}` or `presence-chat.{chat_id}`.
    #[schema(example = "private-App.Models.User.1")]
    pub channel_name: String,
}

/// A signed channel subscription.
#[derive(Debug, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct ChannelAuth {
    /// `key:hex(HMAC-SHA256(secret, socket_id:channel[:channel_data]))`.
    pub auth: String,
    /// Presence channels only: `{"user_id", "user_info": {"id", "name"}}` as a JSON string.
    pub channel_data: Option<String>,
}
