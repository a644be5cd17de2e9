//! tools (not yet built)
