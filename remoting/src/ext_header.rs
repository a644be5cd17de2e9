//! Typed custom headers over `extFields`, declared with [`ext_header!`](crate::ext_header).
//!
//! Every value is a string on the wire. A field of type `T` is required (missing ⇒
//! [`ExtFieldError::Missing`], like Java's `@CFNotNull`), a field of type `Option<T>`
//! is optional. Booleans parse as Java's `Boolean.parseBoolean` does: `true` in any
//! case is true, anything else false.

use crate::error::ExtFieldError;
use crate::header::ExtFields;

/// A type that can be a field of a custom header.
pub trait ExtField: Sized {
    /// The field named `name` from its wire text (`None` when absent).
    ///
    /// # Errors
    /// Missing (for required fields) or unparsable.
    fn from_text(text: Option<&str>, name: &'static str) -> Result<Self, ExtFieldError>;

    /// Reads the field named `name`.
    ///
    /// # Errors
    /// Missing (for required fields) or unparsable.
    fn read(ext: &ExtFields, name: &'static str) -> Result<Self, ExtFieldError> {
        Self::from_text(ext.get(name), name)
    }

    /// Writes the field (nothing for `None`).
    fn write(&self, name: &'static str, ext: &mut ExtFields);
}

/// A scalar that travels as text.
pub trait ExtScalar: Sized {
    /// Parses the wire text.
    fn parse_ext(text: &str) -> Option<Self>;
    /// Formats for the wire.
    fn format_ext(&self) -> String;
}

impl ExtScalar for String {
    fn parse_ext(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn format_ext(&self) -> String {
        self.clone()
    }
}

impl ExtScalar for bool {
    fn parse_ext(text: &str) -> Option<Self> {
        Some(text.eq_ignore_ascii_case("true"))
    }
    fn format_ext(&self) -> String {
        self.to_string()
    }
}

macro_rules! numeric_scalar {
    ($($t:ty),*) => {$(
        impl ExtScalar for $t {
            fn parse_ext(text: &str) -> Option<Self> {
                text.trim().parse().ok()
            }
            fn format_ext(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
numeric_scalar!(i32, i64, f64);

macro_rules! ext_field {
    ($($t:ty),*) => {$(
        impl ExtField for $t {
            fn from_text(text: Option<&str>, name: &'static str) -> Result<Self, ExtFieldError> {
                let text = text.ok_or(ExtFieldError::Missing(name))?;
                <$t as ExtScalar>::parse_ext(text).ok_or_else(|| ExtFieldError::Invalid {
                    field: name,
                    value: text.to_owned(),
                })
            }
            fn write(&self, name: &'static str, ext: &mut ExtFields) {
                ext.insert(name, self.format_ext());
            }
        }

        impl ExtField for Option<$t> {
            fn from_text(text: Option<&str>, name: &'static str) -> Result<Self, ExtFieldError> {
                match text {
                    None => Ok(None),
                    Some(text) => <$t as ExtScalar>::parse_ext(text).map(Some).ok_or_else(|| {
                        ExtFieldError::Invalid {
                            field: name,
                            value: text.to_owned(),
                        }
                    }),
                }
            }
            fn write(&self, name: &'static str, ext: &mut ExtFields) {
                if let Some(v) = self {
                    ext.insert(name, v.format_ext());
                }
            }
        }
    )*};
}
ext_field!(String, bool, i32, i64, f64);
pub(crate) use ext_field;

/// Declares a custom header struct and its [`CommandHeader`](crate::CommandHeader) impl.
///
/// ```
/// remoting::ext_header! {
///     /// GET_ROUTEINFO_BY_TOPIC request.
///     pub struct Example {
///         /// Topic name.
///         topic: String = "topic",
///         /// Optional flag.
///         accept_standard_json_only: Option<bool> = "acceptStandardJsonOnly",
///     }
/// }
/// ```
#[macro_export]
macro_rules! ext_header {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* $field:ident : $ty:ty = $wire:literal),* $(,)?
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)*
        }

        impl $crate::CommandHeader for $name {
            fn write_to(&self, ext: &mut $crate::ExtFields) {
                $($crate::ext_header::ExtField::write(&self.$field, $wire, ext);)*
                let _ = ext;
            }

            fn read_from(ext: &$crate::ExtFields) -> ::std::result::Result<Self, $crate::ExtFieldError> {
                // One pass over the fields (keys are unique in ExtFields), not a lookup per
                // field: a send header has 14 of them.
                $(let mut $field: ::std::option::Option<&str> = None;)*
                for (key, value) in ext.iter() {
                    match key {
                        $($wire => $field = Some(value),)*
                        _ => {}
                    }
                }
                let _ = ext;
                Ok($name {
                    $($field: $crate::ext_header::ExtField::from_text($field, $wire)?,)*
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::{CommandHeader, ExtFieldError, ExtFields};

    crate::ext_header! {
        /// Test header.
        pub struct Sample {
            topic: String = "topic",
            queue_id: i32 = "queueId",
            offset: Option<i64> = "offset",
            order: Option<bool> = "order",
        }
    }

    #[test]
    fn round_trip_and_errors() {
        let h = Sample {
            topic: "T".into(),
            queue_id: 3,
            offset: None,
            order: Some(true),
        };
        let mut ext = ExtFields::new();
        h.write_to(&mut ext);
        assert_eq!(ext.get("offset"), None);
        assert_eq!(ext.get("queueId"), Some("3"));
        assert_eq!(Sample::read_from(&ext).unwrap(), h);

        ext.insert("order", "TRUE");
        assert_eq!(Sample::read_from(&ext).unwrap().order, Some(true));
        ext.insert("queueId", "x");
        assert_eq!(
            Sample::read_from(&ext),
            Err(ExtFieldError::Invalid {
                field: "queueId",
                value: "x".into()
            })
        );
        ext.remove("topic");
        assert_eq!(
            Sample::read_from(&ext),
            Err(ExtFieldError::Missing("topic"))
        );
        assert_eq!(
            ExtFieldError::Missing("topic").to_string(),
            "the custom field <topic> is null"
        );
    }
}
