//! Attacks (in progress).
