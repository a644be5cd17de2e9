//! Timer messages (RocketMQ 5.x, RIP-43): a message with `TIMER_DELIVER_MS`,
//! `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` is delivered at that time.
//!
//! The send path parks it ([`park`]) in `rmq_sys_wheel_timer` queue 0 with its due time
//! in `TIMER_OUT_MS` and its real topic and queue in `REAL_TOPIC` / `REAL_QID`, as
//! RocketMQ's `HookUtils.transformTimerMessage` does; the [`service`] takes parked
//! messages into the wheel and delivers them when due.
//!
//! As RocketMQ decides it (`HookUtils.checkIfTimerMessage`): a delay level wins over the
//! timer properties; a message already parked (its topic, or `TIMER_OUT_MS`) is not a
//! new timer message; only messages that are to be visible now are parked — a half
//! message is parked when it is committed. A due time already past is delivered at once
//! (Apache does the same), one beyond `timerMaxDelaySec` is refused.
//!
//! `TIMER_OUT_MS` says when the message is due, in a form both brokers read alike.
//! RocketMQ rounds the due time down to the slot (`timerPrecisionMs`) and fires a slot
//! one slot width after its start; an exact multiple of the width is stored one width
//! lower, so it fires exactly on time. sluice keeps that for exact multiples but stores
//! any other due time unrounded: Apache files it in the same slot (and fires it at the
//! slot's end, never early), sluice fires it at that very millisecond. So a value `v`
//! means "due at `v + precision`" when it is a multiple of the precision and "due at
//! `v`" otherwise ([`fire_ms`]).

pub mod service;

use message::properties;
use message::properties::keys::{
    REAL_QID, REAL_TOPIC, TIMER_DEL_UNIQKEY, TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS,
    TIMER_OUT_MS,
};
use remoting::ResponseCode;
use store::StoreConfig;

use crate::processor::Refusal;
use crate::properties::SendFlags;

pub use service::TimerService;

/// RocketMQ's timer topic (`TimerMessageStore.TIMER_TOPIC`).
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

/// The send path's timer settings (the `timer*` keys of the store config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerSettings {
    /// `timerWheelEnable`.
    pub enabled: bool,
    /// `timerPrecisionMs`.
    pub precision_ms: i64,
    /// `timerMaxDelaySec`.
    pub max_delay_sec: i64,
    /// `timerCongestNumEachSlot`.
    pub congest_num_each_slot: i64,
}

impl TimerSettings {
    /// The settings of a (sanitized) store config.
    #[must_use]
    pub fn of(config: &StoreConfig) -> Self {
        TimerSettings {
            enabled: config.timer_wheel_enable,
            precision_ms: i64::try_from(config.timer_precision_ms)
                .unwrap_or(1000)
                .max(1),
            max_delay_sec: i64::try_from(config.timer_max_delay_sec).unwrap_or(i64::MAX),
            congest_num_each_slot: config.timer_congest_num_each_slot,
        }
    }

    /// RocketMQ's answer to a timer message it cannot take (`WHEEL_TIMER_MSG_ILLEGAL`).
    #[must_use]
    pub fn illegal(&self) -> Refusal {
        Refusal::new(
            ResponseCode::MessageIllegal,
            format!(
                "timer message illegal, the delay time should not be bigger than the max delay {}ms; or if set del msg, the delay time should be bigger than the current time",
                self.max_delay_sec.saturating_mul(1000)
            ),
        )
    }

    /// RocketMQ's answer while the due slot is congested (`WHEEL_TIMER_FLOW_CONTROL`).
    #[must_use]
    pub fn flow_control(&self) -> Refusal {
        let n = self.congest_num_each_slot;
        Refusal::new(
            ResponseCode::SystemError,
            format!(
                "timer message is under flow control, max num limit is {} or the current value is greater than {} and less than {}, trigger random flow control",
                n.saturating_mul(2),
                n,
                n.saturating_mul(2)
            ),
        )
    }

    /// RocketMQ's answer with `timerWheelEnable=false` (`WHEEL_TIMER_NOT_ENABLE`).
    #[must_use]
    pub fn not_enabled(&self) -> Refusal {
        Refusal::new(
            ResponseCode::SystemError,
            format!(
                "accurate timer message is not enabled, timerWheelEnable is {}",
                self.enabled
            ),
        )
    }
}

