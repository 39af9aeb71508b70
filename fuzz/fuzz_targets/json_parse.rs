//! The JsonAdapter's reply parser on arbitrary text: an error is fine, a panic is not; a parsed reply
//! always has every output field, in signature order.
#![no_main]

use libfuzzer_sys::fuzz_target;
use signet::Signature;
use signet::adapter::{Adapter, JsonAdapter};
use signet_fuzz::Everything;

fuzz_target!(|data: &[u8]| {
    signet_fuzz::on_small_stack(|| {
        let text = String::from_utf8_lossy(data);
        let signature = Everything::signature();
        if let Ok(outputs) = JsonAdapter::new().parse(signature, &text) {
            let names: Vec<&str> = outputs.keys().map(String::as_str).collect();
            let expected: Vec<&str> = signature.outputs().iter().map(|f| f.name()).collect();
            assert_eq!(names, expected);
        }
    });
});
