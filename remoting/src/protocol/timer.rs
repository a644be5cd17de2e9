//! The timer engine's admin requests (RocketMQ 5.x): SWITCH_TIMER_ENGINE (5001) names
//! the engine in ext field `E_T` (`MessageConst.TIMER_ENGINE_TYPE`): `F` for the file
//! time wheel, `R` for the RocksDB timeline (5.4+). GET_TIMER_CHECK_POINT (60) answers
//! the 56-byte checkpoint (`store::timer::checkpoint`).

use crate::ext_header;

/// `E_T` value of the file time wheel (`TIMER_ENGINE_FILE_TIME_WHEEL`).
pub const FILE_TIME_WHEEL: &str = "F";
/// `E_T` value of the RocksDB timeline (`TIMER_ENGINE_ROCKSDB_TIMELINE`).
pub const ROCKSDB_TIMELINE: &str = "R";

ext_header! {
    /// SWITCH_TIMER_ENGINE (5001) request.
    pub struct SwitchTimerEngineRequestHeader {
        engine_type: Option<String> = "E_T",
    }
}

/// The engine's name as `mqadmin switchTimerEngine -c` prints it.
#[must_use]
pub fn engine_name(engine_type: &str) -> Option<&'static str> {
    match engine_type {
        FILE_TIME_WHEEL => Some("FILE_TIME_WHEEL"),
        ROCKSDB_TIMELINE => Some("ROCKSDB_TIMELINE"),
        _ => None,
    }
}