/// Whether a message to `topic` with these `flags` and `delay_level` (the level it is
/// parked with, if any) asks for timed delivery.
#[must_use]
pub fn is_timer_message(topic: &str, flags: &SendFlags<'_>, delay_level: i32) -> bool {
    flags.timer && delay_level <= 0 && topic != TIMER_TOPIC
}

/// The `TIMER_OUT_MS` value of a message due at `due_ms` (see the module docs).
#[must_use]
pub fn out_ms(due_ms: i64, precision_ms: i64) -> i64 {
    if due_ms.rem_euclid(precision_ms) == 0 {
        due_ms - precision_ms
    } else {
        due_ms
    }
}

/// When a message whose `TIMER_OUT_MS` (or timer log delivery time) is `out_ms` is due.
#[must_use]
pub fn fire_ms(out_ms: i64, precision_ms: i64) -> i64 {
    if out_ms.rem_euclid(precision_ms) == 0 {
        out_ms + precision_ms
    } else {
        out_ms
    }
}

/// Where a timer message goes instead of its topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    /// [`TIMER_TOPIC`].
    pub topic: String,
    /// 0.
    pub queue_id: i32,
    /// The properties with `TIMER_OUT_MS`, `REAL_TOPIC`, `REAL_QID`.
    pub properties: String,
}

/// Parks a timer message to `topic`/`queue_id` at `now_ms`: `Ok(Some(..))` where it goes
/// instead, `Ok(None)` when it is due already (delivered as is), or RocketMQ's refusal.
/// `congested` says how many timers the due slot holds (flow control).
///
/// # Errors
/// The wheel is off, the time does not parse or is too far, a recall is for a time
/// past, or the slot is congested.
pub fn park(
    settings: &TimerSettings,
    topic: &str,
    queue_id: i32,
    props: &str,
    now_ms: i64,
    congested: impl FnOnce(i64) -> i64,
) -> Result<Option<Parked>, Refusal> {
    if !settings.enabled {
        return Err(settings.not_enabled());
    }
    let [delay_sec, delay_ms, deliver_ms, del_key] = properties::get_many(
        props,
        [
            TIMER_DELAY_SEC,
            TIMER_DELAY_MS,
            TIMER_DELIVER_MS,
            TIMER_DEL_UNIQKEY,
        ],
    );
    let parse = |v: Option<&str>| v.and_then(|v| v.parse::<i64>().ok());
    let due = if delay_sec.is_some() {
        parse(delay_sec).and_then(|s| s.checked_mul(1000)?.checked_add(now_ms))
    } else if delay_ms.is_some() {
        parse(delay_ms).and_then(|ms| ms.checked_add(now_ms))
    } else {
        parse(deliver_ms)
    };
    let Some(due) = due else {
        return Err(settings.illegal());
    };
    if due <= now_ms {
        if del_key.is_some() {
            return Err(settings.illegal());
        }
        return Ok(None);
    }
    if due - now_ms > settings.max_delay_sec.saturating_mul(1000) {
        return Err(settings.illegal());
    }
    let out = out_ms(due, settings.precision_ms);
    let limit = settings.congest_num_each_slot;
    if limit < i64::from(i32::MAX) && is_rejected(limit, congested(out)) {
        return Err(settings.flow_control());
    }
    let properties = properties::set(
        props,
        &[
            (TIMER_OUT_MS, &out.to_string()),
            (REAL_TOPIC, topic),
            (REAL_QID, &queue_id.to_string()),
        ],
    );
    Ok(Some(Parked {
        topic: TIMER_TOPIC.to_owned(),
        queue_id: 0,
        properties,
    }))
}

/// RocketMQ's `isReject`: never at or below the limit, always at twice it, at random
/// in between.
fn is_rejected(limit: i64, num: i64) -> bool {
    if num <= limit {
        return false;
    }
    if num >= limit.saturating_mul(2) {
        return true;
    }
    #[allow(clippy::cast_precision_loss, reason = "a probability")]
    let reject_share = 1000.0 * (num - limit) as f64 / (limit as f64 + 0.1);
    f64::from(rand_below_1000()) > reject_share
}

