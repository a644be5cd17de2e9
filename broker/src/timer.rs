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

use remoting::ResponseCode;

use crate::processor::Refusal;
use crate::properties::SendFlags;

/// RocketMQ's timer topic (`TimerMessageStore.TIMER_TOPIC`).
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";

/// Whether a message to `topic` with these `flags` and `delay_level` (the level it is
/// parked with, if any) asks for timed delivery.
#[must_use]
pub fn is_timer_message(topic: &str, flags: &SendFlags<'_>, delay_level: i32) -> bool {
    flags.timer && delay_level <= 0 && topic != TIMER_TOPIC
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
pub fn check(topic: &str, flags: &SendFlags<'_>, delay_level: i32) -> Result<(), Refusal> {
    if is_timer_message(topic, flags, delay_level) {
        return Err(not_enabled());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use message::properties::keys::{
        TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS, TIMER_OUT_MS,
    };

    fn timer(topic: &str, props: &str, level: i32) -> bool {
        is_timer_message(topic, &SendFlags::scan(props), level)
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
        let flags = SendFlags::scan("TIMER_DELAY_SEC\u{1}10\u{2}");
        let refusal = check("T", &flags, 0).unwrap_err();
        assert_eq!(refusal.code, ResponseCode::SystemError);
        assert!(refusal.remark.contains("timerWheelEnable is false"));
    }
}
