//! The timer store's on-disk layout (RocketMQ 5.x, RIP-43), so that a store moves between
//! Apache RocketMQ and sluice with its pending timer messages:
//!
//! - `timerlog/`: fixed-size files of append-only [`log_unit::TimerLogUnit`]s (52 bytes),
//!   one per timer request; a file's tail that a unit does not fit is a blank record.
//!   The units of one wheel slot form a list through `prev_pos`, newest first.
//! - `timerwheel`: one file of [`slot::Slot`]s (32 bytes), indexed by delivery time at
//!   `timerPrecisionMs`, each pointing at its first and last unit.
//! - `timercheck`: the [`checkpoint::TimerCheckpoint`] (56 bytes at the start of a page).
//!
//! The codecs are sans-io; [`timer_log`] and [`wheel`] are the mapped files. What is
//! enqueued and delivered when is the broker's timer service (`broker::timer`).

pub mod checkpoint;
pub mod log_unit;
pub mod slot;
pub mod timer_log;
pub mod wheel;
