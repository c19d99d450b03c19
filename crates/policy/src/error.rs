/// Malformed policy input: a filter, an origin entry, an IP range, a key secret or a grant. These
/// are the caller's mistakes (the API answers 422, the CLI names the path); a denied request is not
/// an error but a [`crate::Decision`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// `param` names the offending query parameter or manifest path, e.g. `filter[views][_gt]`.
    #[error("{param}: {message}")]
    InvalidFilter { param: String, message: String },
    #[error("invalid origin \"{entry}\": {message}")]
    InvalidOrigin { entry: String, message: String },
    #[error("invalid IP allowlist entry \"{entry}\": expected an IPv4/IPv6 address or CIDR range")]
    InvalidIp { entry: String },
    #[error("invalid API key secret: {0}")]
    InvalidSecret(&'static str),
    #[error("{path}: {message}")]
    InvalidGrant { path: String, message: String },
}

impl PolicyError {
    pub(crate) fn grant(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidGrant {
            path: path.into(),
            message: message.into(),
        }
    }
}
