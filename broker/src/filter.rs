//! Message filters of subscriptions: which consume-queue units a consumer gets. Pulls
//! use them to read and held pulls to decide which arrivals wake them, so they are one
//! type here, owned by neither. Today: tags (`ExpressionMessageFilter` for TAG).

use remoting::protocol::heartbeat::SubscriptionData;
use store::MessageFilter;

/// Filters consume-queue units by the subscription's tag hash codes
/// (`ExpressionMessageFilter.isMatchedByConsumeQueue` for TAG subscriptions).
#[derive(Debug, Clone)]
pub struct TagFilter {
    sub_all: bool,
    codes: Vec<i32>,
}

impl TagFilter {
    /// The filter of a subscription.
    #[must_use]
    pub fn new(sub: &SubscriptionData) -> Self {
        TagFilter {
            sub_all: sub.is_sub_all() || sub.class_filter_mode,
            codes: sub.code_set.iter().copied().collect(),
        }
    }

    /// Whether a unit with this tags code is delivered.
    #[must_use]
    pub fn matches(&self, tags_code: Option<i64>) -> bool {
        if self.sub_all {
            return true;
        }
        match tags_code {
            None => true,
            // Java compares `tagsCode.intValue()`: the low 32 bits.
            #[allow(clippy::cast_possible_truncation, reason = "Java's Long.intValue()")]
            Some(code) => self.codes.contains(&(code as i32)),
        }
    }
}

impl MessageFilter for TagFilter {
    fn matches_consume_queue(&self, tags_code: Option<i64>) -> bool {
        self.matches(tags_code)
    }
}
