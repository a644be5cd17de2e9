//! Timer messages (RocketMQ 5.x, RIP-43): a message with `TIMER_DELIVER_MS`,
//! `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` is to be delivered at that time. sluice has no
//! timer wheel yet, so it answers such a send as Apache RocketMQ does with
//! `timerWheelEnable=false`: refused (SYSTEM_ERROR, "accurate timer message is not
//! enabled, …"), never stored into its topic to be consumed at once.
//!
//! As RocketMQ decides it (`HookUtils.checkIfTimerMessage`): a delay level wins over the
//! timer properties; a message already parked for the wheel (its topic, or
//! `TIMER_OUT_MS`) is not a new timer message; and only messages that are to be visible
//! now are checked — a half message is checked when it is committed.

use message::properties;
use message::properties::keys::{TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS, TIMER_OUT_MS};
use remoting::ResponseCode;

use crate::processor::Refusal;

/// RocketMQ's timer topic (`TimerMessageStore.TIMER_TOPIC`).
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

/// Whether a message to `topic` with `props` and `delay_level` asks for timed delivery.
#[must_use]
pub fn is_timer_message(topic: &str, props: &str, delay_level: i32) -> bool {
    if delay_level > 0 || topic == TIMER_TOPIC || properties::get(props, TIMER_OUT_MS).is_some() {
        return false;
    }
    [TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS]
        .iter()
        .any(|key| properties::get(props, key).is_some())
}

/// The refusal of a timer message while the wheel is off (always, until it exists).
#[must_use]
pub fn not_enabled() -> Refusal {
    Refusal::new(
        ResponseCode::SystemError,
        "accurate timer message is not enabled, timerWheelEnable is false",
    )
}

/// [`not_enabled`] when the message asks for timed delivery.
///
/// # Errors
/// The message is a timer message.
pub fn check(topic: &str, props: &str, delay_level: i32) -> Result<(), Refusal> {
    if is_timer_message(topic, props, delay_level) {
        return Err(not_enabled());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_timer_property_makes_a_timer_message_unless_a_level_or_the_wheel_has_it() {
        for key in [TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS] {
            let props = format!("{key}\u{1}10000\u{2}KEYS\u{1}k\u{2}");
            assert!(is_timer_message("T", &props, 0), "{key}");
            assert!(
                !is_timer_message("T", &props, 3),
                "{key} with a delay level"
            );
            assert!(!is_timer_message(TIMER_TOPIC, &props, 0), "{key} rolled");
            let parked = format!("{props}{TIMER_OUT_MS}\u{1}1\u{2}");
            assert!(!is_timer_message("T", &parked, 0), "{key} parked");
        }
        assert!(!is_timer_message("T", "KEYS\u{1}k\u{2}", 0));
        let refusal = check("T", "TIMER_DELAY_SEC\u{1}10\u{2}", 0).unwrap_err();
        assert_eq!(refusal.code, ResponseCode::SystemError);
        assert!(refusal.remark.contains("timerWheelEnable is false"));
    }
}