fn rand_below_1000() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_i64(crate::clock::now_ms());
    u32::try_from(h.finish() % 1000).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_600_000_123;

    fn settings() -> TimerSettings {
        TimerSettings::of(&StoreConfig::default())
    }

    fn timer(topic: &str, props: &str, level: i32) -> bool {
        is_timer_message(topic, &SendFlags::scan(props), level)
    }

    fn parked(props: &str) -> Result<Option<Parked>, Refusal> {
        park(&settings(), "T", 3, props, NOW, |_| 0)
    }

    #[test]
    fn each_timer_property_makes_a_timer_message_unless_a_level_or_the_wheel_has_it() {
        for key in [TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS] {
            let props = format!("{key}\u{1}10000\u{2}KEYS\u{1}k\u{2}");
            assert!(timer("T", &props, 0), "{key}");
            assert!(!timer("T", &props, 3), "{key} with a delay level");
            assert!(!timer(TIMER_TOPIC, &props, 0), "{key} rolled");
            let parked = format!("{props}{TIMER_OUT_MS}\u{1}1\u{2}");
            assert!(!timer("T", &parked, 0), "{key} parked");
        }
        assert!(!timer("T", "KEYS\u{1}k\u{2}", 0));
    }

    #[test]
    fn timers_park_in_the_wheel_topic_with_their_due_time_and_real_queue() {
        let p = parked("TIMER_DELAY_SEC\u{1}10\u{2}").unwrap().unwrap();
        assert_eq!((p.topic.as_str(), p.queue_id), (TIMER_TOPIC, 0));
        let [out, topic, qid] =
            properties::get_many(&p.properties, [TIMER_OUT_MS, REAL_TOPIC, REAL_QID]);
        assert_eq!(out, Some((NOW + 10_000).to_string().as_str()));
        assert_eq!((topic, qid), (Some("T"), Some("3")));
        let p = parked("TIMER_DELAY_MS\u{1}250").unwrap().unwrap();
        assert_eq!(
            properties::get(&p.properties, TIMER_OUT_MS),
            Some((NOW + 250).to_string().as_str())
        );
        // A due time on a slot boundary is stored one slot lower, as RocketMQ does.
        let p = parked("TIMER_DELIVER_MS\u{1}1764600010000")
            .unwrap()
            .unwrap();
        assert_eq!(
            properties::get(&p.properties, TIMER_OUT_MS),
            Some("1764600009000")
        );
        assert_eq!(fire_ms(1_764_600_009_000, 1000), 1_764_600_010_000);
        assert_eq!(fire_ms(NOW + 250, 1000), NOW + 250);
    }

    #[test]
    fn past_times_go_at_once_and_bad_ones_are_refused_as_rocketmq_refuses_them() {
        assert_eq!(parked("TIMER_DELAY_SEC\u{1}-5").unwrap(), None);
        assert_eq!(parked("TIMER_DELIVER_MS\u{1}1000").unwrap(), None);
        let max = 3 * 24 * 3600;
        let illegal = |props: &str| {
            let r = parked(props).unwrap_err();
            assert_eq!(r.code, ResponseCode::MessageIllegal, "{props}");
            assert!(r.remark.starts_with("timer message illegal, the delay time should not be bigger than the max delay 259200000ms"), "{}", r.remark);
        };
        illegal(&format!("TIMER_DELAY_SEC\u{1}{}", max + 1));
        illegal("TIMER_DELAY_MS\u{1}x");
        illegal("TIMER_DELAY_SEC\u{1} 5");
        illegal("TIMER_DELAY_SEC\u{1}9223372036854775807");
        illegal("TIMER_DELIVER_MS\u{1}1000\u{2}TIMER_DEL_UNIQKEY\u{1}T+u");
        assert!(
            parked(&format!("TIMER_DELAY_SEC\u{1}{max}"))
                .unwrap()
                .is_some()
        );
        let off = TimerSettings {
            enabled: false,
            ..settings()
        };
        let r = park(&off, "T", 0, "TIMER_DELAY_SEC\u{1}5", NOW, |_| 0).unwrap_err();
        assert_eq!(r.code, ResponseCode::SystemError);
        assert_eq!(
            r.remark,
            "accurate timer message is not enabled, timerWheelEnable is false"
        );
    }

    #[test]
    fn congested_slots_refuse_some_then_all() {
        let s = TimerSettings {
            congest_num_each_slot: 10,
            ..settings()
        };
        assert!(park(&s, "T", 0, "TIMER_DELAY_SEC\u{1}5", NOW, |_| 10).is_ok());
        let r = park(&s, "T", 0, "TIMER_DELAY_SEC\u{1}5", NOW, |_| 20).unwrap_err();
        assert_eq!(r.code, ResponseCode::SystemError);
        assert!(
            r.remark
                .starts_with("timer message is under flow control, max num limit is 20")
        );
    }
}
