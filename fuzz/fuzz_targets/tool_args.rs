//! Tool-argument checking on arbitrary JSON: validation and deserialization must agree — whatever
//! validates deserializes — and nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use signet::Tool;
use signet_fuzz::PlotTool;

fuzz_target!(|data: &[u8]| {
    signet_fuzz::on_small_stack(|| {
        let Ok(args) = serde_json::from_slice::<serde_json::Value>(data) else {
            return;
        };
        let tool = PlotTool;
        let valid = tool.spec().validate(&args).is_ok();
        let called = tool.call_blocking(args);
        if valid {
            assert!(called.is_ok(), "validated arguments must run: {called:?}");
        }
    });
});
