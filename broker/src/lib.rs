//! broker (not yet built)
