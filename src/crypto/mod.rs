//! Streaming age v1 and age-rt v0.2 (PROTOCOL.md §7–§8).
