//! Models (in progress).
