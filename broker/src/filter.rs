//! Message filters of subscriptions: which consume-queue units a consumer gets. Pulls
//! use them to read and held pulls to decide which arrivals wake them, so they are one
//! type here, owned by neither: tags (`ExpressionMessageFilter` for TAG) and SQL92
//! property filters (the same class for SQL92, over [`filter::Selector`]).
//!
//! Layout:
//! - [`sql`]: a compiled SQL92 subscription evaluated on a record's or an arrival's
//!   properties.
//! - [`registry`]: the SQL92 filters of consumer groups, from heartbeats, one compile
//!   per subscription version (RocketMQ's `ConsumerFilterManager`), and the compile
//!   cache of pulls that carry their own subscription.
//! - [`index`]: a registered filter's match bits per queue offset, set at dispatch.

use remoting::protocol::heartbeat::{EXPRESSION_TYPE_TAG, SubscriptionData};
use store::MessageFilter;

pub mod index;
pub mod registry;
pub mod sql;

pub use registry::{CompileError, ConsumerFilters};
pub use sql::SqlFilter;

/// RocketMQ's `ExpressionType.isTagType`: no type, an empty one, or exactly `TAG`.
#[must_use]
pub fn is_tag_type(expression_type: Option<&str>) -> bool {
    expression_type.is_none_or(|t| t.is_empty() || t == EXPRESSION_TYPE_TAG)
}

/// Filters consume-queue units by the subscription's tag hash codes
/// (`ExpressionMessageFilter.isMatchedByConsumeQueue` for TAG subscriptions).
#[derive(Debug, Clone)]
pub struct TagFilter {
    sub_all: bool,
    codes: Vec<i32>,
}

impl TagFilter {
    /// Every message (`*`).
    #[must_use]
    pub fn all() -> Self {
        TagFilter {
            sub_all: true,
            codes: Vec::new(),
        }
    }

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

/// The filter of one pull: by tags, or by a SQL92 expression on properties.
#[derive(Debug, Clone)]
pub enum SubscriptionFilter {
    /// A TAG subscription.
    Tag(TagFilter),
    /// A SQL92 subscription.
    Sql(SqlFilter),
}

impl SubscriptionFilter {
    /// Whether a message that just arrived, with `tags_code` and (when dispatch knows
    /// them) `properties`, should wake a pull held with this filter
    /// (`PullRequestHoldService.notifyMessageArriving`: the tags code, then the SQL on
    /// the arrival's properties).
    #[must_use]
    pub fn matches_arrival(&self, tags_code: Option<i64>, properties: Option<&str>) -> bool {
        match self {
            SubscriptionFilter::Tag(t) => t.matches(tags_code),
            SubscriptionFilter::Sql(s) => properties.is_none_or(|p| s.matches_properties(p)),
        }
    }
}

impl MessageFilter for SubscriptionFilter {
    fn matches_consume_queue(&self, tags_code: Option<i64>) -> bool {
        match self {
            SubscriptionFilter::Tag(t) => t.matches(tags_code),
            SubscriptionFilter::Sql(s) => s.matches_consume_queue(tags_code),
        }
    }

    fn matches_commit_log(&self, record: &[u8]) -> bool {
        match self {
            SubscriptionFilter::Tag(_) => true,
            SubscriptionFilter::Sql(s) => s.matches_commit_log(record),
        }
    }

    fn indexed(&self, queue_offset: u64) -> Option<bool> {
        match self {
            SubscriptionFilter::Tag(_) => None,
            SubscriptionFilter::Sql(s) => s.indexed(queue_offset),
        }
    }
}
