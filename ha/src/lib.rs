//! ha (not yet built)
