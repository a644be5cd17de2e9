//! nameserver (not yet built)
