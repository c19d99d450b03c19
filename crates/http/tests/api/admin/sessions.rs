//! Sessions: fixation, expiry, sign-out here and everywhere, replicas, forged cookies.
