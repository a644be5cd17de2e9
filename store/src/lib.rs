//! store (not yet built)
