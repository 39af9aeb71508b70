//! The value readers (text and JSON values for every field type, lenient JSON, object
//! extraction) on arbitrary text: errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use signet::Signature;
use signet::adapter::value;
use signet_fuzz::Everything;

fuzz_target!(|data: &[u8]| {
    signet_fuzz::on_small_stack(|| {
        let text = String::from_utf8_lossy(data);
        let json = value::lenient_json(&text);
        let _ = value::first_json_object(&text);
        for field in Everything::signature().outputs() {
            let _ = value::parse_text(field, &text);
            if let Some(json) = &json {
                let _ = value::parse_json(field, json);
            }
        }
    });
});
