//! Wire pieces shared by SDK and relay (PROTOCOL.md).
